package queue

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEWMARate(t *testing.T) {
	var r ewmaRate
	r.tick(0, 10*time.Second)
	require.Zero(t, r.rate, "no events yet: nothing to average")
	r.tick(100, 10*time.Second)
	require.InDelta(t, 10, r.rate, 1e-9, "the first interval with events is taken as is")
	r.tick(0, 10*time.Second)
	require.InDelta(t, 8, r.rate, 1e-9, "10 + 0.2*(0-10)")
	r.tick(200, 10*time.Second)
	require.InDelta(t, 10.4, r.rate, 1e-9, "8 + 0.2*(20-8)")
}

// TestReshardDecision feeds one interval of load to a fresh resharder (so
// the averages equal that interval's rates) and checks the decision.
func TestReshardDecision(t *testing.T) {
	const interval = 10 * time.Second
	tests := []struct {
		name          string
		min, max, cur int
		load          shardLoad
		// wantDesired is the computed count before rounding; NaN when none.
		wantDesired float64
		want        int
	}{
		{
			name: "one shard half busy keeps up", min: 1, max: 50, cur: 1,
			// 1000/s in and out, 5 s of sending per 10 s: 0.5 ms per sample.
			load:        shardLoad{In: 10000, Out: 10000, SendTime: 5 * time.Second},
			wantDesired: 0.5, want: 1,
		},
		{
			name: "falling behind grows, backlog included", min: 1, max: 50, cur: 1,
			// 2000/s in, 1000/s out with the one shard always busy (1 ms per
			// sample), 5 s behind: 2000 + 5% of 5*2000 = 2500/s to send.
			load:        shardLoad{In: 20000, Out: 10000, SendTime: 10 * time.Second, Delay: 5},
			wantDesired: 2.5, want: 3,
		},
		{
			name: "within 30 % changes nothing", min: 1, max: 50, cur: 10,
			load:        shardLoad{In: 12000, Out: 10000, SendTime: 100 * time.Second},
			wantDesired: 12, want: 10,
		},
		{
			name: "just past 30 % grows", min: 1, max: 50, cur: 10,
			load:        shardLoad{In: 14000, Out: 10000, SendTime: 100 * time.Second},
			wantDesired: 14, want: 14,
		},
		{
			name: "capped at max_shards", min: 1, max: 4, cur: 2,
			load:        shardLoad{In: 100000, Out: 10000, SendTime: 20 * time.Second},
			wantDesired: 20, want: 4,
		},
		{
			name: "never grows while retrying", min: 1, max: 50, cur: 1,
			load:        shardLoad{In: 20000, Out: 10000, SendTime: 10 * time.Second, Retried: true},
			wantDesired: 2, want: 1,
		},
		{
			name: "shrinks when idle, down to min_shards", min: 2, max: 50, cur: 10,
			load:        shardLoad{In: 1000, Out: 1000, SendTime: time.Second, Delay: 1},
			wantDesired: 0.105, want: 2,
		},
		{
			name: "never shrinks while more than 10 s behind", min: 1, max: 50, cur: 10,
			// 100/s at 1 ms per sample wants 0.1 shards; with 20 s of
			// backlog (5% of 2000 samples per second) 0.2.
			load:        shardLoad{In: 1000, Out: 1000, SendTime: time.Second, Delay: 20},
			wantDesired: 0.2, want: 10,
		},
		{
			name: "a backlog (a disk buffer's, after an outage): growth while behind", min: 1, max: 50, cur: 1,
			load:        shardLoad{In: 20000, Out: 10000, SendTime: 10 * time.Second, Delay: 11},
			wantDesired: 0.001 * (2000 + 0.05*11*2000), want: 4,
		},
		{
			name: "nothing sent yet: no basis", min: 1, max: 50, cur: 3,
			load:        shardLoad{In: 5000},
			wantDesired: math.NaN(), want: 3,
		},
		{
			name: "dropped samples need no shards", min: 1, max: 50, cur: 1,
			// Half of what comes in is dropped: 1000/s to send at 1 ms.
			load:        shardLoad{In: 20000, Out: 10000, Dropped: 10000, SendTime: 10 * time.Second},
			wantDesired: 1, want: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newResharder(tt.min, tt.max, interval)
			desired, n := r.next(tt.cur, tt.load)
			if math.IsNaN(tt.wantDesired) {
				require.True(t, math.IsNaN(desired), "desired %v", desired)
			} else {
				require.InDelta(t, tt.wantDesired, desired, 1e-9)
			}
			require.Equal(t, tt.want, n)
		})
	}
}

// TestReshardSmoothing checks that the moving averages, not one interval,
// drive the count: a single busy interval stays inside the dead band, a
// lasting one moves the count, and an interval where nothing was sent
// changes nothing even though the averages still say to grow.
func TestReshardSmoothing(t *testing.T) {
	const interval = 10 * time.Second
	// 10000/s at 0.4 ms per sample: 4 shards.
	steady := shardLoad{In: 100000, Out: 100000, SendTime: 40 * time.Second}
	// Twice as much comes in: 8 shards.
	busy := shardLoad{In: 200000, Out: 100000, SendTime: 40 * time.Second}

	r := newResharder(1, 10, interval)
	desired, n := r.next(4, steady)
	require.InDelta(t, 4, desired, 1e-9)
	require.Equal(t, 4, n)
	desired, n = r.next(n, busy)
	require.InDelta(t, 4.8, desired, 1e-9, "one busy interval moves the average by a fifth")
	require.Equal(t, 4, n, "5 is within 30 %% of 4")
	desired, n = r.next(n, busy)
	require.InDelta(t, 5.44, desired, 1e-9)
	require.Equal(t, 6, n, "a lasting load grows")

	stalled := shardLoad{In: 200000, SendTime: 60 * time.Second}
	_, n = r.next(n, stalled)
	require.Equal(t, 6, n, "nothing got through: no change")
}
