package agent

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// Resharding in place, on a fake API server, with the loop run by the
// test: each shard count's snapshot holds exactly the pods the count gives
// shard 0, moved pods get no staleness marker, and a count that goes back
// before the new lists are in leaves no pod missing.
func TestReshard(t *testing.T) {
	listWithoutWatchList(t)
	ctx := t.Context()
	kube := reloadCluster()
	var uids []types.UID
	for i := range 20 {
		p, err := kube.CoreV1().Pods("c").Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "c", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprintf("uid-c-%d", i)),
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		uids = append(uids, p.UID)
	}
	_, err := kube.AppsV1().StatefulSets("c").Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ksp", Namespace: "c"},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	h := &reloadHarness{t: t, reg: prometheus.NewRegistry(), recv: testenv.NewCapture()}
	t.Cleanup(h.recv.Close)
	clients := watch.Clients{Kube: kube}
	a, err := New(h.config("auto_sharding: true\nresources: [pods]\nnamespaces: [c]", h.recv),
		Options{Clients: &clients, Registry: h.reg, PodName: "ksp-0", PodNamespace: "c"})
	require.NoError(t, err)
	h.a = a
	runCtx, cancel := context.WithCancel(ctx)
	h.cancel = cancel
	require.NoError(t, a.shard(runCtx))
	a.watchCtx = runCtx
	for _, e := range a.endpoints {
		e.start()
	}
	for _, g := range a.groups {
		g.start(runCtx, a.clients)
	}
	t.Cleanup(h.stop)
	h.waitReady()

	// owned is the pods shard 0 of total renders.
	owned := func(total int) map[types.UID]bool {
		out := map[types.UID]bool{}
		for _, u := range uids {
			if watch.OwnedBy(u, 0, total) {
				out[u] = true
			}
		}
		return out
	}
	require.NotEqual(t, owned(2), owned(3), "some pods move")
	// check takes a snapshot: it holds exactly the pods of total, and no
	// staleness marker.
	check := func(total int) {
		t.Helper()
		got := map[types.UID]bool{}
		for k, v := range h.snapshot(h.recv) {
			require.NotEqual(t, math.Float64bits(encode.StaleNaN), math.Float64bits(v), "a staleness marker: %s", k)
			if strings.HasPrefix(k, "kube_pod_info{") {
				i := strings.Index(k, `uid="`) + len(`uid="`)
				got[types.UID(k[i:i+strings.IndexByte(k[i:], '"')])] = true
			}
		}
		require.Equal(t, owned(total), got, "%d shards", total)
	}
	check(2)

	a.reshard(3)
	h.waitReady()
	check(3)

	a.reshard(2)
	h.waitReady()
	check(2)

	// There and back before the new lists are in: the group that handed
	// pods off is still replaced.
	a.reshard(3)
	a.reshard(2)
	h.waitReady()
	check(2)
	check(2)

	// One replica: every pod.
	a.reshard(1)
	h.waitReady()
	check(1)
	require.Len(t, owned(1), len(uids))
}
