package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue"
	"github.com/kube-state-push/kube-state-push/watch"
)

// staleBits is the exact bit pattern of a Prometheus staleness marker.
const staleBits = 0x7ff0000000000002

// recorder is an appender that keeps a copy of every item it is given: the
// snapshotter reuses its item slice after Append returns.
type recorder struct {
	// items are the items appended since the last reset.
	items []queue.Item
}

// Flush implements appender: nothing to send.
func (*recorder) Flush() {}

func (r *recorder) Append(_ context.Context, items []queue.Item) int {
	for _, it := range items {
		it.Labels = encode.AppendLabels(nil, it.Labels)
		r.items = append(r.items, it)
	}
	return len(items)
}

// harness runs series maps and a snapshotter over them, as the agent does,
// with a recording appender and a fresh registry.
type harness struct {
	t   *testing.T
	reg *prometheus.Registry
	m   *metrics
	rec *recorder
	// snap takes the snapshots; its maps are added by addResource/addMap.
	snap *snapshotter
	// now is the timestamp of the next snapshot.
	now time.Time
	// hashes remembers each series' hash, which must not change between
	// its live samples and its staleness marker (it picks the queue shard).
	hashes map[string]uint64
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	rec := &recorder{}
	return &harness{
		t:      t,
		reg:    reg,
		m:      m,
		rec:    rec,
		snap:   &snapshotter{sinks: syncSinks(rec), metrics: m},
		now:    time.Unix(1_700_000_000, 0),
		hashes: make(map[string]uint64),
	}
}

// addResource adds a series map rendering the named resource with its real
// renderer.
func (h *harness) addResource(name string) *seriesMap {
	h.t.Helper()
	r, ok := watch.Lookup(name)
	require.True(h.t, ok, name)
	return h.addMap(name, r.NewRenderer(watch.RenderOptions{}))
}

// addMap adds a series map with the given renderer.
func (h *harness) addMap(name string, r objectRenderer) *seriesMap {
	sm := newSeriesMap(name, r, slog.New(slog.DiscardHandler), h.m.forResource(name))
	h.snap.maps = append(h.snap.maps, sm)
	return sm
}

// snapshotResult is one snapshot, decoded.
type snapshotResult struct {
	// ts is the snapshot's timestamp in milliseconds.
	ts int64
	// live maps each series (`name{labels}`) to its value.
	live map[string]float64
	// stale are the series that got a staleness marker, sorted.
	stale []string
}

// snapshot takes one snapshot through the snapshotter and decodes it. It
// checks that every sample has the snapshot's timestamp, that no series is
// sent twice, and that a series keeps its hash.
func (h *harness) snapshot() snapshotResult {
	h.t.Helper()
	h.rec.items = h.rec.items[:0]
	ts := h.now
	h.now = h.now.Add(15 * time.Second)
	n := h.snap.tick(ts)
	require.Len(h.t, h.rec.items, n, "tick returns the number of samples queued")

	res := snapshotResult{ts: ts.UnixMilli(), live: make(map[string]float64)}
	seen := make(map[string]bool, n)
	for _, it := range h.rec.items {
		require.Equal(h.t, res.ts, it.Timestamp, "one timestamp per snapshot")
		s := seriesString(h.t, it.Labels)
		require.False(h.t, seen[s], "series sent twice in one snapshot: %s", s)
		seen[s] = true
		if old, ok := h.hashes[s]; ok {
			require.Equal(h.t, old, it.Hash, "hash of %s changed", s)
		}
		h.hashes[s] = it.Hash
		if math.Float64bits(it.Value) == staleBits {
			require.True(h.t, encode.IsStaleNaN(it.Value))
			res.stale = append(res.stale, s)
			continue
		}
		res.live[s] = it.Value
	}
	slices.Sort(res.stale)
	return res
}

// seriesString formats encoded labels as `name{a="x",b="y"}`.
func seriesString(t testing.TB, b []byte) string {
	t.Helper()
	s, err := encode.FormatLabels(b)
	require.NoError(t, err)
	return s
}

// rendered renders objects of a resource with a renderer of their own and
// returns their series and values, as a snapshot should show them.
func rendered(t *testing.T, resource string, objs ...any) map[string]float64 {
	t.Helper()
	r, ok := watch.Lookup(resource)
	require.True(t, ok)
	rr := r.NewRenderer(watch.RenderOptions{})
	out := make(map[string]float64)
	for _, obj := range objs {
		_, set, err := rr.Render(obj)
		require.NoError(t, err)
		for i := range set.Refs {
			out[seriesString(t, set.Labels(i))] = set.Refs[i].Value
		}
	}
	return out
}

// withPrefix returns the sorted series of m whose text starts with prefix.
func withPrefix(m map[string]float64, prefix string) []string {
	var out []string
	for s := range m {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// testPod returns a running pod with one ready container; edits change it.
func testPod(ns, name, uid string, edits ...func(*v1.Pod)) *v1.Pod {
	start := metav1.NewTime(time.Unix(1_699_990_000, 0))
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), CreationTimestamp: start},
		Spec: v1.PodSpec{
			NodeName:   "node-a",
			Containers: []v1.Container{{Name: "app", Image: "registry.example/app:1.0"}},
		},
		Status: v1.PodStatus{
			Phase:     v1.PodRunning,
			PodIP:     "10.0.0.1",
			StartTime: &start,
			ContainerStatuses: []v1.ContainerStatus{{
				Name: "app", Image: "registry.example/app:1.0", Ready: true,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: start}},
			}},
		},
	}
	for _, e := range edits {
		e(p)
	}
	return p
}

func withPhase(ph v1.PodPhase) func(*v1.Pod) { return func(p *v1.Pod) { p.Status.Phase = ph } }

func withNode(n string) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.NodeName = n } }

// withSidecar adds a second, waiting container.
func withSidecar(p *v1.Pod) {
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "sidecar", Image: "registry.example/proxy:2"})
	p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{
		Name: "sidecar", Image: "registry.example/proxy:2",
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}},
	})
}

// testNode returns a ready node with the given kernel version.
func testNode(name, uid, kernel string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(time.Unix(1_690_000_000, 0))},
		Status: v1.NodeStatus{
			NodeInfo: v1.NodeSystemInfo{KernelVersion: kernel, KubeletVersion: "v1.33.1", OSImage: "Ubuntu 24.04"},
			Conditions: []v1.NodeCondition{
				{Type: v1.NodeReady, Status: v1.ConditionTrue},
			},
		},
	}
}

func TestSeriesMapAddSnapshot(t *testing.T) {
	h := newHarness(t)
	pods := h.addResource("pods")
	a := testPod("shop", "checkout", "uid-a")
	b := testPod("shop", "cart", "uid-b", withSidecar)
	require.NoError(t, pods.Add(a))
	require.NoError(t, pods.Add(b))

	want := rendered(t, "pods", a, b)
	require.Contains(t, want, `kube_pod_info{host_network="false",namespace="shop",node="node-a",pod="checkout",pod_ip="10.0.0.1",uid="uid-a"}`)

	got := h.snapshot()
	require.Equal(t, want, got.live, "every series once, with its value")
	require.Empty(t, got.stale)
	require.Equal(t, float64(len(want)), testutil.ToFloat64(pods.metrics.series))

	// Nothing changed: the next snapshot is the same, with a new timestamp.
	next := h.snapshot()
	require.Greater(t, next.ts, got.ts)
	require.Equal(t, want, next.live)
	require.Empty(t, next.stale)
}

func TestSeriesMapUpdateStale(t *testing.T) {
	t.Run("node kernel version", func(t *testing.T) {
		h := newHarness(t)
		nodes := h.addResource("nodes")
		require.NoError(t, nodes.Add(testNode("n1", "uid-n1", "6.8.0-1")))
		first := h.snapshot()
		oldInfo := withPrefix(first.live, "kube_node_info{")
		require.Len(t, oldInfo, 1)
		require.Contains(t, oldInfo[0], `kernel_version="6.8.0-1"`)

		updated := testNode("n1", "uid-n1", "6.8.0-2")
		require.NoError(t, nodes.Update(updated))
		second := h.snapshot()
		require.Equal(t, rendered(t, "nodes", updated), second.live)
		require.Equal(t, oldInfo, second.stale, "the old kube_node_info gets one marker, nothing else does")
		newInfo := withPrefix(second.live, "kube_node_info{")
		require.Len(t, newInfo, 1)
		require.Contains(t, newInfo[0], `kernel_version="6.8.0-2"`)

		third := h.snapshot()
		require.Empty(t, third.stale, "markers are sent in the next snapshot only")
		require.Equal(t, second.live, third.live)
		require.Equal(t, 1.0, testutil.ToFloat64(nodes.metrics.staleMarkers))
	})

	t.Run("pod moved and lost a container", func(t *testing.T) {
		h := newHarness(t)
		pods := h.addResource("pods")
		before := testPod("shop", "checkout", "uid-a", withSidecar)
		require.NoError(t, pods.Add(before))
		h.snapshot()

		// A phase change keeps the label sets of the phase state set; the
		// node label of kube_pod_info and the sidecar's series end.
		after := testPod("shop", "checkout", "uid-a", withPhase(v1.PodFailed), withNode("node-b"))
		require.NoError(t, pods.Update(after))
		got := h.snapshot()
		require.Equal(t, rendered(t, "pods", after), got.live)
		require.Equal(t, 1.0, got.live[`kube_pod_status_phase{namespace="shop",phase="Failed",pod="checkout",uid="uid-a"}`])
		require.Equal(t, 0.0, got.live[`kube_pod_status_phase{namespace="shop",phase="Running",pod="checkout",uid="uid-a"}`])

		var ended []string
		for s := range rendered(t, "pods", before) {
			if _, ok := got.live[s]; !ok {
				ended = append(ended, s)
			}
		}
		slices.Sort(ended)
		require.Equal(t, ended, got.stale)
		require.Contains(t, got.stale, `kube_pod_info{host_network="false",namespace="shop",node="node-a",pod="checkout",pod_ip="10.0.0.1",uid="uid-a"}`)
		for _, s := range got.stale {
			require.NotContains(t, got.live, s)
		}
		require.Empty(t, h.snapshot().stale)
	})
}

func TestSeriesMapDeleteStale(t *testing.T) {
	h := newHarness(t)
	pods := h.addResource("pods")
	a := testPod("shop", "checkout", "uid-a", withSidecar)
	b := testPod("shop", "cart", "uid-b")
	require.NoError(t, pods.Add(a))
	require.NoError(t, pods.Add(b))
	h.snapshot()

	require.NoError(t, pods.Delete(a))
	got := h.snapshot()
	require.Equal(t, rendered(t, "pods", b), got.live)
	require.Equal(t, slices.Sorted(maps.Keys(rendered(t, "pods", a))), got.stale)
	require.Equal(t, float64(len(got.live)), testutil.ToFloat64(pods.metrics.series))

	next := h.snapshot()
	require.Empty(t, next.stale, "each marker is sent once")
	require.Equal(t, got.live, next.live)

	// Deleting an unknown object changes nothing.
	require.NoError(t, pods.Delete(a))
	require.Empty(t, h.snapshot().stale)
}

func TestSeriesMapDeleteFinalStateUnknown(t *testing.T) {
	h := newHarness(t)
	pods := h.addResource("pods")
	a := testPod("shop", "checkout", "uid-a")
	require.NoError(t, pods.Add(a))
	h.snapshot()

	// The reflector missed the delete and found the object gone at relist.
	require.NoError(t, pods.Delete(cache.DeletedFinalStateUnknown{Key: "shop/checkout", Obj: a}))
	got := h.snapshot()
	require.Empty(t, got.live)
	require.Equal(t, slices.Sorted(maps.Keys(rendered(t, "pods", a))), got.stale)

	// One whose object is unknown is an error, counted, not a panic.
	require.NoError(t, pods.Delete(cache.DeletedFinalStateUnknown{Key: "shop/gone"}))
	require.Equal(t, 1.0, testutil.ToFloat64(pods.metrics.renderErrors))
	require.Empty(t, h.snapshot().stale)
}

func TestSeriesMapReplace(t *testing.T) {
	h := newHarness(t)
	pods := h.addResource("pods")
	a := testPod("shop", "checkout", "uid-a")
	b := testPod("shop", "cart", "uid-b", withSidecar)
	c := testPod("shop", "search", "uid-c")
	for _, p := range []*v1.Pod{a, b, c} {
		require.NoError(t, pods.Add(p))
	}
	h.snapshot()

	// A relist: b is gone, c changed phase, d is new.
	c2 := testPod("shop", "search", "uid-c", withPhase(v1.PodSucceeded))
	d := testPod("web", "frontend", "uid-d")
	require.NoError(t, pods.Replace([]any{a, c2, d}, "42"))
	got := h.snapshot()
	require.Equal(t, rendered(t, "pods", a, c2, d), got.live)
	require.Equal(t, slices.Sorted(maps.Keys(rendered(t, "pods", b))), got.stale,
		"only the missing object's series are stale")
	require.Empty(t, h.snapshot().stale)
	require.Equal(t, 1.0, testutil.ToFloat64(pods.metrics.events.WithLabelValues("replace")))
}

// TestSeriesMapReplaceRecreated is a node that re-registered under a new UID
// while the watch was down: a relist shows the new object instead of the
// old one. Both render the same series (nodes are identified by name), which
// must not get staleness markers at the timestamp they are sent live.
func TestSeriesMapReplaceRecreated(t *testing.T) {
	h := newHarness(t)
	nodes := h.addResource("nodes")
	require.NoError(t, nodes.Add(testNode("n1", "uid-old", "6.8.0-1")))
	h.snapshot()

	renewed := testNode("n1", "uid-new", "6.8.0-1")
	renewed.CreationTimestamp = metav1.NewTime(time.Unix(1_699_000_000, 0))
	require.NoError(t, nodes.Replace([]any{renewed}, "43"))
	got := h.snapshot()
	require.Equal(t, rendered(t, "nodes", renewed), got.live)
	require.Empty(t, got.stale)
}

func TestSeriesMapStaleSeriesComesBack(t *testing.T) {
	t.Run("update and back", func(t *testing.T) {
		h := newHarness(t)
		nodes := h.addResource("nodes")
		n := testNode("n1", "uid-n1", "6.8.0-1")
		require.NoError(t, nodes.Add(n))
		first := h.snapshot()

		require.NoError(t, nodes.Update(testNode("n1", "uid-n1", "6.8.0-2")))
		require.NoError(t, nodes.Update(n))
		got := h.snapshot()
		require.Equal(t, first.live, got.live)
		for _, s := range got.stale {
			require.NotContains(t, first.live, s, "a series that came back gets no marker")
			// The intermediate kube_node_info was never sent; a marker for
			// it is harmless (the map does not track what was sent).
			require.Contains(t, s, `kernel_version="6.8.0-2"`)
		}
	})

	t.Run("delete and add again", func(t *testing.T) {
		h := newHarness(t)
		pods := h.addResource("pods")
		a := testPod("shop", "checkout", "uid-a")
		require.NoError(t, pods.Add(a))
		first := h.snapshot()

		require.NoError(t, pods.Delete(a))
		require.NoError(t, pods.Add(a))
		got := h.snapshot()
		require.Equal(t, first.live, got.live)
		require.Empty(t, got.stale)
	})
}

// failingRenderer renders with a real renderer unless fail is set.
type failingRenderer struct {
	r    objectRenderer
	fail bool
}

func (f *failingRenderer) Render(obj any) (types.UID, encode.SeriesSet, error) {
	if f.fail {
		return watch.UIDOf(obj), encode.SeriesSet{}, errors.New("render failed")
	}
	return f.r.Render(obj)
}

func TestSeriesMapRenderError(t *testing.T) {
	t.Run("wrong object type", func(t *testing.T) {
		h := newHarness(t)
		pods := h.addResource("pods")
		a := testPod("shop", "checkout", "uid-a")
		require.NoError(t, pods.Add(a))
		first := h.snapshot()

		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "checkout", UID: "uid-a"}}
		require.NoError(t, pods.Update(svc), "a render error is not the reflector's problem")
		got := h.snapshot()
		require.Equal(t, first.live, got.live, "the previous series are kept")
		require.Empty(t, got.stale)

		// In a relist too: the object that fails keeps its series.
		b := testPod("shop", "cart", "uid-b")
		require.NoError(t, pods.Replace([]any{svc, b}, "7"))
		got = h.snapshot()
		require.Equal(t, rendered(t, "pods", a, b), got.live)
		require.Empty(t, got.stale)

		// A pod without a UID cannot be stored.
		require.NoError(t, pods.Add(testPod("shop", "nouid", "")))
		require.Equal(t, rendered(t, "pods", a, b), h.snapshot().live)

		require.NoError(t, testutil.GatherAndCompare(h.reg, strings.NewReader(`
# HELP kube_state_push_render_errors_total Objects that could not be rendered into series (their previous series are kept).
# TYPE kube_state_push_render_errors_total counter
kube_state_push_render_errors_total{resource="pods"} 3
`), "kube_state_push_render_errors_total"))
	})

	t.Run("renderer error", func(t *testing.T) {
		h := newHarness(t)
		r, _ := watch.Lookup("pods")
		fr := &failingRenderer{r: r.NewRenderer(watch.RenderOptions{})}
		pods := h.addMap("pods", fr)
		a := testPod("shop", "checkout", "uid-a")
		require.NoError(t, pods.Add(a))
		first := h.snapshot()

		fr.fail = true
		require.NoError(t, pods.Update(testPod("shop", "checkout", "uid-a", withNode("node-b"))))
		require.NoError(t, pods.Add(testPod("shop", "cart", "uid-b")))
		require.NoError(t, pods.Replace([]any{a}, "8"))
		got := h.snapshot()
		require.Equal(t, first.live, got.live)
		require.Empty(t, got.stale)
		require.Equal(t, 3.0, testutil.ToFloat64(pods.metrics.renderErrors))
	})
}

func TestSeriesMapSynced(t *testing.T) {
	h := newHarness(t)
	pods := h.addResource("pods")
	require.False(t, pods.synced.Load())
	require.NoError(t, pods.Add(testPod("shop", "checkout", "uid-a")))
	h.snapshot()
	require.False(t, pods.synced.Load(), "events before the first list do not sync")
	require.Equal(t, 0.0, testutil.ToFloat64(pods.metrics.synced))

	require.NoError(t, pods.Replace(nil, "1"))
	require.True(t, pods.synced.Load())
	got := h.snapshot()
	require.Equal(t, 1.0, testutil.ToFloat64(pods.metrics.synced))
	require.Empty(t, got.live, "an empty list deletes everything")
	require.NotEmpty(t, got.stale)
}

// TestSeriesMapConcurrentEvents runs a reflector-like writer against
// snapshots (run it with -race). Seen from a receiver, every series that is
// not live at the end must have ended with a staleness marker.
func TestSeriesMapConcurrentEvents(t *testing.T) {
	h := newHarness(t)
	pods := h.addResource("pods")
	require.NoError(t, pods.Replace(nil, "1"))

	const npods, ops = 200, 2500
	variant := func(k, v int) *v1.Pod {
		edits := []func(*v1.Pod){withPhase([]v1.PodPhase{v1.PodPending, v1.PodRunning, v1.PodSucceeded}[v%3])}
		if v%2 == 1 {
			edits = append(edits, withSidecar)
		}
		if v%5 == 0 {
			edits = append(edits, withNode("node-b"))
		}
		return testPod(fmt.Sprintf("ns-%d", k%7), fmt.Sprintf("pod-%d", k), fmt.Sprintf("uid-%d", k), edits...)
	}

	current := make(map[int]*v1.Pod) // the writer's, read after done
	done := make(chan error)
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		var errs []error
		for range ops {
			k := rng.IntN(npods)
			p, ok := current[k]
			switch {
			case !ok:
				p = variant(k, rng.IntN(30))
				errs = append(errs, pods.Add(p))
				current[k] = p
			case rng.IntN(5) == 0:
				errs = append(errs, pods.Delete(p))
				delete(current, k)
			default:
				p = variant(k, rng.IntN(30))
				errs = append(errs, pods.Update(p))
				current[k] = p
			}
		}
		done <- errors.Join(errs...)
	}()

	lastLive := make(map[string]bool) // by series: was its last sample live
	apply := func(s snapshotResult) {
		for _, st := range s.stale {
			require.NotContains(t, s.live, st, "a series is live and stale in one snapshot")
			lastLive[st] = false
		}
		for l := range s.live {
			lastLive[l] = true
		}
	}
	snapshots := 0
	for running := true; running; {
		select {
		case err := <-done:
			require.NoError(t, err)
			running = false
		default:
			apply(h.snapshot())
			snapshots++
		}
	}
	final := h.snapshot()
	apply(final)
	t.Logf("%d snapshots during %d events", snapshots, ops)

	var objs []any
	for _, p := range current {
		objs = append(objs, p)
	}
	want := rendered(t, "pods", objs...)
	require.Equal(t, want, final.live)
	require.Equal(t, float64(len(want)), testutil.ToFloat64(pods.metrics.series))
	for s, live := range lastLive {
		if _, ok := final.live[s]; !ok {
			require.False(t, live, "series %s ended without a staleness marker", s)
		}
	}
	after := h.snapshot()
	require.Empty(t, after.stale)
	require.Equal(t, want, after.live)
}

// countingRenderer counts the objects it renders.
type countingRenderer struct {
	objectRenderer
	// n is the number of Render calls.
	n int
}

func (c *countingRenderer) Render(obj any) (types.UID, encode.SeriesSet, error) {
	c.n++
	return c.objectRenderer.Render(obj)
}

// A sharded series map renders only its own objects; an object that stops
// being its own (the shard count changed) is deleted, at an update as at a
// relist.
func TestSeriesMapSharding(t *testing.T) {
	h := newHarness(t)
	r, _ := watch.Lookup("pods")
	cr := &countingRenderer{objectRenderer: r.NewRenderer(watch.RenderOptions{})}
	pods := h.addMap("pods", cr)
	mine := map[types.UID]bool{"uid-a": true, "uid-c": true}
	pods.owns = func(uid types.UID) bool { return mine[uid] }

	a := testPod("shop", "checkout", "uid-a")
	b := testPod("shop", "cart", "uid-b")
	c := testPod("shop", "search", "uid-c")
	require.NoError(t, pods.Replace([]any{a, b}, "1"))
	require.NoError(t, pods.Add(c))
	require.NoError(t, pods.Update(b))
	require.Equal(t, 2, cr.n, "a foreign object is never rendered")
	got := h.snapshot()
	require.Equal(t, rendered(t, "pods", a, c), got.live)
	require.Empty(t, got.stale)

	// c moves to another shard: its next update deletes it.
	delete(mine, "uid-c")
	require.NoError(t, pods.Update(c))
	got = h.snapshot()
	require.Equal(t, rendered(t, "pods", a), got.live)
	require.Equal(t, slices.Sorted(maps.Keys(rendered(t, "pods", c))), got.stale)

	// At a relist, a moves away and b comes in.
	mine = map[types.UID]bool{"uid-b": true}
	require.NoError(t, pods.Replace([]any{a, b, c}, "2"))
	got = h.snapshot()
	require.Equal(t, rendered(t, "pods", b), got.live)
	require.Equal(t, slices.Sorted(maps.Keys(rendered(t, "pods", a))), got.stale)

	// Without a predicate, everything is owned.
	pods.owns = nil
	require.NoError(t, pods.Add(c))
	require.Equal(t, rendered(t, "pods", b, c), h.snapshot().live)
}

// A handed-off object (the shard count changed, another shard owns it now)
// leaves without staleness markers, and its later events are not stored;
// the objects kept stay as they were.
func TestSeriesMapHandOff(t *testing.T) {
	h := newHarness(t)
	r, _ := watch.Lookup("pods")
	pods := h.addMap("pods", r.NewRenderer(watch.RenderOptions{}))
	a := testPod("shop", "checkout", "uid-a")
	b := testPod("shop", "cart", "uid-b")
	require.NoError(t, pods.Replace([]any{a, b}, "1"))
	require.Equal(t, rendered(t, "pods", a, b), h.snapshot().live)

	pods.handOff(func(uid types.UID) bool { return uid == "uid-a" })
	got := h.snapshot()
	require.Equal(t, rendered(t, "pods", a), got.live)
	require.Empty(t, got.stale, "the new owner continues b's series")

	require.NoError(t, pods.Update(b))
	require.NoError(t, pods.Replace([]any{a, b}, "2"))
	got = h.snapshot()
	require.Equal(t, rendered(t, "pods", a), got.live, "b's events are another shard's")
	require.Empty(t, got.stale)

	// A deletion of a kept object still ends its series.
	require.NoError(t, pods.Delete(a))
	got = h.snapshot()
	require.Empty(t, got.live)
	require.Equal(t, slices.Sorted(maps.Keys(rendered(t, "pods", a))), got.stale)
}

// TestSeriesMapSnapshotInAddressOrder checks that a map hands its objects
// to the frame in the order of their label bytes in memory, and in the same
// order at every snapshot while they are unchanged, rather than in the map's
// random order: the send path then reads the heap mostly forward
// (docs/performance.md, "What a snapshot costs on the AMD machine, and the
// snapshot in address order").
func TestSeriesMapSnapshotInAddressOrder(t *testing.T) {
	h := newHarness(t)
	pods := h.addResource("pods")
	nodes := h.addResource("nodes")
	for i := range 64 {
		require.NoError(t, pods.Add(testPod("shop", fmt.Sprintf("p%d", i), fmt.Sprintf("uid-p%d", i))))
		require.NoError(t, nodes.Add(testNode(fmt.Sprintf("n%d", i), fmt.Sprintf("uid-n%d", i), "6.1")))
	}
	var prev []encode.Object
	for range 3 {
		var f encode.Frame
		f.Timestamp = h.now.UnixMilli()
		require.Equal(t, pods.count, pods.snapshot(&f, false))
		require.Len(t, f.Objects, 64)
		split := len(f.Objects)
		nodes.snapshot(&f, false)
		require.Len(t, f.Objects, 128, "each map's objects follow those of the map before")
		for _, part := range [][]encode.Object{f.Objects[:split], f.Objects[split:]} {
			require.True(t, slices.IsSortedFunc(part, func(a, b encode.Object) int { return cmp.Compare(bufAddress(a), bufAddress(b)) }),
				"a map's objects in the address order of their label bytes")
		}
		if prev != nil {
			require.Equal(t, prev, f.Objects, "the same order at every snapshot")
		}
		prev = slices.Clone(f.Objects)
	}
}
