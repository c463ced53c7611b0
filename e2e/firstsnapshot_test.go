package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// TestFirstSnapshotOnceListed starts an agent whose snapshot_interval is a
// minute: its first snapshot must reach the receiver as soon as the initial
// lists are in, not a minute after start, holding every namespace the API
// server lists; the next one comes an interval later.
func TestFirstSnapshotOnceListed(t *testing.T) {
	needEnv(t)
	capture := testenv.NewCapture()
	t.Cleanup(capture.Close) // after the agent's final flush
	// Namespaces listed before the start: other tests may add some later.
	client, err := env.cp.Client()
	require.NoError(t, err)
	nss, err := client.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, nss.Items)
	cfg := captureConfig(capture.URL())
	cfg.SnapshotInterval = time.Minute
	start := time.Now()
	startAgent(t, agentOptions{config: cfg})

	var first int64
	eventually(t, 20*time.Second, "a first snapshot well before the first interval", func() error {
		ts := capture.Timestamps()
		if len(ts) == 0 {
			return errors.New("no snapshot yet")
		}
		first = ts[0]
		return nil
	})
	took := time.UnixMilli(first).Sub(start)
	t.Logf("first snapshot taken %s after start", took)
	require.Less(t, took, 20*time.Second, "taken once the lists were in")

	got := map[string]bool{}
	for key, v := range capture.Series(first) {
		if strings.HasPrefix(key, "kube_namespace_status_phase{") && strings.Contains(key, `phase="Active"`) && v == 1 {
			got[key[strings.Index(key, `namespace="`):]] = true
		}
	}
	after, err := client.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	still := map[string]bool{}
	for _, ns := range after.Items {
		still[ns.Name] = ns.DeletionTimestamp == nil
	}
	for _, ns := range nss.Items {
		if ns.DeletionTimestamp != nil || !still[ns.Name] {
			continue // a namespace other tests were deleting
		}
		found := false
		for k := range got {
			found = found || strings.HasPrefix(k, `namespace="`+ns.Name+`"`)
		}
		require.True(t, found, "the first snapshot holds namespace %s, listed before it", ns.Name)
	}
	// No second snapshot before the interval is up.
	time.Sleep(3 * time.Second)
	require.Len(t, capture.Timestamps(), 1, "one snapshot until the interval is up")
}
