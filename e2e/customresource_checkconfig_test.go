package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kube-state-push check-config validates custom_resource_state: a good
// document, inline or in a file, prints back; a bad one exits 1 with the
// file, line and key of the problem, in the configuration or in the
// document's file.
func TestCustomResourceCheckConfig(t *testing.T) {
	bin := buildAgent(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	const rw = "remote_write: [{url: http://127.0.0.1:9/api/v1/write}]\n"
	write("crs.yaml", crsDocument)
	good := write("good.yaml", rw+"custom_resource_state: crs.yaml\n")
	out, err := exec.Command(bin, "check-config", good).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "custom_resource_state: crs.yaml\n")

	// resources: [] watches custom resources only, and says so.
	only := write("only.yaml", rw+"resources: []\ncustom_resource_state: crs.yaml\n")
	out, err = exec.Command(bin, "check-config", only).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "# resources: none (custom resources only)\nresources: []\n")
	out, err = exec.Command(bin, "check-config", good).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "# resources: the 32 defaults\nresources:\n")
	none := write("none.yaml", rw+"resources: []\n")
	out, err = exec.Command(bin, "check-config", none).CombinedOutput()
	require.Error(t, err)
	require.Equal(t, none+":2: resources: is empty and there is no custom_resource_state: nothing to watch (leave resources out for the defaults)\n", string(out))

	inline := write("inline.yaml", rw+"custom_resource_state:\n"+indent(crsDocument, "  "))
	out, err = exec.Command(bin, "check-config", inline).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "- name: condition_status\n")

	write("bad-crs.yaml", strings.Replace(crsDocument, `labelName: phase, list`, `labelNam: phase, list`, 1))
	bad := write("bad.yaml", rw+"custom_resource_state: bad-crs.yaml\n")
	out, err = exec.Command(bin, "check-config", bad).CombinedOutput()
	require.Error(t, err)
	require.Equal(t, bad+":2: custom_resource_state: bad-crs.yaml:54: spec.resources[0].metrics[13].each.stateSet.labelNam: unknown key\n"+
		bad+":2: custom_resource_state: bad-crs.yaml:54: spec.resources[0].metrics[13].each.stateSet.labelName: is required\n", string(out))

	badInline := write("bad-inline.yaml", rw+"custom_resource_state:\n"+indent(strings.Replace(crsDocument, `"[type=Ready]"`, `"[Ready]"`, 1), "  "))
	out, err = exec.Command(bin, "check-config", badInline).CombinedOutput()
	require.Error(t, err)
	require.Equal(t, badInline+":35: custom_resource_state.spec.resources[0].metrics[6].each.gauge.path: invalid list lookup: [Ready]\n", string(out))
}
