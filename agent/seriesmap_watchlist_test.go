package agent

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/kubelet"
	kwatch "github.com/kube-state-push/kube-state-push/watch"
)

// malformed is the annotation that makes malformedRenderer fail.
const malformed = "test.example/malformed"

// malformedRenderer is a countingRenderer that fails for objects annotated
// malformed, as the renderer does for an object a generator panics on.
type malformedRenderer struct {
	countingRenderer
}

func (m *malformedRenderer) Render(obj any) (types.UID, encode.SeriesSet, error) {
	if o, ok := obj.(metav1.Object); ok && o.GetAnnotations()[malformed] != "" {
		m.n++
		return "", encode.SeriesSet{}, fmt.Errorf("rendering pods %s: panic: malformed", o.GetName())
	}
	return m.countingRenderer.Render(obj)
}

// malformedPod is testPod annotated malformed.
func malformedPod(ns, name, uid string) *v1.Pod {
	p := testPod(ns, name, uid, withPhase(v1.PodFailed))
	p.Annotations = map[string]string{malformed: "true"}
	return p
}

// watchListCase is a relist of pods as a sharded replica's reflector does
// it: the map has series for kept (whose object is now malformed) and gone
// (which no longer exists); the list holds pods a and b, a pod of another
// shard, the malformed one and one without a UID.
type watchListCase struct {
	// h snapshots pods.
	h *harness
	// pods is the map under test; render is its renderer.
	pods   *seriesMap
	render *malformedRenderer
	// list is what the API server serves, in order.
	list []*v1.Pod
	// kept and gone are the objects the map held before the relist.
	kept, gone *v1.Pod
}

func newWatchListCase(t *testing.T) *watchListCase {
	t.Helper()
	h := newHarness(t)
	r, ok := kwatch.Lookup("pods")
	require.True(t, ok)
	mr := &malformedRenderer{countingRenderer{objectRenderer: r.NewRenderer(kwatch.RenderOptions{})}}
	pods := h.addMap("pods", mr)
	pods.owns = func(uid types.UID) bool { return uid != "uid-theirs" }
	c := &watchListCase{
		h: h, pods: pods, render: mr,
		list: []*v1.Pod{
			testPod("shop", "checkout", "uid-a"),
			testPod("shop", "cart", "uid-b", withSidecar),
			testPod("shop", "theirs", "uid-theirs"),
			malformedPod("shop", "kept", "uid-kept"),
			testPod("shop", "nouid", ""),
		},
		kept: testPod("shop", "kept", "uid-kept"),
		gone: testPod("web", "gone", "uid-gone"),
	}
	require.NoError(t, pods.Add(c.kept))
	require.NoError(t, pods.Add(c.gone))
	h.snapshot()
	mr.n = 0
	return c
}

// lw serves the case's list.
func (c *watchListCase) lw() *streamLW {
	return newStreamLW(len(c.list), func(i int) k8sruntime.Object { return c.list[i].DeepCopy() },
		func() k8sruntime.Object { return &v1.Pod{} })
}

// check checks the map after the relist: the series of a, b and the kept
// pod, staleness markers for gone's, two render errors.
func (c *watchListCase) check(t *testing.T) snapshotResult {
	t.Helper()
	got := c.h.snapshot()
	require.Equal(t, rendered(t, "pods", c.list[0], c.list[1], c.kept), got.live,
		"a and b are stored, the malformed pod keeps its series, the foreign one is not stored")
	require.Equal(t, slices.Sorted(maps.Keys(rendered(t, "pods", c.gone))), got.stale)
	require.Equal(t, 4, c.render.n, "each pod of this shard is rendered once; the foreign one never")
	require.Equal(t, 2.0, testutil.ToFloat64(c.pods.metrics.renderErrors), "the malformed pod and the one without a UID")
	require.Equal(t, 1.0, testutil.ToFloat64(c.pods.metrics.events.WithLabelValues("replace")))
	require.True(t, c.pods.synced.Load())
	return got
}

// TestSeriesMapWatchList syncs a real reflector by watch-list: the store
// gets the pods rendered as they streamed in, never the pods, and ends
// with what it holds without its transformer (the reflector then holds
// the pods and Replace renders them). Watch events after the sync come as
// objects, and are rendered as before.
func TestSeriesMapWatchList(t *testing.T) {
	setWatchList(t, true)
	var results []snapshotResult
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newWatchListCase(t)
				var kinds, events []string
				store := &probeStore{ReflectorStore: c.pods, plain: plain,
					replaced: func(list []any) {
						for _, obj := range list {
							kinds = append(kinds, fmt.Sprintf("%T", obj))
						}
					},
					event: func(obj any) { events = append(events, fmt.Sprintf("%T", obj)) },
				}
				lw := c.lw()
				runReflector(t, lw, &v1.Pod{}, store)
				synctest.Wait()
				require.Equal(t, int32(1), lw.watchLists.Load())
				require.Zero(t, lw.lists.Load(), "synced by watch-list, without a list")
				want := "*agent.renderedObject"
				if plain {
					want = "*v1.Pod"
				}
				require.Equal(t, slices.Repeat([]string{want}, len(c.list)), kinds)
				results = append(results, c.check(t))

				// Watch events come as objects.
				a2 := testPod("shop", "checkout", "uid-a", withPhase(v1.PodSucceeded))
				lw.events <- watch.Event{Type: watch.Modified, Object: a2}
				lw.events <- watch.Event{Type: watch.Deleted, Object: c.list[1]}
				synctest.Wait()
				require.Equal(t, []string{"*v1.Pod", "*v1.Pod"}, events, "the reflector transforms no watch event")
				got := c.h.snapshot()
				require.Equal(t, rendered(t, "pods", a2, c.kept), got.live)
				require.Subset(t, got.stale, slices.Collect(maps.Keys(rendered(t, "pods", c.list[1]))))
			})
		})
	}
	require.Len(t, results, 2)
	require.Equal(t, results[1], results[0], "the same series with the transformer as without")
}

// TestSeriesMapListNotTransformed: when the reflector lists (the server
// does not serve watch-list, or the resource opts out as secrets do), the
// reflector applies no transformer and Replace renders the objects.
func TestSeriesMapListNotTransformed(t *testing.T) {
	setWatchList(t, true)
	synctest.Test(t, func(t *testing.T) {
		c := newWatchListCase(t)
		var kinds []string
		store := &probeStore{ReflectorStore: c.pods, replaced: func(list []any) {
			for _, obj := range list {
				kinds = append(kinds, fmt.Sprintf("%T", obj))
			}
		}}
		lw := c.lw()
		lw.refuseWatchList = true
		runReflector(t, lw, &v1.Pod{}, store)
		synctest.Wait()
		require.Equal(t, int32(1), lw.lists.Load(), "watch-list refused: listed")
		require.Equal(t, slices.Repeat([]string{"*v1.Pod"}, len(c.list)), kinds)
		c.check(t)
	})
}

// TestSeriesMapTransformed: what Transformer returns is taken by every
// method as the object it came from would be, and transforming it again
// changes nothing.
func TestSeriesMapTransformed(t *testing.T) {
	h := newHarness(t)
	pods := h.addResource("pods")
	pods.owns = func(uid types.UID) bool { return uid != "uid-theirs" }
	tr := pods.Transformer()
	transform := func(obj any) any {
		t.Helper()
		out, err := tr(obj)
		require.NoError(t, err)
		again, err := tr(out)
		require.NoError(t, err)
		require.Same(t, out, again, "idempotent")
		return out
	}
	a := testPod("shop", "checkout", "uid-a")
	b := testPod("shop", "cart", "uid-b")
	require.NoError(t, pods.Add(transform(a)))
	require.NoError(t, pods.Add(transform(b)))
	require.Equal(t, rendered(t, "pods", a, b), h.snapshot().live)

	a2 := testPod("shop", "checkout", "uid-a", withSidecar)
	require.NoError(t, pods.Update(transform(a2)))
	require.NoError(t, pods.Delete(cache.DeletedFinalStateUnknown{Key: "shop/cart", Obj: transform(b)}))
	got := h.snapshot()
	require.Equal(t, rendered(t, "pods", a2), got.live)
	require.Subset(t, got.stale, slices.Collect(maps.Keys(rendered(t, "pods", b))))

	// A malformed object does not fail the transformer; its error is
	// counted where it is stored, and its previous series are kept.
	bad, err := tr(&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "checkout", UID: "uid-a"}})
	require.NoError(t, err, "the watch-list store would drop the object, and Replace delete its series")
	require.NoError(t, pods.Update(bad))
	require.Equal(t, 1.0, testutil.ToFloat64(pods.metrics.renderErrors))
	require.Equal(t, rendered(t, "pods", a2), h.snapshot().live)

	// Another shard's object is not rendered; one that was this
	// replica's before (the shard count changed) loses its series.
	theirs := testPod("shop", "theirs", "uid-theirs")
	pods.owns = nil
	require.NoError(t, pods.Add(transform(theirs)))
	require.Equal(t, rendered(t, "pods", a2, theirs), h.snapshot().live)
	pods.owns = func(uid types.UID) bool { return uid != "uid-theirs" }
	foreign := transform(theirs)
	require.True(t, foreign.(*renderedObject).foreign)
	require.Empty(t, foreign.(*renderedObject).set.Refs, "not rendered")
	require.NoError(t, pods.Update(foreign))
	require.Equal(t, rendered(t, "pods", a2), h.snapshot().live)
}

// TestSeriesMapTransformedSetIsACopy: the renderer reuses its scratch
// space, so what the watch-list store holds must not share it: rendering
// more objects leaves the series of the first unchanged.
func TestSeriesMapTransformedSetIsACopy(t *testing.T) {
	h := newHarness(t)
	pods := h.addResource("pods")
	tr := pods.Transformer()
	first, err := tr(testPod("shop", "checkout", "uid-a"))
	require.NoError(t, err)
	set := first.(*renderedObject).set
	before := encode.SeriesSet{Buf: slices.Clone(set.Buf), Refs: slices.Clone(set.Refs)}
	for i := range 20 {
		_, err := tr(testPod(fmt.Sprintf("ns-%d", i), fmt.Sprintf("other-%d", i), fmt.Sprintf("uid-%d", i), withSidecar))
		require.NoError(t, err)
	}
	require.Equal(t, before.Buf, set.Buf)
	require.Equal(t, before.Refs, set.Refs)
	require.Equal(t, cap(set.Buf), len(set.Buf), "exactly sized")
}

// TestNodeTeeWatchList: with the kubelet section on, a nodes reflector
// synced by watch-list hands the kubelet source the nodes the replica
// owns, which the reflector kept as rendered nodes rather than objects.
func TestNodeTeeWatchList(t *testing.T) {
	setWatchList(t, true)
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		nodes := h.addResource("nodes")
		nodes.owns = func(uid types.UID) bool { return uid != "theirs" }
		var calls []string
		reg := prometheus.NewRegistry()
		src := kubelet.New(kubelet.Config{Interval: time.Hour, Timeout: time.Second, Concurrency: 1, Job: "kubelet", FamilyPrefixes: kubelet.DefaultFamilyPrefixes,
			Paths: []kubelet.PathConfig{{Path: kubelet.PathCadvisor}}},
			kubelet.Options{Reader: nopReader{}, Store: recordStore{&calls}, Metrics: kubelet.NewMetrics(reg), Logger: slog.New(slog.DiscardHandler)})
		tee := nodeTee{seriesMap: nodes, src: src}
		list := []*v1.Node{testNode("mine", "mine", "6.8.0-1"), testNode("theirs", "theirs", "6.8.0-1")}
		var kinds []string
		store := &probeStore{ReflectorStore: tee, replaced: func(list []any) {
			for _, obj := range list {
				kinds = append(kinds, fmt.Sprintf("%T", obj))
			}
		}}
		lw := newStreamLW(len(list), func(i int) k8sruntime.Object { return list[i].DeepCopy() },
			func() k8sruntime.Object { return &v1.Node{} })
		runReflector(t, lw, &v1.Node{}, store)
		synctest.Wait()
		require.Equal(t, int32(1), lw.watchLists.Load())
		slices.Sort(kinds) // the watch-list store lists in map order
		require.Equal(t, []string{"*agent.renderedNode", "*agent.renderedObject"}, kinds, "mine, and theirs (not rendered)")
		require.Equal(t, rendered(t, "nodes", list[0]), h.snapshot().live)

		// The source knows mine, and only mine: deleting a node it knows
		// ends its kubelet's series.
		require.NoError(t, tee.Delete(list[1]))
		require.Empty(t, calls)
		require.NoError(t, tee.Delete(cache.DeletedFinalStateUnknown{Key: "mine", Obj: list[0]}))
		require.Equal(t, []string{"mine/metrics/cadvisor=nil"}, calls)
		require.Empty(t, h.snapshot().live)
	})
}
