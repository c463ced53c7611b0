package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// The API server goes away while objects change, and comes back with a
// fresh watch cache and etcd compacted past what the agent last saw: the
// agent's watch resumes into 410 Gone ("too old resource version"), its
// reflector relists, the pods deleted meanwhile get staleness markers (gone
// from instant queries at once), the pods created meanwhile appear, and a
// pod deleted and created again under the same name has one series, not
// two.
//
// The changes go through a second kube-apiserver on the same etcd, started
// with --etcd-compaction-interval=1s, while the agent's API server is down;
// the test waits until etcd no longer serves the revision after the last one
// the agent could have seen, so that no path (watch cache or etcd) can
// replay the events.
func TestAPIServerRestartRelists(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp, err := testenv.StartControlPlane(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(cp.Stop)
	client, err := cp.Client()
	require.NoError(t, err)
	const ns = "apirestart"
	uids := createPods(ctx, t, client, ns, "keep", "gone", "reborn")

	// client-go's reflectors log to the logger in Run's context; V(4)
	// includes "Watch closed" with the 410.
	logs := &syncBuffer{}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(4), textlogger.Output(logs)))
	cfg := newConfig(env.prom.WriteURL())
	cfg.Kubeconfig = cp.Kubeconfig
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	cfg.ShutdownTimeout = 10 * time.Second
	cfg.ExternalLabels = map[string]string{"cluster": "apirestart"}
	cfg.endpoint().Name = "prometheus"
	cfg.endpoint().QueueConfig.MaxBackoff = 200 * time.Millisecond
	a := startAgent(t, agentOptions{ctx: klog.NewContext(ctx, logger), config: cfg})

	sel := fmt.Sprintf(`cluster="apirestart",namespace=%q`, ns)
	expectPods(t, sel, uids)
	events := func(kind string) float64 {
		return a.metric(t, "kube_state_push_events_total", map[string]string{"resource": "pods", "event": kind})
	}
	replacesBefore, deletesBefore := events("replace"), events("delete")
	require.Equal(t, 1.0, replacesBefore, "one initial list")

	// A second API server to change objects through while the agent's is
	// down; it compacts etcd every second.
	extra, err := cp.StartExtraAPIServer(ctx, "--watch-cache=false", "--etcd-compaction-interval=1s")
	require.NoError(t, err)
	t.Cleanup(extra.Stop)
	xc, err := extra.Client()
	require.NoError(t, err)

	cp.StopAPIServer()
	stopped := time.Now()
	// Every revision the agent saw is at most this one.
	list, err := xc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	seen := list.ResourceVersion
	zero := int64(0)
	for _, p := range []string{"gone", "reborn"} {
		require.NoError(t, xc.CoreV1().Pods(ns).Delete(ctx, p, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	}
	created := createPods(ctx, t, xc, ns, "reborn", "new")
	require.NotEqual(t, uids["reborn"], created["reborn"], "recreated under a new UID")

	// Wait until etcd has forgotten the revision after seen: a watch from
	// any resource version the agent holds cannot be served any more.
	rv, err := strconv.ParseInt(seen, 10, 64)
	require.NoError(t, err)
	next := strconv.FormatInt(rv+1, 10)
	eventually(t, 60*time.Second, "etcd compacted past revision "+next, func() error {
		_, err := xc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: next, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return nil
		}
		return fmt.Errorf("list at revision %s: %w", next, err)
	})
	extra.Stop()
	require.NoError(t, cp.RestartAPIServer(ctx))
	restarted := time.Now()
	t.Logf("API server down for %s", restarted.Sub(stopped).Round(10*time.Millisecond))

	t.Run("a watch from before the outage gets 410 Gone", func(t *testing.T) {
		w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: seen})
		require.NoError(t, err)
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			require.Equal(t, watch.Error, ev.Type, "first event %v", ev)
			status, ok := ev.Object.(*metav1.Status)
			require.True(t, ok, "error event holds a %T", ev.Object)
			require.EqualValues(t, 410, status.Code, status.Message)
			t.Logf("watch from %s: %d %s: %s", seen, status.Code, status.Reason, status.Message)
		case <-time.After(30 * time.Second):
			t.Fatal("no event within 30s")
		}
	})

	t.Run("the agent relists: deleted pods stale, new ones in, none twice", func(t *testing.T) {
		expectPods(t, sel, map[string]string{"keep": uids["keep"], "reborn": created["reborn"], "new": created["new"]})
		t.Logf("Prometheus shows the pods as they are %s after the restart", time.Since(restarted).Round(10*time.Millisecond))
		relists := events("replace") - replacesBefore
		require.GreaterOrEqual(t, relists, 1.0, "the reflector relisted")
		t.Logf("relists after the restart: %g", relists)
		require.Equal(t, deletesBefore, events("delete"), "the deletions were learned from the relist, not from watch events")
		require.Positive(t, a.metric(t, "kube_state_push_stale_markers_total", map[string]string{"resource": "pods"}))
		// Each pod's families once: the recreated and the new pod have as
		// many series as the one that stayed.
		keep, err := queryBy(ctx, fmt.Sprintf(`count({%s,pod="keep"})`, sel), "")
		require.NoError(t, err)
		for _, p := range []string{"reborn", "new"} {
			got, err := queryBy(ctx, fmt.Sprintf(`count({%s,pod=%q})`, sel, p), "")
			require.NoError(t, err)
			require.Equal(t, keep, got, "series of %s", p)
		}
		// The reflector said why it relisted.
		var closed []string
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "Watch closed") && strings.Contains(line, "too old resource version") {
				closed = append(closed, line)
			}
		}
		require.NotEmpty(t, closed, "no reflector log line says the watch expired; logs:\n%s", logs.String())
		t.Logf("reflector: %s", closed[0])
	})
	require.NoError(t, a.stop())
}

// expectPods waits until kube_pod_info{sel} holds exactly one series per
// pod of want, with the pod's UID.
func expectPods(t *testing.T, sel string, want map[string]string) {
	t.Helper()
	q := fmt.Sprintf(`kube_pod_info{%s}`, sel)
	eventually(t, 60*time.Second, q, func() error {
		res, err := env.prom.Query(context.Background(), q)
		if err != nil {
			return err
		}
		got := map[string]string{}
		var all []string
		for _, s := range res {
			all = append(all, s.Metric["pod"]+"/"+s.Metric["uid"])
			if _, dup := got[s.Metric["pod"]]; dup {
				return fmt.Errorf("pod %s twice: %s", s.Metric["pod"], strings.Join(all, ", "))
			}
			got[s.Metric["pod"]] = s.Metric["uid"]
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("got %v, want %v", got, want)
		}
		return nil
	})
}
