package queue

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"

	"github.com/kube-state-push/kube-state-push/encode"
)

// relabelKeepTicks is how many snapshots a cached relabeling outlives the
// last one its series was in. A series that ends gets its staleness marker
// in the next snapshot, which still finds it cached.
const relabelKeepTicks = 3

// relabelRebuildMin is the smallest peak cache size worth rebuilding the
// cache map after: below it the buckets a spike left behind cost little.
const relabelRebuildMin = 1024

// relabelWarnEvery rate-limits the log line about series that relabeling
// made invalid: the same rule breaks the same series every snapshot.
const relabelWarnEvery = time.Minute

// relabeler applies an endpoint's write_relabel_configs to what a snapshot
// queues on it, in front of the endpoint (an appender wrapping an appender).
//
// Series are relabeled once: the result is cached by the hash of the
// original labels, checked against the original bytes, so a steady-state
// snapshot does no relabeling and allocates nothing. Entries not seen for
// relabelKeepTicks snapshots are evicted, so the cache holds about the
// series of one snapshot. A Go map keeps its buckets after deletes, so once
// the cache has shrunk below a quarter of its peak (a spike of series
// ended) the live entries move to a fresh map and the memory goes back.
// Snapshots are told apart by their timestamp: all samples of one share it.
//
// A relabeler is used by the feed's goroutine only.
type relabeler struct {
	// next is the endpoint's shards.
	next appender
	// rules are the endpoint's validated write_relabel_configs.
	rules []*relabel.Config
	// limits are the endpoint's series_limits (limits.go), enforced on
	// the relabeled series.
	limits SeriesLimits
	// dropped counts the series dropped for a limit or an invalid name,
	// by reason, and truncated those sent with a value cut to fit; nil
	// counts nothing.
	dropped   map[string]prometheus.Counter
	truncated prometheus.Counter
	// log receives the rate-limited warning about invalid results.
	log *slog.Logger
	// lastWarn is when that warning was last logged.
	lastWarn time.Time

	// cache holds each series' relabeling, by the hash of its original
	// labels.
	cache map[uint64]*relabeled
	// peak is the most entries cache has held since it was made (or last
	// rebuilt): what its buckets were grown for.
	peak int
	// tick counts snapshots; ts is the timestamp of the current one.
	tick uint64
	ts   int64

	// out is the relabeled chunk handed to next, reused between calls.
	out []Item
	// lb, eb and set are scratch space for relabeling a new series.
	lb  *labels.Builder
	eb  encode.LabelsBuilder
	set encode.SeriesSet
}

// relabeled is the cached relabeling of one series.
type relabeled struct {
	// orig is the series' original encoded labels. It aliases the immutable
	// buffer of the series set it came from, and follows the series to the
	// set that renders it now, so that no old set is kept alive.
	orig []byte
	// labels is the relabeled series' encoded labels, and hash their hash;
	// labels is nil when relabeling drops the series.
	labels []byte
	hash   uint64
	// same is set when relabeling changed nothing: labels is then orig.
	same bool
	// reason, when labels is nil, is the drop reason of a series dropped
	// as invalid or past a limit; "" for one relabeling dropped on purpose.
	reason string
	// truncated is set when a label value was cut to a limit.
	truncated bool
	// seen is the last snapshot the series was in.
	seen uint64
}

// newRelabeler puts the rules, validated by Config.Validate, in front
// of next.
func newRelabeler(next appender, rules []*relabel.Config, log *slog.Logger) *relabeler {
	return &relabeler{
		next:  next,
		rules: rules,
		log:   log,
		cache: make(map[uint64]*relabeled),
		lb:    labels.NewBuilder(labels.EmptyLabels()),
	}
}

// flush passes the end of a frame on to the shards.
func (r *relabeler) flush() { r.next.flush() }

// appendItems relabels items and queues those kept on the shards. It
// returns what they return: the number of samples queued.
func (r *relabeler) appendItems(ctx context.Context, items []Item) int {
	if len(items) == 0 {
		return 0
	}
	if ts := items[0].Timestamp; ts != r.ts || r.tick == 0 {
		r.ts = ts
		r.tick++
		if r.tick%relabelKeepTicks == 0 {
			r.evict()
		}
	}
	for i := range items {
		it := &items[i]
		e := r.lookup(it)
		if e.labels == nil {
			if e.reason != "" && r.dropped != nil {
				r.dropped[e.reason].Inc()
			}
			continue
		}
		if e.truncated && r.truncated != nil {
			r.truncated.Inc()
		}
		r.out = append(r.out, Item{
			Sample: encode.Sample{Labels: e.labels, Value: it.Value, Timestamp: it.Timestamp},
			Hash:   e.hash,
		})
	}
	n := 0
	if len(r.out) > 0 {
		n = r.next.appendItems(ctx, r.out)
	}
	clear(r.out) // drop label references for the GC
	r.out = r.out[:0]
	return n
}

// lookup returns the series' cached relabeling, relabeling it first if it
// is not cached (or its hash collides with a cached series').
func (r *relabeler) lookup(it *Item) *relabeled {
	e := r.cache[it.Hash]
	switch {
	case e == nil:
		e = &relabeled{}
		r.cache[it.Hash] = e
		r.relabel(e, it)
	case sameSlice(e.orig, it.Labels):
	case encode.EqualLabels(e.orig, it.Labels):
		// The same series from a newer set of its object: follow it.
		e.orig = it.Labels
		if e.same {
			e.labels = it.Labels
		}
	default:
		// A hash collision: the entry now serves this series. Correct,
		// if slow should the two series keep alternating.
		r.relabel(e, it)
	}
	e.seen = r.tick
	return e
}

// sameSlice reports whether a and b are the same bytes in memory.
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// relabel fills e with the relabeling of it's labels. The result is a
// valid Remote-Write series (sorted unique names valid in the legacy
// scheme, no empty value, a __name__) or nothing: a series that relabeling
// leaves without a name, or with an invalid one, is dropped.
func (r *relabeler) relabel(e *relabeled, it *Item) {
	*e = relabeled{orig: it.Labels}
	ls, err := encode.DecodeLabels(it.Labels)
	if err != nil {
		// The snapshot's own encoding: cannot happen.
		r.warn("decoding labels to relabel; dropping the series", "err", err)
		return
	}
	r.lb.Reset(labels.EmptyLabels())
	for _, l := range ls {
		r.lb.Set(l.Name, l.Value)
	}
	if !relabel.ProcessBuilder(r.lb, r.rules...) {
		return
	}
	if r.limits.enabled() {
		if e.reason, e.truncated = r.limits.apply(r.lb); e.reason != "" {
			r.warn("a series is past the endpoint's series_limits; dropping it", "reason", e.reason)
			return
		}
	}
	r.eb.Reset()
	named, invalid := false, ""
	r.lb.Range(func(l labels.Label) {
		if !model.LegacyValidation.IsValidLabelName(l.Name) {
			invalid = l.Name
		}
		named = named || l.Name == encode.MetricName
		r.eb.Add(l.Name, l.Value)
	})
	switch {
	case invalid != "":
		r.warn("an invalid label name; dropping the series", "label", invalid)
		e.reason, e.truncated = ReasonInvalidLabels, false
		return
	case !named:
		return // as Prometheus: a series without a name is not sent
	}
	r.set.Reset()
	r.eb.AppendTo(&r.set, 0)
	if encode.EqualLabels(r.set.Buf, it.Labels) {
		e.labels, e.hash, e.same = it.Labels, it.Hash, true
		return
	}
	e.labels = bytes.Clone(r.set.Buf)
	e.hash = r.set.Refs[0].Hash
}

// evict removes the series not seen for relabelKeepTicks snapshots. It runs
// every relabelKeepTicks snapshots, so an entry outlives its series by
// fewer than twice that. Entries are only added in between, so the cache
// is at its largest just before.
//
// When fewer than a quarter of the peak's entries are left, and the peak
// was at least relabelRebuildMin, the live entries are copied into a fresh
// map so the old one's buckets can be collected: deleting from a Go map
// never shrinks it (golang/go#20135). The quarter keeps a cache that
// merely varies from rebuilding, and with it the steady state allocation
// free; a rebuild copies at most a quarter of the peak, once per spike.
func (r *relabeler) evict() {
	r.peak = max(r.peak, len(r.cache))
	for h, e := range r.cache {
		if r.tick-e.seen > relabelKeepTicks {
			delete(r.cache, h)
		}
	}
	if r.peak >= relabelRebuildMin && len(r.cache) < r.peak/4 {
		fresh := make(map[uint64]*relabeled, len(r.cache))
		maps.Copy(fresh, r.cache)
		r.cache = fresh
		r.peak = len(fresh)
	}
}

// warn logs at most once per relabelWarnEvery.
func (r *relabeler) warn(msg string, args ...any) {
	if time.Since(r.lastWarn) < relabelWarnEvery {
		return
	}
	r.lastWarn = time.Now()
	r.log.Warn(msg, args...)
}
