package queue

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// TestRingKeepsOrderAcrossTheWrap pushes and takes runs of every length
// through a small ring, so that both runs of push and take cross the end of
// its buffer at every offset, against a plain FIFO; taken slots hold no
// labels afterwards.
func TestRingKeepsOrderAcrossTheWrap(t *testing.T) {
	const capacity = 7
	r := newRing(capacity)
	rnd := rand.New(rand.NewPCG(1, 2))
	var model []encode.Sample
	next := 0
	sample := func() encode.Sample {
		next++
		return encode.Sample{Labels: []byte(strconv.Itoa(next)), Value: float64(next), Timestamp: int64(next)}
	}
	for step := 0; step < 2000; step++ {
		if rnd.IntN(2) == 0 {
			free := capacity - len(model)
			in := make([]encode.Sample, rnd.IntN(free+1))
			for i := range in {
				in[i] = sample()
			}
			require.Equal(t, len(in), r.push(context.Background(), asItems(in)))
			model = append(model, in...)
		} else {
			most := rnd.IntN(capacity + 2)
			got := r.take([]encode.Sample{{Value: -1}}, most)
			want := model[:min(most, len(model))]
			require.Equal(t, append([]encode.Sample{{Value: -1}}, want...), got, "step %d", step)
			model = model[len(want):]
		}
		require.Equal(t, len(model), r.len())
		for i := range r.buf {
			held := (i-r.head+capacity)%capacity < r.n
			require.Equal(t, held, r.buf[i].Labels != nil, "slot %d (head %d, n %d)", i, r.head, r.n)
		}
	}
}

// TestRingPushBlocksWhileFull shows a push of more than the ring holds
// waiting for takes, and a cancelled push returning what it appended.
func TestRingPushBlocksWhileFull(t *testing.T) {
	r := newRing(3)
	in := []encode.Sample{{Value: 1, Labels: []byte("a")}, {Value: 2, Labels: []byte("b")}, {Value: 3, Labels: []byte("c")}, {Value: 4, Labels: []byte("d")}, {Value: 5, Labels: []byte("e")}}
	done := make(chan int)
	go func() { done <- r.push(context.Background(), asItems(in)) }()
	var got []encode.Sample
	for len(got) < len(in) {
		n := len(got)
		if got = r.take(got, 2); len(got) == n {
			<-r.notEmpty // empty: wait for the push to append more
		}
	}
	require.Equal(t, len(in), <-done)
	require.Equal(t, in, got)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.Equal(t, 3, r.push(ctx, asItems(in)), "a full ring and a cancelled context: only what fits")
}

// asItems wraps samples as the items Append takes.
func asItems(samples []encode.Sample) []Item {
	out := make([]Item, len(samples))
	for i, s := range samples {
		out[i] = Item{Sample: s, Hash: uint64(i)}
	}
	return out
}
