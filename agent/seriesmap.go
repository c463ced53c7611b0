package agent

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/pull"
	"github.com/kube-state-push/kube-state-push/watch"
)

// objectRenderer renders one object into series (watch.Renderer).
type objectRenderer interface {
	Render(obj any) (types.UID, encode.SeriesSet, error)
}

// seriesMap is the series of one resource, keyed by object UID. It is the
// store its reflector writes to (client-go's cache.ReflectorStore): each
// event renders the object and keeps only the rendered, encode-ready series,
// never the object.
//
// A reflector's streaming list (watch-list) collects every object in a
// store of its own before it hands the list to Replace; seriesMap gives
// that store its Transformer (client-go's cache.TransformingStore), which
// renders each object as it streams in, so that the reflector holds
// series rather than decoded objects until Replace.
//
// Series that disappear (object deleted, container removed, a label value
// changed) are remembered until the next snapshot, which sends a staleness
// marker for each, so that queries stop returning them at once.
type seriesMap struct {
	resource string
	// render turns an object into series; only the reflector goroutine
	// calls it, outside mu.
	render objectRenderer
	// log receives render errors.
	log *slog.Logger
	// metrics count events and errors.
	metrics *resourceMetrics
	// owns tells the objects of this shard (nil: all). Set before the
	// reflector starts; foreign objects are never rendered.
	owns func(types.UID) bool
	// handingOff, set by handOff while the shard count changes, tells the
	// objects this shard keeps: the others are another shard's now.
	handingOff atomic.Pointer[func(types.UID) bool]

	// mu guards objects, stale and count.
	mu sync.Mutex
	// objects maps object UID to its series. A set is never modified once
	// stored, so snapshots may read it after releasing mu.
	objects map[types.UID]*encode.SeriesSet
	// stale holds series that ended and have not had their staleness
	// marker sent yet, by label hash.
	stale map[uint64]staleEntry
	// count is the number of series in objects.
	count int

	// synced is set once the reflector's first list has been stored.
	synced atomic.Bool
}

var (
	_ cache.TransformingStore = (*seriesMap)(nil)
	_ pull.Source             = (*seriesMap)(nil)
)

// AppendSets appends every object's series set (pull.Source).
func (s *seriesMap) AppendSets(dst []*encode.SeriesSet) []*encode.SeriesSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, set := range s.objects {
		dst = append(dst, set)
	}
	return dst
}

func newSeriesMap(resource string, r objectRenderer, log *slog.Logger, m *resourceMetrics) *seriesMap {
	return &seriesMap{
		resource: resource,
		render:   r,
		log:      log.With("resource", resource),
		metrics:  m,
		objects:  make(map[types.UID]*encode.SeriesSet),
		stale:    make(map[uint64]staleEntry),
	}
}

// renderedObject is what a series map makes of an object: its series, or
// why it has none. The reflector's watch-list store holds these instead of
// the objects (Transformer), and the store's methods take them as they take
// objects: the reflector hands watch-list results to Replace rendered, and
// everything else (a paginated list, watch events) as objects.
type renderedObject struct {
	// uid is the object's UID; "" for an object without one (err then says
	// so).
	uid types.UID
	// set is the object's series: a copy the renderer made, which shares no
	// memory with the object nor with the renderer's scratch space.
	set encode.SeriesSet
	// err is why the object did not render. It is carried to Replace,
	// which counts and logs it and keeps the object's previous series,
	// rather than returned by the transformer: the watch-list store drops
	// an object whose transformer fails (client-go logs the error and goes
	// on, tools/cache/reflector.go handleAnyWatch), so Replace would not
	// see it and would delete its series.
	err error
	// foreign is set for another shard's object, which is not rendered.
	foreign bool
}

// Transformer returns the function the reflector's watch-list store runs on
// each object as it streams in (cache.TransformingStore): it renders the
// object, in the reflector's goroutine, where Add and Replace render too.
//
// The store keys each object by namespace and name before transforming it
// (client-go v0.37 tools/cache/store.go: cache.Add, Update, Replace), so a
// rendered object needs no metadata; TestSeriesMapWatchList fails if that
// ever changes. It holds the object's UID, its series and its render error.
func (s *seriesMap) Transformer() cache.TransformFunc {
	return func(obj any) (any, error) {
		if _, ok := obj.(*renderedObject); ok {
			return obj, nil // transformed already
		}
		r := s.renderObject(obj)
		return &r, nil
	}
}

// renderObject renders an object, unless it is another shard's.
func (s *seriesMap) renderObject(obj any) renderedObject {
	if s.foreign(obj) {
		return renderedObject{uid: watch.UIDOf(obj), foreign: true}
	}
	uid, set, err := s.render.Render(obj)
	if c, ok := s.render.(invalidCounter); ok {
		if n := c.InvalidSeries(); n > 0 {
			s.metrics.invalid.Add(float64(n))
		}
	}
	if err != nil {
		// The UID, if any, finds the series to keep.
		return renderedObject{uid: watch.UIDOf(obj), err: err}
	}
	return renderedObject{uid: uid, set: set}
}

// invalidCounter is a renderer that leaves out series no receiver takes
// and says how many (watch.Renderer.InvalidSeries).
type invalidCounter interface {
	InvalidSeries() int
}

// rendered returns what obj renders to: what it holds if the reflector's
// watch-list store has rendered it already.
func (s *seriesMap) rendered(obj any) renderedObject {
	if r, ok := obj.(*renderedObject); ok {
		return *r
	}
	return s.renderObject(obj)
}

// uidOf returns the UID of an object or of what it rendered to, "" for
// anything else.
func uidOf(obj any) types.UID {
	if r, ok := obj.(*renderedObject); ok {
		return r.uid
	}
	return watch.UIDOf(obj)
}

// Add renders and stores a new object.
func (s *seriesMap) Add(obj any) error { return s.upsert(obj, "add") }

// Update renders an object again and replaces its series.
func (s *seriesMap) Update(obj any) error { return s.upsert(obj, "update") }

func (s *seriesMap) upsert(obj any, event string) error {
	s.metrics.events.WithLabelValues(event).Inc()
	r := s.rendered(obj)
	switch {
	case r.foreign:
		// Another shard's object: drop what it had, should it have been
		// ours before (the shard count changed).
		s.mu.Lock()
		s.setLocked(r.uid, nil)
		s.mu.Unlock()
	case r.err != nil:
		// Keep what the object had: a malformed update loses nothing
		// already accepted.
		s.metrics.renderErrors.Inc()
		s.log.Error("rendering object; keeping its previous series", "event", event, "err", r.err)
	default:
		set := r.set
		s.mu.Lock()
		s.setLocked(r.uid, &set)
		s.mu.Unlock()
	}
	return nil
}

// Delete removes an object; its series get staleness markers.
func (s *seriesMap) Delete(obj any) error {
	s.metrics.events.WithLabelValues("delete").Inc()
	uid := uidOf(obj)
	if uid == "" {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			uid = uidOf(d.Obj)
		}
	}
	if uid == "" {
		s.metrics.renderErrors.Inc()
		s.log.Error("deleting object", "err", fmt.Errorf("object %T has no UID", obj))
		return nil
	}
	s.mu.Lock()
	s.setLocked(uid, nil)
	s.mu.Unlock()
	return nil
}

// Replace swaps in the complete list the reflector got from a (re)list:
// objects not in it are deleted, the others updated. The list holds
// objects (a paginated list) or what Transformer made of them (a
// watch-list).
func (s *seriesMap) Replace(list []any, _ string) error {
	s.metrics.events.WithLabelValues("replace").Inc()
	fresh := make([]renderedObject, 0, len(list))
	for _, obj := range list {
		r := s.rendered(obj)
		switch {
		case r.foreign:
			// Left out of keep: deleted below if it was ours before.
		case r.err != nil:
			s.metrics.renderErrors.Inc()
			s.log.Error("rendering object; keeping its previous series", "event", "replace", "err", r.err)
			if r.uid != "" {
				// Keep the old series of the object, if any, rather than
				// deleting them below.
				s.mu.Lock()
				old := s.objects[r.uid]
				s.mu.Unlock()
				if old != nil {
					fresh = append(fresh, renderedObject{uid: r.uid, set: *old})
				}
			}
		default:
			fresh = append(fresh, r)
		}
	}
	keep := make(map[types.UID]struct{}, len(fresh))
	for i := range fresh {
		keep[fresh[i].uid] = struct{}{}
	}
	s.mu.Lock()
	// Delete before storing: an object recreated under a new UID while the
	// watch was down (a node that re-registered) renders the same series as
	// the one it replaced, and storing it last takes them out of stale, as
	// the watch's own Delete-then-Add order would. Stored first, its live
	// series would also get staleness markers at the same timestamp.
	for uid := range s.objects {
		if _, ok := keep[uid]; !ok {
			s.setLocked(uid, nil)
		}
	}
	for i := range fresh {
		s.setLocked(fresh[i].uid, &fresh[i].set)
	}
	s.mu.Unlock()
	s.synced.Store(true)
	return nil
}

// foreign reports whether the object belongs to another shard. An object
// without a UID is not foreign: rendering reports the error.
func (s *seriesMap) foreign(obj any) bool {
	return s.foreignUID(watch.UIDOf(obj))
}

// foreignUID reports whether the object with this UID belongs to another
// shard, now or once the shard count change under way is done.
func (s *seriesMap) foreignUID(uid types.UID) bool {
	if uid == "" {
		return false
	}
	if s.owns != nil && !s.owns(uid) {
		return true
	}
	next := s.handingOff.Load()
	return next != nil && !(*next)(uid)
}

// handOff forgets, without staleness markers, the objects that owns (the
// predicate of a new shard count) gives to another shard, and every later
// event of theirs: that shard pushes their series from now on, under the
// same identity, so a marker here would end them at the receiver between
// two of its samples.
func (s *seriesMap) handOff(owns func(types.UID) bool) {
	s.handingOff.Store(&owns)
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, set := range s.objects {
		if !owns(uid) {
			s.count -= set.Len()
			delete(s.objects, uid)
		}
	}
}

// Resync is a no-op: nothing is cached that could be resynced.
func (s *seriesMap) Resync() error { return nil }

// setLocked stores (or with set == nil, deletes) an object's series, and
// records which series ended. s.mu must be held.
func (s *seriesMap) setLocked(uid types.UID, set *encode.SeriesSet) {
	if next := s.handingOff.Load(); set != nil && next != nil && !(*next)(uid) {
		// Rendered before handOff: another shard's now.
		set = nil
	}
	old := s.objects[uid]
	if set == nil {
		delete(s.objects, uid)
	} else {
		s.objects[uid] = set
		s.count += set.Len()
		// A series that ended and came back before the snapshot is not
		// stale: it will be sent with its new value.
		if len(s.stale) > 0 {
			for _, r := range set.Refs {
				delete(s.stale, r.Hash)
			}
		}
	}
	if old == nil {
		return
	}
	s.count -= old.Len()
	for i, r := range old.Refs {
		if set != nil && contains(set, r.Hash, i) {
			continue
		}
		s.stale[r.Hash] = staleEntry{labels: old.Labels(i)}
	}
}

// contains reports whether set has a series with the hash, looking first at
// the same position (objects usually render their series in the same order).
func contains(set *encode.SeriesSet, hash uint64, pos int) bool {
	if pos < len(set.Refs) && set.Refs[pos].Hash == hash {
		return true
	}
	for _, r := range set.Refs {
		if r.Hash == hash {
			return true
		}
	}
	return false
}

// staleEntry is a series that ended, waiting for its staleness marker.
type staleEntry struct {
	// labels are the series' encoded labels.
	labels []byte
	// seen is the timestamp (ms) of the first snapshot held back (hold)
	// since the series ended; 0 until then.
	seen int64
}

// staleLookback is how long a follower keeps the series that ended for the
// staleness markers it sends once it leads: Prometheus' query lookback
// delta (5m). A series that ended longer ago is no longer returned by
// queries anyway.
const staleLookback = 5 * time.Minute

// staleShrinkAt is the size past which the ended-series map is made anew
// once emptied: Go maps keep their buckets, so a spike of ended series
// (a namespace deleted) would otherwise hold its memory for good.
const staleShrinkAt = 1024

// snapshot appends every object's series and, unless hold is set, the
// series that ended (clearing those) to f, under the lock; it returns the
// number of live series. The sets are immutable, so the caller reads them
// unlocked.
//
// hold is set while the snapshot is not sent (a follower replica): then
// neither objects nor ended series are appended, and the ended series are
// kept for the first snapshot that is sent, for at most staleLookback, so
// that a replica that takes over still ends them.
func (s *seriesMap) snapshot(f *encode.Frame, hold bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if hold {
		cutoff := f.Timestamp - staleLookback.Milliseconds()
		for h, e := range s.stale {
			switch {
			case e.seen == 0:
				e.seen = f.Timestamp
				s.stale[h] = e
			case e.seen < cutoff:
				delete(s.stale, h)
			}
		}
		return s.count
	}
	start := len(f.Objects)
	for uid, set := range s.objects {
		f.Objects = append(f.Objects, encode.Object{Key: objectKey(uid), Set: set})
	}
	sortByAddress(f.Objects[start:])
	for h, e := range s.stale {
		f.Stale = append(f.Stale, encode.Stale{Hash: h, Labels: e.labels})
	}
	if len(s.stale) > staleShrinkAt {
		s.stale = make(map[uint64]staleEntry)
	} else {
		clear(s.stale)
	}
	return s.count
}

// objectKey is the key of an object in a frame: the FNV-1a hash of its
// UID, which is unique in the cluster.
func objectKey(uid types.UID) uint64 {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for i := 0; i < len(uid); i++ {
		h ^= uint64(uid[i])
		h *= prime64
	}
	return h
}

// sortByAddress orders objects by where their sets' label bytes lie in
// memory. A map hands its objects out in a random order, so the send path
// (expander, encoder) would otherwise jump across the heap from one set to
// the next; in address order its reads move mostly forward, and the sets
// stay in the same order from one snapshot to the next. The heap does not
// move, so an address is a stable key while its set lives.
func sortByAddress(objs []encode.Object) {
	slices.SortFunc(objs, func(a, b encode.Object) int { return cmp.Compare(bufAddress(a), bufAddress(b)) })
}

// bufAddress is the address of an object's label bytes, sortByAddress's key.
func bufAddress(o encode.Object) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(o.Set.Buf))) }
