package agent

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
)

// streamLW is a ListerWatcher that serves objects as the API server serves
// client-go's reflector: a watch with sendInitialEvents (watch-list)
// streams every object as an Added event, then a bookmark annotated
// k8s.io/initial-events-end, and goes on with the events the test sends; a
// plain list returns every object in one page. Objects are made anew at
// each call and one at a time while streaming, as decoding a response
// makes them, so that what holds them after the event is the reflector's
// alone: the figures the watch-list benchmark reports are the reflector's.
type streamLW struct {
	// n is the number of objects served.
	n int
	// object makes object i.
	object func(i int) k8sruntime.Object
	// empty makes an empty object of the served type, for the bookmark
	// (the reflector drops events of another type).
	empty func() k8sruntime.Object
	// refuseWatchList makes a watch-list request fail as a server (or the
	// secrets' tables, watch/secret.go) that does not serve it: the
	// reflector then lists.
	refuseWatchList bool
	// events are sent, in order, after the initial events of a watch.
	events chan watch.Event

	// lists and watchLists count the list and watch-list requests.
	lists, watchLists atomic.Int32
}

// newStreamLW serves n objects made by object; empty gives their type.
func newStreamLW(n int, object func(int) k8sruntime.Object, empty func() k8sruntime.Object) *streamLW {
	return &streamLW{n: n, object: object, empty: empty, events: make(chan watch.Event)}
}

// ListWithContext returns every object, with resource version 1.
func (l *streamLW) ListWithContext(_ context.Context, _ metav1.ListOptions) (k8sruntime.Object, error) {
	l.lists.Add(1)
	list := &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	for i := range l.n {
		list.Items = append(list.Items, k8sruntime.RawExtension{Object: l.object(i)})
	}
	return list, nil
}

// WatchWithContext starts a watch: with sendInitialEvents, one that first
// streams every object and the bookmark.
func (l *streamLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	initial := o.SendInitialEvents != nil && *o.SendInitialEvents
	if initial {
		if l.refuseWatchList {
			return nil, apierrors.NewBadRequest("sendInitialEvents is not supported")
		}
		l.watchLists.Add(1)
	}
	w := &streamWatch{ch: make(chan watch.Event), done: make(chan struct{})}
	go func() {
		defer close(w.ch)
		if initial {
			for i := range l.n {
				if !w.send(ctx, watch.Event{Type: watch.Added, Object: l.object(i)}) {
					return
				}
			}
			bm := l.empty()
			m, err := meta.Accessor(bm)
			if err != nil {
				panic(err) // the test's empty is not an object
			}
			m.SetResourceVersion("1")
			m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
			if !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bm}) {
				return
			}
		}
		for {
			select {
			case e := <-l.events:
				if !w.send(ctx, e) {
					return
				}
			case <-ctx.Done():
				return
			case <-w.done:
				return
			}
		}
	}()
	return w, nil
}

// streamWatch is one watch of a streamLW: unlike watch.FakeWatcher, its
// sender never panics on a watch the reflector has stopped.
type streamWatch struct {
	// ch carries the events; the sender closes it.
	ch chan watch.Event
	// done is closed by Stop.
	done chan struct{}
	// stop makes Stop idempotent.
	stop sync.Once
}

// send sends e unless the watch or ctx has ended first.
func (w *streamWatch) send(ctx context.Context, e watch.Event) bool {
	select {
	case w.ch <- e:
		return true
	case <-w.done:
		return false
	case <-ctx.Done():
		return false
	}
}

// Stop ends the watch.
func (w *streamWatch) Stop() { w.stop.Do(func() { close(w.done) }) }

// ResultChan returns the events.
func (w *streamWatch) ResultChan() <-chan watch.Event { return w.ch }

// setWatchList sets client-go's WatchListClient feature (on by default
// since client-go v0.35) for the rest of the test, and restores it after:
// the gate is process-wide.
func setWatchList(tb testing.TB, on bool) {
	tb.Helper()
	g, ok := clientfeatures.FeatureGates().(interface {
		SetForTesting(clientfeatures.Feature, bool) error
	})
	require.True(tb, ok, "client-go's feature gates can be set for tests")
	was := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
	require.NoError(tb, g.SetForTesting(clientfeatures.WatchListClient, on))
	tb.Cleanup(func() { _ = g.SetForTesting(clientfeatures.WatchListClient, was) })
}

// probeStore is the store of a reflector under test: it passes everything
// on to the store, and shows each list the reflector replaces it with to
// replaced and stored, before and after the store has it. With plain set, it hides the store's
// transformer: the reflector then holds the objects, as it did before
// seriesMap had one.
type probeStore struct {
	cache.ReflectorStore
	// plain hides the store's transformer from the reflector.
	plain bool
	// replaced and stored, if set, see each list before and after the
	// store has stored it; the list is live during both.
	replaced, stored func(list []any)
	// event, if set, sees each object given to Add, Update and Delete.
	event func(obj any)
}

// Transformer returns the store's transformer, nil for none or if plain.
func (p *probeStore) Transformer() cache.TransformFunc {
	if t, ok := p.ReflectorStore.(cache.TransformingStore); ok && !p.plain {
		return t.Transformer()
	}
	return nil
}

// Add shows obj to event, then adds it.
func (p *probeStore) Add(obj any) error { p.saw(obj); return p.ReflectorStore.Add(obj) }

// Update shows obj to event, then updates it.
func (p *probeStore) Update(obj any) error { p.saw(obj); return p.ReflectorStore.Update(obj) }

// Delete shows obj to event, then deletes it.
func (p *probeStore) Delete(obj any) error { p.saw(obj); return p.ReflectorStore.Delete(obj) }

func (p *probeStore) saw(obj any) {
	if p.event != nil {
		p.event(obj)
	}
}

// Replace stores the list between replaced and stored.
func (p *probeStore) Replace(list []any, rv string) error {
	if p.replaced != nil {
		p.replaced(list)
	}
	err := p.ReflectorStore.Replace(list, rv)
	if p.stored != nil {
		p.stored(list)
	}
	runtime.KeepAlive(list)
	return err
}

// runReflector runs a reflector of objects like expected from lw into
// store until the test ends; stop stops it and waits for it.
func runReflector(tb testing.TB, lw *streamLW, expected k8sruntime.Object, store cache.ReflectorStore) (stop func()) {
	tb.Helper()
	rf := cache.NewReflectorWithOptions(&cache.ListWatch{
		ListWithContextFunc:  lw.ListWithContext,
		WatchFuncWithContext: lw.WatchWithContext,
	}, expected, store, cache.ReflectorOptions{Name: "test"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rf.RunWithContext(ctx)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	tb.Cleanup(stop)
	return stop
}
