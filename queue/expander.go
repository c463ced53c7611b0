package queue

import (
	"context"

	"github.com/kube-state-push/kube-state-push/encode"
)

// expander turns frames into the items an endpoint takes, in chunks; its
// scratch space is reused, so pushing a frame allocates nothing per series.
type expander struct {
	// items is the chunk being filled.
	items []Item
	// revived is scratch space for carried staleness markers.
	revived map[uint64]bool
}

// Expander turns frames into items as an endpoint does with the frames it
// is offered: every live sample, at its own time or the frame's, then a
// staleness marker for each series that ended, in chunks, and a flush. Its
// scratch space is reused between frames. It is for callers that look at a
// frame's samples themselves, such as tests and benchmarks.
type Expander struct {
	x expander
}

// Expand hands appendItems every item of fr in chunks, then calls flush,
// and returns the number of items appendItems reported queued.
func (e *Expander) Expand(ctx context.Context, fr *Frame, appendItems func(context.Context, []Item) int, flush func()) int {
	return e.x.push(ctx, funcAppender{add: appendItems, done: flush}, &fr.Frame, nil)
}

// funcAppender is an appender made of two functions.
type funcAppender struct {
	add  func(context.Context, []Item) int
	done func()
}

func (a funcAppender) appendItems(ctx context.Context, items []Item) int { return a.add(ctx, items) }
func (a funcAppender) flush()                                            { a.done() }

// chunkSize is how many samples an expander hands to an endpoint at a time.
const chunkSize = 4096

// push hands app every sample of fr, then a staleness marker for each
// series that ended in fr or in the carried (dropped) frames and is not
// live again in fr, and then flushes it. It returns the number of samples
// app queued.
func (x *expander) push(ctx context.Context, app appender, fr *encode.Frame, carry []encode.Stale) int {
	queued, _, _ := x.expand(ctx, app, fr, carry, nil)
	return queued
}

// pushThinned is push for a frame of a backlog that th thins: it hands app
// only the change points of each series and every staleness marker. It
// returns the number of samples app queued, of those handed to it, and
// of those left out.
func (x *expander) pushThinned(ctx context.Context, app appender, fr *encode.Frame, th *thinner) (queued, offered, thinned int) {
	return x.expand(ctx, app, fr, nil, th)
}

// expand is push, and with th pushThinned.
func (x *expander) expand(ctx context.Context, app appender, fr *encode.Frame, carry []encode.Stale, th *thinner) (queued, offered, thinned int) {
	ts := fr.Timestamp
	add := func(it Item) {
		offered++
		x.items = append(x.items, it)
		if len(x.items) >= chunkSize {
			queued += x.flush(ctx, app)
		}
	}
	for _, o := range fr.Objects {
		set := o.Set
		for i := range set.Refs {
			r := &set.Refs[i]
			if th != nil && !th.changed(r.Hash, r.Value) {
				thinned++
				continue
			}
			at := ts
			if set.Timestamps != nil {
				at = set.Timestamps[i] // a kubelet sample's own time
			}
			add(Item{
				Sample: encode.Sample{Labels: set.Labels(i), Value: r.Value, Timestamp: at},
				Hash:   r.Hash,
			})
		}
	}
	for _, st := range x.stillEnded(fr, carry) {
		add(Item{Sample: encode.Sample{Labels: st.Labels, Value: encode.StaleNaN, Timestamp: ts}, Hash: st.Hash})
	}
	for _, st := range fr.Stale {
		if th != nil {
			th.ended(st.Hash)
		}
		add(Item{Sample: encode.Sample{Labels: st.Labels, Value: encode.StaleNaN, Timestamp: ts}, Hash: st.Hash})
	}
	queued += x.flush(ctx, app)
	app.flush()
	return queued, offered, thinned
}

// stillEnded returns the carried staleness markers whose series are neither
// live in fr nor ended in it (which sends its own marker), once each.
func (x *expander) stillEnded(fr *encode.Frame, carry []encode.Stale) []encode.Stale {
	if len(carry) == 0 {
		return nil
	}
	if x.revived == nil {
		x.revived = make(map[uint64]bool)
	}
	clear(x.revived)
	for _, st := range carry {
		x.revived[st.Hash] = false
	}
	for _, o := range fr.Objects {
		for i := range o.Set.Refs {
			if _, ok := x.revived[o.Set.Refs[i].Hash]; ok {
				x.revived[o.Set.Refs[i].Hash] = true
			}
		}
	}
	for _, st := range fr.Stale {
		if _, ok := x.revived[st.Hash]; ok {
			x.revived[st.Hash] = true
		}
	}
	out := carry[:0]
	for _, st := range carry {
		if !x.revived[st.Hash] {
			x.revived[st.Hash] = true // once
			out = append(out, st)
		}
	}
	return out
}

// flush hands the chunk to app and empties it.
func (x *expander) flush(ctx context.Context, app appender) int {
	if len(x.items) == 0 {
		return 0
	}
	n := app.appendItems(ctx, x.items)
	clear(x.items) // drop label references for the GC
	x.items = x.items[:0]
	return n
}
