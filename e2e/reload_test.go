package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// reloadInterval is the snapshot interval of the reload test; a gap of more
// than reloadMaxGap between two samples of a series means a snapshot
// missed it.
const (
	reloadInterval = time.Second
	reloadMaxGap   = 1500 * time.Millisecond
)

// The binary reloads its configuration on SIGHUP and POST /-/reload,
// between snapshots: a bad configuration is refused with its error and the
// old one keeps pushing; a good one that adds configmaps makes their series
// appear while the pods' flow on without a gap; one that changes the
// endpoint's URL sends the next snapshots to the new receiver, and the old
// endpoint's queue, held back by its receiver being down, is still
// delivered to the old receiver once it is back.
func TestReloadBinary(t *testing.T) {
	needEnv(t)
	clock := startWallClock()
	ctx := context.Background()
	client, err := env.cp.Client()
	require.NoError(t, err)
	ns := "reload"
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, "reload")
	require.NoError(t, err)
	defer cleanupNodes(t, client, sc.Nodes)
	for _, name := range []string{"settings", "features"} {
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Data:       map[string]string{"key": "value"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	old, fresh := newRecorder(t, nil), newRecorder(t, nil)
	config := func(resources []string, url string) string {
		cfg := newConfig(url)
		cfg.Resources, cfg.Namespaces = resources, []string{ns}
		cfg.SnapshotInterval = reloadInterval
		cfg.ListenAddress = ptr.To(listenPlaceholder)
		cfg.ShutdownTimeout = 20 * time.Second
		cfg.ExternalLabels = map[string]string{"run": "reload"}
		cfg.endpoint().Name = "main"
		cfg.endpoint().QueueConfig = queueConfig{BatchSendDeadline: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
		return cfg.yamlText(t)
	}
	pods := []string{"pods"}
	p := startAgent(t, agentOptions{binary: true, configText: config(pods, old.URL("/old")), waitReady: true})
	podInfo := []string{`__name__="kube_pod_info"`, fmt.Sprintf("pod=%q", sc.Pods["running"])}
	eventually(t, 20*time.Second, "snapshots at the receiver", old.needTimestamps(3, "/old", podInfo...))

	t.Run("a bad configuration is refused; the old one keeps pushing", func(t *testing.T) {
		p.writeConfig(t, strings.Replace(config(pods, old.URL("/old")), "snapshot_interval: 1s", "snapshot_interval: 0s", 1))
		n := len(old.timestamps("/old", podInfo...))
		p.signal(t, syscall.SIGHUP)
		want := "config.yaml:4: snapshot_interval: must be at least 1s, not 0s"
		eventually(t, 10*time.Second, "the refusal in the log", func() error {
			if !strings.Contains(p.logs.String(), want) {
				return fmt.Errorf("no %q in the log", want)
			}
			return nil
		})
		require.Equal(t, 0.0, p.metrics(t).single(t, "kube_state_push_config_last_reload_successful"))
		eventually(t, 10*time.Second, "snapshots after the refusal", old.needTimestamps(n+2, "/old", podInfo...))

		code, body := p.reload(t)
		require.Equal(t, http.StatusBadRequest, code, body)
		require.Contains(t, body, want)
	})

	t.Run("configmaps added; pods flow on without a gap", func(t *testing.T) {
		p.writeConfig(t, config([]string{"pods", "configmaps"}, old.URL("/old")))
		code, body := p.reload(t)
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, 1.0, p.metrics(t).single(t, "kube_state_push_config_last_reload_successful"))
		eventually(t, 20*time.Second, "the configmaps' series", func() error {
			got := old.series("/old", `__name__="kube_configmap_info"`, `run="reload"`)
			if len(got) != 2 {
				return fmt.Errorf("kube_configmap_info: %v", got)
			}
			return nil
		})
		n := len(old.timestamps("/old", podInfo...))
		eventually(t, 10*time.Second, "two more snapshots", old.needTimestamps(n+2, "/old", podInfo...))
		gap, at := maxGap(old.timestamps("/old", podInfo...))
		t.Logf("longest gap between two samples of kube_pod_info across both reloads: %dms (at %d)", gap, at)
		clock.requireGap(t, time.Duration(gap)*time.Millisecond, reloadMaxGap)
	})

	t.Run("a new URL; the old queue still reaches the old receiver", func(t *testing.T) {
		// The old receiver goes down: snapshots wait in the queue.
		old.down.Store(true)
		eventually(t, 10*time.Second, "requests refused by the old receiver", func() error {
			if n := old.refusedCount(); n < 3 {
				return fmt.Errorf("%d refused", n)
			}
			return nil
		})
		// The previous reload restarted the endpoint (for the new families'
		// metadata), which logged a delivered queue once.
		const delivered = "endpoint stopped by a reload; its queue was delivered"
		n := strings.Count(p.logs.String(), delivered)
		p.writeConfig(t, config([]string{"pods", "configmaps"}, fresh.URL("/fresh")))
		code, body := p.reload(t)
		require.Equal(t, http.StatusOK, code, body)
		eventually(t, 10*time.Second, "snapshots at the new receiver", fresh.needTimestamps(2, "/fresh", podInfo...))
		require.Equal(t, n, strings.Count(p.logs.String(), delivered), "the old receiver is still down")

		old.down.Store(false)
		eventually(t, 20*time.Second, "the old endpoint's queue delivered", func() error {
			if strings.Count(p.logs.String(), delivered) == n {
				return fmt.Errorf("not yet")
			}
			return nil
		})
		before, after := old.timestamps("/old", podInfo...), fresh.timestamps("/fresh", podInfo...)
		require.Less(t, before[len(before)-1], after[0], "snapshots up to the reload went to the old receiver, later ones to the new")
		gap, at := maxGap(append(before, after...))
		t.Logf("longest gap between two samples of kube_pod_info over both receivers: %dms (at %d)", gap, at)
		clock.requireGap(t, time.Duration(gap)*time.Millisecond, reloadMaxGap, "every snapshot reached one of them")
		require.Zero(t, p.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": "main"}), "dropped by main")
	})

	require.NoError(t, p.stop(), "exit status 0: nothing dropped; log:\n%s", p.logs)
}
