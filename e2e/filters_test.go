package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The binary refuses bad filter settings, naming the file, line and key.
func TestBinaryRejectsBadFilters(t *testing.T) {
	bin := buildAgent(t)
	cases := map[string]struct{ config, want string }{
		"bad regex": {
			config: "resources: [pods]\nmetric_denylist:\n  - kube_pod_info\n  - \"kube_pod_(status\"\nremote_write:\n  - url: http://127.0.0.1:1/api/v1/write\n",
			want:   `filters.yaml:4: metric_denylist[1]: invalid regular expression "kube_pod_(status"`,
		},
		"both lists": {
			config: "metric_allowlist: [kube_pod_info]\nmetric_denylist: [kube_pod_labels]\nremote_write:\n  - url: http://127.0.0.1:1/api/v1/write\n",
			want:   `filters.yaml:2: metric_denylist: metric_allowlist and metric_denylist are mutually exclusive`,
		},
		"allowlist of an unknown resource": {
			config: "metric_labels_allowlist:\n  gadgets: [app]\nremote_write:\n  - url: http://127.0.0.1:1/api/v1/write\n",
			want:   `filters.yaml:2: metric_labels_allowlist.gadgets: unknown resource "gadgets"`,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "filters.yaml")
			require.NoError(t, os.WriteFile(path, []byte(c.config), 0o600))
			out, err := exec.Command(bin, "--config.file="+path).CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, 1, ee.ExitCode())
			require.Contains(t, string(out), c.want)
		})
	}
}
