package diskbuffer

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// setsOf returns a frame's sets by key.
func setsOf(f *encode.Frame) map[uint64]*encode.SeriesSet {
	m := make(map[uint64]*encode.SeriesSet, len(f.Objects))
	for _, o := range f.Objects {
		m[o.Key] = o.Set
	}
	return m
}

// requireShared checks that got holds the very sets of the frame that
// was appended.
func requireShared(t *testing.T, in map[uint64]*encode.SeriesSet, got *encode.Frame) {
	t.Helper()
	require.Len(t, got.Objects, len(in))
	for _, o := range got.Objects {
		require.Same(t, in[o.Key], o.Set, "object %x", o.Key)
	}
}

// requireDecoded checks that got holds none of the appended frame's sets.
func requireDecoded(t *testing.T, in map[uint64]*encode.SeriesSet, got *encode.Frame) {
	t.Helper()
	for _, o := range got.Objects {
		require.NotSame(t, in[o.Key], o.Set, "object %x", o.Key)
	}
}

// scribble overwrites a frame's slices, as a caller that reuses them for
// its next frame does.
func scribble(f *encode.Frame) {
	junk := &encode.SeriesSet{}
	for i := range f.Objects {
		f.Objects[i] = encode.Object{Key: uint64(i), Set: junk}
	}
	for i := range f.Stale {
		f.Stale[i] = encode.Stale{Hash: 1, Labels: []byte("junk")}
	}
	f.Timestamp = -1
}

func TestNextCaughtUpShares(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		cfg := partConfig(t, parts)
		cfg.DeltaRatio = 0.3 // keyframes and deltas
		l := mustOpen(t, cfg)
		defer l.Close()
		w := newWorld(21, 60)
		var in encode.Frame // the caller's frame, reused
		var keys, deltas int
		type held struct {
			f    *encode.Frame
			want canon
		}
		var ahead []held
		for i := range 80 {
			f := w.step()
			in.Timestamp = f.Timestamp
			in.Objects = append(in.Objects[:0], f.Objects...)
			in.Stale = append(in.Stale[:0], f.Stale...)
			want, sets := canonical(t, f), setsOf(f)
			before := l.Stats()
			require.NoError(t, l.Append(&in))
			scribble(&in)
			got, info, err := l.Next()
			require.NoError(t, err)
			requireShared(t, sets, got)
			require.Equal(t, want, canonical(t, got), "frame %d", i)
			after := l.Stats()
			require.Equal(t, after.Keyframes > before.Keyframes, info.Keyframe, "frame %d", i)
			require.Equal(t, f.Samples(), info.Samples)
			require.False(t, info.Resent)
			require.Zero(t, after.PendingFrames)
			if info.Keyframe {
				keys++
			} else {
				deltas++
			}
			// Up to three frames in flight, each still whole when acknowledged.
			ahead = append(ahead, held{got, want})
			if i%4 == 3 {
				for _, h := range ahead {
					require.Equal(t, h.want, canonical(t, h.f))
					require.NoError(t, l.Ack())
				}
				ahead = ahead[:0]
			}
		}
		require.Greater(t, keys, 3)
		require.Greater(t, deltas, 30)
		st := l.Stats()
		require.Zero(t, st.Corrupt)
		require.Equal(t, uint64(80), st.Acked)
		_, _, err := l.Next()
		require.ErrorIs(t, err, ErrEmpty)
	})
}

// pointerModel follows which sets the reader shares with the writer: a
// shared frame's are the writer's, a decoded keyframe's are all copies, and
// a decoded delta copies exactly the objects it changes.
type pointerModel struct {
	// state is the reader's set per key.
	state map[uint64]*encode.SeriesSet
	// prevIn is the writer's frame before the one checked.
	prevIn map[uint64]*encode.SeriesSet
}

// check checks frame got, read for the appended frame in.
func (m *pointerModel) check(t *testing.T, in map[uint64]*encode.SeriesSet, got *encode.Frame, info Info, shared bool) {
	t.Helper()
	switch {
	case shared:
		requireShared(t, in, got)
	case info.Keyframe:
		requireDecoded(t, in, got)
	default:
		for _, o := range got.Objects {
			if in[o.Key] == m.prevIn[o.Key] {
				require.Same(t, m.state[o.Key], o.Set, "unchanged object %x keeps the state's set", o.Key)
			} else {
				require.NotSame(t, in[o.Key], o.Set, "changed object %x is decoded", o.Key)
			}
		}
	}
	m.state, m.prevIn = setsOf(got), in
}

func TestNextBehindDecodesThenShares(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		cfg := partConfig(t, parts)
		cfg.DeltaRatio = 0.2
		l := mustOpen(t, cfg)
		defer l.Close()
		w := newWorld(22, 60)
		var m pointerModel
		for round, n := range []int{1, 3, 1, 1, 6, 2, 1, 9, 1, 4, 4, 1} {
			var want []canon
			var ins []map[uint64]*encode.SeriesSet
			for range n {
				f := w.step()
				require.NoError(t, l.Append(f))
				want, ins = append(want, canonical(t, f)), append(ins, setsOf(f))
			}
			for i := range n {
				got, info, err := l.Next()
				require.NoError(t, err)
				require.Equal(t, want[i], canonical(t, got), "round %d frame %d", round, i)
				m.check(t, ins[i], got, info, i == n-1)
				require.NoError(t, l.Ack())
			}
			_, _, err := l.Next()
			require.ErrorIs(t, err, ErrEmpty)
		}
		require.Greater(t, l.Stats().Keyframes, uint64(3))
	})
}

func TestReopenDoesNotShare(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		for _, kill := range []bool{true, false} {
			t.Run(map[bool]string{true: "kill", false: "close"}[kill], func(t *testing.T) {
				cfg := partConfig(t, parts)
				l := mustOpen(t, cfg)
				w := newWorld(23, 40)
				var want []canon
				var ins []map[uint64]*encode.SeriesSet
				for range 6 {
					f := w.step()
					require.NoError(t, l.Append(f))
					want, ins = append(want, canonical(t, f)), append(ins, setsOf(f))
				}
				// Two read, one acknowledged: one resent, four new.
				for range 2 {
					_, _, err := l.Next()
					require.NoError(t, err)
				}
				require.NoError(t, l.Ack())
				l2 := reopen(t, l, cfg, kill)
				defer l2.Close()
				for i := 1; i < 6; i++ {
					got, info, err := l2.Next()
					require.NoError(t, err)
					require.Equal(t, want[i], canonical(t, got))
					require.Equal(t, i == 1, info.Resent)
					requireDecoded(t, ins[i], got)
					require.NoError(t, l2.Ack())
				}
				// What l2 appends it shares again.
				f := w.step()
				require.NoError(t, l2.Append(f))
				got, info, err := l2.Next()
				require.NoError(t, err)
				require.True(t, info.Keyframe)
				requireShared(t, setsOf(f), got)
			})
		}
	})
}

func TestWriteFailureStopsSharing(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		cfg := partConfig(t, parts)
		fs := &faultFS{}
		cfg.FS = fs
		l := mustOpen(t, cfg)
		defer l.Close()
		w := newWorld(24, 40)
		var m pointerModel
		appendOK := func() (canon, map[uint64]*encode.SeriesSet) {
			t.Helper()
			f := w.step()
			require.NoError(t, l.Append(f))
			return canonical(t, f), setsOf(f)
		}
		next := func(want canon, in map[uint64]*encode.SeriesSet, shared bool) Info {
			t.Helper()
			got, info, err := l.Next()
			require.NoError(t, err)
			require.Equal(t, want, canonical(t, got))
			m.check(t, in, got, info, shared)
			require.NoError(t, l.Ack())
			return info
		}
		fail := func() {
			t.Helper()
			fs.full = true
			require.ErrorIs(t, l.Append(w.step()), syscall.ENOSPC)
			fs.full = false
		}

		want, in := appendOK()
		next(want, in, true)
		want, in = appendOK()
		fail() // a delta that does not make it
		next(want, in, false)
		want, in = appendOK()
		require.True(t, next(want, in, true).Keyframe, "a new segment, shared again")

		// Behind when it fails, at a delta and at a rotation.
		want1, in1 := appendOK()
		want2, in2 := appendOK()
		fail()
		fail()
		next(want1, in1, false)
		next(want2, in2, false)
		want, in = appendOK()
		next(want, in, true)
		want, in = appendOK()
		require.False(t, next(want, in, true).Keyframe)

		_, _, err := l.Next()
		require.ErrorIs(t, err, ErrEmpty)
		require.Zero(t, l.Stats().Corrupt)
	})
}

func TestCapDeletionThenShares(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		cfg := partConfig(t, parts)
		cfg.MaxBytes = minMaxBytes
		var dropped int
		cfg.OnDrop = func(f, _ int) { dropped += f }
		cfg.DeltaRatio = 0.02 // segments of ~3 frames
		l := mustOpen(t, cfg)
		defer l.Close()
		w := newWorld(25, 500) // ~30 kB keyframes
		var want []canon
		var ins []map[uint64]*encode.SeriesSet
		add := func(n int) {
			for range n {
				f := w.step()
				require.NoError(t, l.Append(f))
				want, ins = append(want, canonical(t, f)), append(ins, setsOf(f))
			}
		}

		// Caught up, the cap deletes only what was read.
		for range 60 {
			add(1)
			got, _, err := l.Next()
			require.NoError(t, err)
			requireShared(t, ins[len(ins)-1], got)
			require.NoError(t, l.Ack())
		}
		require.Zero(t, dropped)

		// Behind, in the middle of a segment that the cap deletes: the
		// reader goes on at the oldest segment left, from its keyframe.
		for {
			keys := l.Stats().Keyframes
			add(1)
			if l.Stats().Keyframes == keys {
				break // a delta after the frame read last, in its segment
			}
			_, _, err := l.Next()
			require.NoError(t, err)
			require.NoError(t, l.Ack())
		}
		read := len(want) - 1
		add(200)
		require.Positive(t, dropped)
		var m pointerModel
		first := true
		for {
			got, info, err := l.Next()
			if errors.Is(err, ErrEmpty) {
				break
			}
			require.NoError(t, err)
			if first {
				require.True(t, info.Keyframe)
				first = false
			}
			i := read + dropped
			require.Equal(t, want[i], canonical(t, got), "frame %d", i)
			m.check(t, ins[i], got, info, i == len(want)-1)
			read++
			require.NoError(t, l.Ack())
		}
		require.Equal(t, len(want), read+dropped, "every frame read or counted")
		st := l.Stats()
		require.Equal(t, uint64(dropped), st.DroppedFrames)
		require.Zero(t, st.PendingFrames)
	})
}

func TestCorruptHeadStopsSharing(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		cfg := partConfig(t, parts)
		l := mustOpen(t, cfg)
		defer l.Close()
		w := newWorld(26, 30)
		var ins []map[uint64]*encode.SeriesSet
		for range 3 {
			f := w.step()
			require.NoError(t, l.Append(f))
			ins = append(ins, setsOf(f))
		}
		// A byte of the second record, in the head.
		l.mu.Lock()
		off := l.segs[0].frames[0].end + 8
		l.mu.Unlock()
		var b [1]byte
		_, err := l.head.ReadAt(b[:], off)
		require.NoError(t, err)
		b[0] ^= 0x40
		_, err = l.head.WriteAt(b[:], off)
		require.NoError(t, err)

		got, _, err := l.Next()
		require.NoError(t, err)
		requireDecoded(t, ins[0], got)
		_, _, err = l.Next()
		require.ErrorIs(t, err, ErrEmpty, "the rest of the segment is skipped, the last record with it")
		st := l.Stats()
		require.Equal(t, uint64(1), st.Corrupt)
		require.Equal(t, uint64(2), st.CorruptFrames)

		f := w.step()
		require.NoError(t, l.Append(f))
		got, info, err := l.Next()
		require.NoError(t, err)
		require.True(t, info.Keyframe, "the head was sealed")
		requireShared(t, setsOf(f), got)
	})
}

// TestLostStateStopsSharing: a delta that follows a state the reader
// lost (a record it skipped while the writer was past the check for a
// sealed head) is decoded, and found not to apply, not shared.
func TestLostStateStopsSharing(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		cfg := partConfig(t, parts)
		l := mustOpen(t, cfg)
		defer l.Close()
		w := newWorld(27, 30)
		require.NoError(t, l.Append(w.step()))
		_, _, err := l.Next()
		require.NoError(t, err)
		require.NoError(t, l.Append(w.step()))
		l.rmu.Lock()
		l.dec.reset()
		l.rmu.Unlock()
		_, _, err = l.Next()
		require.ErrorIs(t, err, ErrEmpty)
		require.Equal(t, uint64(1), l.Stats().Corrupt)
	})
}

func TestSharedClosesReadSegment(t *testing.T) {
	cfg := testConfig(t)
	l := mustOpen(t, cfg)
	defer l.Close()
	w := newWorld(28, 30)
	require.NoError(t, l.Append(w.step()))
	require.NoError(t, l.Append(w.step()))
	for range 2 { // decoded: segment 1 is open
		_, _, err := l.Next()
		require.NoError(t, err)
		require.NoError(t, l.Ack())
	}
	require.NotNil(t, l.rf)
	l.needKey = true // segment 2, as after a failure
	require.NoError(t, l.Append(w.step()))
	_, info, err := l.Next()
	require.NoError(t, err)
	require.True(t, info.Keyframe)
	require.NoError(t, l.Ack())
	require.Equal(t, 1, l.Stats().Segments, "segment 1 was read and deleted")
	require.Nil(t, l.rf, "and its file closed")
}
