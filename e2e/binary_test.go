package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// built is the kube-state-push binary, built once for every test that
// runs it (linking it takes tens of seconds on a busy machine).
var built struct {
	once sync.Once
	bin  string
	err  error
}

// buildAgent builds the kube-state-push binary into the e2e folder, once;
// without one (the real parts are not built), into the test's own folder.
func buildAgent(t *testing.T) string {
	t.Helper()
	build := func(dir string) (string, error) {
		bin := filepath.Join(dir, "kube-state-push")
		out, err := exec.Command("go", "build", "-o", bin, "../cmd/kube-state-push").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("building the agent: %w: %s", err, out)
		}
		return bin, nil
	}
	if env.dir == "" {
		bin, err := build(t.TempDir())
		require.NoError(t, err)
		return bin
	}
	built.once.Do(func() { built.bin, built.err = build(env.dir) })
	require.NoError(t, built.err)
	return built.bin
}

// The binary: a bad config exits 1 naming the file, line and key; SIGTERM
// stops watching, takes a final snapshot, flushes, and exits 0.
func TestBinaryLifecycle(t *testing.T) {
	needEnv(t)
	bin := buildAgent(t)
	dir := t.TempDir()

	t.Run("bad config", func(t *testing.T) {
		path := filepath.Join(dir, "bad.yaml")
		require.NoError(t, os.WriteFile(path, []byte("remote_write:\n  - url: http://127.0.0.1:1/api/v1/write\n    queue_config:\n      max_shards: 0\n"), 0o600))
		out, err := exec.Command(bin, "--config.file="+path).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 1, ee.ExitCode())
		require.Contains(t, string(out), "bad.yaml:4: remote_write[0].queue_config.max_shards: must be at least 1, not 0")
	})

	t.Run("check-config", func(t *testing.T) {
		good := filepath.Join(dir, "good.yaml")
		require.NoError(t, os.WriteFile(good, []byte("resources: [nodes]\nremote_write:\n  - url: http://127.0.0.1:1/api/v1/write\n    basic_auth: {username: agent, password: pa55word-value}\n"), 0o600))
		out, err := exec.Command(bin, "check-config", good).CombinedOutput()
		require.NoError(t, err, "exit 0; output:\n%s", out)
		require.Contains(t, string(out), "snapshot_interval: 30s", "the effective config, defaults included")
		require.Contains(t, string(out), "password: <secret>")
		require.NotContains(t, string(out), "pa55word-value")

		bad := filepath.Join(dir, "bad-check.yaml")
		require.NoError(t, os.WriteFile(bad, []byte("remote_write:\n  - url: ftp://127.0.0.1/\n"), 0o600))
		out, err = exec.Command(bin, "check-config", bad).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 1, ee.ExitCode())
		require.Contains(t, string(out), "bad-check.yaml:2: remote_write[0].url")
	})

	t.Run("SIGTERM flushes and exits 0", func(t *testing.T) {
		client, err := env.cp.Client()
		require.NoError(t, err)
		sc, err := testenv.CreateSampleCluster(t.Context(), client, "binary", "binary")
		require.NoError(t, err)
		defer cleanupNodes(t, client, sc.Nodes)
		cfg := newConfig(env.prom.WriteURL())
		cfg.Resources = []string{"nodes"}
		cfg.SnapshotInterval = time.Hour
		cfg.ExternalLabels = map[string]string{"run": "binary-test"}
		cfg.RemoteWrite[0] = &remoteWrite{URL: env.prom.WriteURL()}
		p := startAgent(t, agentOptions{binary: true, config: cfg})
		eventually(t, 30*time.Second, "/readyz", func() error {
			return httpStatus(p.url("/readyz"), 200)
		})
		// With a 1h interval, only the final snapshot at SIGTERM can push.
		err = p.stop()
		require.True(t, p.exited())
		require.NoError(t, err, "exit status 0 after SIGTERM")
		log := p.logs.String()
		require.Contains(t, log, "final snapshot queued")
		require.Contains(t, log, "msg=stopped")
		require.Contains(t, log, "component=client-go", "klog output goes through the same handler")
		res, err := env.prom.Query(t.Context(), `count(kube_node_info{run="binary-test"})`)
		require.NoError(t, err)
		require.Len(t, res, 1, "the final snapshot reached Prometheus; log:\n%s", log)
		require.Equal(t, float64(len(sc.Nodes)), res[0].Value)
		require.True(t, strings.Contains(log, "level=DEBUG"), "--log.level=debug applies")
	})
}
