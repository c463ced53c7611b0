package diskbuffer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// addTimed adds kubelet-style objects to frame k of a world: series that
// carry their own sample times, one object always there, one gone every
// third frame.
func addTimed(f *encode.Frame, k int) {
	timed := func(key uint64, n int, at int64, value float64) *encode.SeriesSet {
		s := series(key, n, 0, func(i int) float64 { return value + float64(i) })
		for i := range n {
			s.Timestamps = append(s.Timestamps, at-int64(i*7))
		}
		return s
	}
	f.Objects = append(f.Objects, encode.Object{Key: 1 << 62, Set: timed(1<<62, 30, f.Timestamp-1500, float64(k))})
	if k%3 != 2 {
		f.Objects = append(f.Objects, encode.Object{Key: 1<<62 + 1, Set: timed(1<<62+1, 9, f.Timestamp-900, -float64(k))})
	}
}

// record is one record of a segment file.
type record struct {
	// start and end are its frame's offsets in the file.
	start, end int64
	// more is set when its frame goes on in the next record.
	more bool
}

// segmentRecords lists the records of a segment file.
func segmentRecords(t *testing.T, path string) []record {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	var recs []record
	var off int64
	for off < fi.Size() {
		rec, next, err := readFrame(f, off, fi.Size(), nil)
		require.NoError(t, err)
		h, _, err := parseHeader(rec)
		require.NoError(t, err)
		recs = append(recs, record{start: off, end: next, more: h.more})
		off = next
	}
	return recs
}

// Frames cut into many records come back whole, decoded after a reopen,
// with kubelet-style sets and staleness markers that refer to sets
// removed or changed records earlier; the pending counts are per frame.
func TestFramesSpanRecords(t *testing.T) {
	cfg := partConfig(t, smallParts)
	cfg.DeltaRatio = 0.5
	l := mustOpen(t, cfg)
	w := newWorld(41, 40)
	var want []canon
	samples := 0
	for k := range 30 {
		f := w.step()
		addTimed(f, k)
		require.NoError(t, l.Append(f))
		want = append(want, canonical(t, f))
		samples += f.Samples()
	}
	st := l.Stats()
	require.Equal(t, 30, st.PendingFrames)
	require.Equal(t, samples, st.PendingSamples)
	require.NoError(t, l.Close())

	records, keys := 0, 0
	for i := 1; i <= st.Segments; i++ {
		recs := segmentRecords(t, filepath.Join(cfg.Dir, segmentName(uint64(i))))
		records += len(recs)
		require.False(t, recs[len(recs)-1].more, "segment %d ends with a frame's last record", i)
		if recs[0].more {
			keys++
		}
	}
	require.Greater(t, records, 5*len(want), "frames span records")
	require.Equal(t, st.Segments, keys, "every keyframe spans records")

	l = mustOpen(t, cfg)
	defer l.Close()
	require.Equal(t, 30, l.Stats().PendingFrames)
	got, _ := readAll(t, l)
	require.Equal(t, want, got)
	require.Zero(t, l.Stats().Corrupt)
}

// A crash in the middle of a frame's records leaves its segment readable
// up to the frame before: the cut frame is bad data, counted once, and
// reading goes on in the next segment.
func TestCutFrame(t *testing.T) {
	for _, tc := range []struct {
		name string
		// cut returns the length to cut the segment to, given its records
		// and where the last frame starts among them.
		cut func(recs []record, first int) int64
	}{
		{"after a whole record", func(recs []record, first int) int64 { return recs[first].end }},
		{"inside a record", func(recs []record, first int) int64 { return recs[first+1].end - 3 }},
		{"first record cut", func(recs []record, first int) int64 { return recs[first].start + 5 }},
	} {
		for _, key := range []bool{true, false} {
			name := tc.name + map[bool]string{true: "/keyframe", false: "/delta"}[key]
			t.Run(name, func(t *testing.T) {
				cfg := partConfig(t, smallParts)
				cfg.DeltaRatio = 100
				w := newWorld(42, 30)
				l := mustOpen(t, cfg)
				want := appendAll(t, l, w, 4)
				// The frame to cut: a keyframe in a segment of its own,
				// or a delta that changes enough to span records.
				if key {
					require.NoError(t, l.Close())
					l = mustOpen(t, cfg)
				} else {
					for range 5 {
						w.add()
					}
				}
				require.NoError(t, l.Append(w.step()))
				require.NoError(t, l.Close())

				seg := filepath.Join(cfg.Dir, segmentName(uint64(map[bool]int{true: 2, false: 1}[key])))
				recs := segmentRecords(t, seg)
				first := len(recs) - 1
				for first > 0 && recs[first-1].more {
					first--
				}
				require.Greater(t, len(recs)-first, 2, "the last frame spans records")
				require.NoError(t, os.Truncate(seg, tc.cut(recs, first)))

				l = mustOpen(t, cfg)
				defer l.Close()
				got, _ := readAll(t, l)
				require.Equal(t, want, got)
				st := l.Stats()
				require.Equal(t, uint64(1), st.Corrupt)
				require.Equal(t, uint64(1), st.CorruptFrames)
				more := appendAll(t, l, w, 3)
				got, _ = readAll(t, l)
				require.Equal(t, more, got, "the log goes on in a new segment")
			})
		}
	}
}

// A record of another frame among a frame's records is bad data: the
// segment is skipped from there, and nothing of either frame is handed
// out.
func TestRecordOfAnotherFrame(t *testing.T) {
	w := newWorld(43, 20)
	enc := newEncoder()
	enc.partBytes = smallParts
	var key, delta recordList
	require.NoError(t, enc.keyframe(w.frame(), &key))
	require.NoError(t, enc.delta(w.step(), &delta))
	require.Greater(t, len(key.recs), 2)
	other := newEncoder()
	var good recordList
	require.NoError(t, other.keyframe(w.step(), &good))

	cfg := testConfig(t)
	seg := appendFrame(appendFrame(nil, key.recs[0]), delta.recs[len(delta.recs)-1])
	require.NoError(t, os.WriteFile(filepath.Join(cfg.Dir, segmentName(1)), seg, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.Dir, segmentName(2)), good.segment, 0o600))
	l := mustOpen(t, cfg)
	defer l.Close()
	got, infos := readAll(t, l)
	require.Len(t, got, 1)
	require.True(t, infos[0].Keyframe)
	require.Equal(t, uint64(1), l.Stats().Corrupt)
	require.ErrorContains(t, l.Stats().LastCorrupt, "another frame")
}

// flakyFS fails one chosen write (half of it written, as a disk that
// fills mid-write does).
type flakyFS struct {
	osFS
	// writes counts the writes to segment files; failOn is the one to
	// fail (0: none).
	writes, failOn int
}

type flakyFile struct {
	File
	fs *flakyFS
}

func (f *flakyFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := f.osFS.OpenFile(name, flag, perm)
	if err != nil || filepath.Ext(name) != segmentExt {
		return file, err
	}
	return flakyFile{File: file, fs: f}, nil
}

func (f flakyFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.writes++
	if f.fs.writes == f.fs.failOn {
		n, _ := f.File.WriteAt(b[:len(b)/2], off)
		return n, syscall.ENOSPC
	}
	return f.File.WriteAt(b, off)
}

// A write that fails in the middle of a frame's records costs that frame
// only: the head is cut back to the frame before, and what follows is
// read after it, with nothing counted as bad data, then or after a
// reopen.
func TestWriteFailureMidFrame(t *testing.T) {
	cfg := partConfig(t, smallParts)
	fs := &flakyFS{}
	cfg.FS = fs
	l := mustOpen(t, cfg)
	w := newWorld(44, 30)
	var want []canon
	failed := 0
	for i := range 40 {
		// The second record of a frame that has several: a delta with
		// five new objects, then the keyframe after that failure.
		fail := i%5 == 3 || i%5 == 4
		if i%5 == 3 {
			for range 5 {
				w.add()
			}
		}
		if fail {
			fs.failOn = fs.writes + 2
		}
		f := w.step()
		err := l.Append(f)
		if fail {
			require.ErrorIs(t, err, syscall.ENOSPC, "frame %d", i)
			failed++
			continue
		}
		require.NoError(t, err, "frame %d", i)
		want = append(want, canonical(t, f))
	}
	require.Equal(t, 16, failed)
	require.Equal(t, len(want), l.Stats().PendingFrames)
	// Handed out, not acknowledged: the segments stay for the reopen.
	for i := range want {
		got, _, err := l.Next()
		require.NoError(t, err)
		require.Equal(t, want[i], canonical(t, got), "frame %d", i)
	}
	_, _, err := l.Next()
	require.ErrorIs(t, err, ErrEmpty)
	require.Zero(t, l.Stats().Corrupt, "the partial frames were cut off")
	require.NoError(t, l.Ack())
	require.NoError(t, l.Close())

	// The files hold nothing of them either.
	cfg.FS = nil
	l = mustOpen(t, cfg)
	defer l.Close()
	got, infos := readAll(t, l)
	require.Equal(t, want[1:], got)
	for _, info := range infos {
		require.True(t, info.Resent)
	}
	require.Zero(t, l.Stats().Corrupt)
}

// randomSets are n objects of 100 series whose values are random: a
// frame that changes them all is a delta of ~1 kB per object that does
// not compress.
func randomSets(rng *rand.Rand, n int, ts int64) *encode.Frame {
	f := &encode.Frame{Timestamp: ts}
	for k := range n {
		s := series(uint64(k)+1, 100, 0, func(int) float64 { return rng.Float64() })
		f.Objects = append(f.Objects, encode.Object{Key: uint64(k) + 1, Set: s})
	}
	return f
}

// A delta the size cap has no room for once only the head is left (cut
// off in the middle of its records, when they are many) is written as a
// keyframe in a new segment instead, which lets the head go; its unsent
// frames are counted, once each, and the rest read.
func TestCapNoRoomForDelta(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		cfg := partConfig(t, parts)
		cfg.MaxBytes = minMaxBytes
		cfg.DeltaRatio = 100 // only the cap starts a segment
		var dropped, droppedSamples int
		cfg.OnDrop = func(f, s int) { dropped += f; droppedSamples += s }
		l := mustOpen(t, cfg)
		defer l.Close()
		rng := rand.New(rand.NewPCG(45, 1))
		var want []canon
		samples := 0
		for i := range 150 { // ~2.5 MB of deltas
			f := randomSets(rng, 20, int64(i)*30_000)
			require.NoError(t, l.Append(f))
			want = append(want, canonical(t, f))
			samples += f.Samples()
		}
		st := l.Stats()
		require.GreaterOrEqual(t, st.Keyframes, uint64(3), "the cap started segments")
		require.LessOrEqual(t, st.Bytes, cfg.MaxBytes)
		require.Positive(t, dropped)
		require.Equal(t, uint64(dropped), st.DroppedFrames)
		require.Equal(t, uint64(droppedSamples), st.DroppedSamples)
		require.Equal(t, len(want)-dropped, st.PendingFrames)
		got, infos := readAll(t, l)
		require.Equal(t, want[dropped:], got, "every frame read or counted")
		require.True(t, infos[0].Keyframe)
		require.Zero(t, l.Stats().Corrupt)
		pending := 0
		for _, info := range infos {
			pending += info.Samples
		}
		require.Equal(t, samples, droppedSamples+pending)
	})
}

// Staleness markers refer to sets removed and changed in earlier records
// of their frame, and stay references.
func TestDeltaAcrossRecords(t *testing.T) {
	const n = 40
	sets := make([]*encode.SeriesSet, 6)
	f := &encode.Frame{}
	for i := range sets {
		sets[i] = series(uint64(i)+1, n, 0, func(int) float64 { return 1 })
		f.Objects = append(f.Objects, encode.Object{Key: uint64(i) + 1, Set: sets[i]})
	}
	enc, dec := newEncoder(), newDecoder()
	enc.partBytes = 256
	apply := func(recs [][]byte) *encode.Frame {
		t.Helper()
		var got encode.Frame
		for i, rec := range recs {
			h, body, err := splitRecord(rec)
			require.NoError(t, err)
			require.Equal(t, i < len(recs)-1, h.more)
			require.NoError(t, dec.apply(h, body, &got))
		}
		return &got
	}
	var key recordList
	require.NoError(t, enc.keyframe(f, &key))
	apply(key.recs)

	// Object 1 removed, objects 2..5 relabelled (series 0 new): every old
	// series 0 and all of object 1's go stale.
	next := &encode.Frame{Timestamp: 30_000}
	for i := 1; i < len(sets); i++ {
		s := sets[i]
		if i < 5 {
			s = series(uint64(i)+1, n, 1, func(int) float64 { return 1 })
			next.Stale = append(next.Stale, encode.Stale{Hash: sets[i].Refs[0].Hash, Labels: sets[i].Labels(0)})
		}
		next.Objects = append(next.Objects, encode.Object{Key: uint64(i) + 1, Set: s})
	}
	for j := range n {
		next.Stale = append(next.Stale, encode.Stale{Hash: sets[0].Refs[j].Hash, Labels: sets[0].Labels(j)})
	}
	var delta recordList
	require.NoError(t, enc.delta(next, &delta))
	require.Greater(t, len(delta.recs), 2)
	require.Equal(t, canonical(t, next), canonical(t, apply(delta.recs)))
	_, body, err := splitRecord(delta.recs[len(delta.recs)-1])
	require.NoError(t, err)
	require.Less(t, len(body), 4*len(next.Stale)+enc.partBytes, "markers as references")
}

// Writing a keyframe of 100k series allocates a bounded amount (its
// records' scratch space, the writer's index of objects), not its body:
// that was 12 MB here, and more than five times that in garbage and
// copies.
func TestKeyframeMemoryBounded(t *testing.T) {
	f := clusterFrame(1_700, 100)
	require.Greater(t, f.Samples(), 100_000)
	cfg := testConfig(t)
	l := mustOpen(t, cfg)
	defer l.Close()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	require.NoError(t, l.Append(f))
	runtime.ReadMemStats(&ms)
	alloc := ms.TotalAlloc - before
	t.Logf("a keyframe of %d series allocated %d kB", f.Samples(), alloc>>10)
	if !raceDetector { // the unit tests without -race (make test-arm64) check it
		require.Less(t, alloc, uint64(2<<20))
	}
	require.LessOrEqual(t, cap(l.enc.body), keepBytes)
	require.LessOrEqual(t, cap(l.enc.out), keepBytes)

	// Read back decoded: one record at a time.
	l.mu.Lock()
	l.dropLastLocked()
	l.mu.Unlock()
	got, _, err := l.Next()
	require.NoError(t, err)
	require.Equal(t, canonical(t, f), canonical(t, got))
	require.LessOrEqual(t, cap(l.rbuf), keepBytes)
	require.NotZero(t, cap(l.rbuf))
}

// noise is a set of n series whose labels do not compress: random hex.
func noise(n int) *encode.SeriesSet {
	rng := rand.New(rand.NewPCG(1, 2))
	var b encode.LabelsBuilder
	s := &encode.SeriesSet{}
	for i := range n {
		b.Reset()
		b.Add(encode.MetricName, "noise")
		b.Add("id", fmt.Sprintf("%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()))
		b.AppendTo(s, float64(i))
	}
	return s
}

// Scratch space that grew past keepBytes is dropped after use: for an
// object whose set alone is larger (here, whose record does not compress
// below it either), and for a frame in one record as the first format
// wrote them (as a huge partBytes writes it). The compressed copy grows to
// about its compressed length, so the first-format record's stays below
// keepBytes and is kept.
func TestOversizedScratchDropped(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts int
		frame *encode.Frame
		// readDropped: the record read is larger than keepBytes too, and
		// so is its compressed copy.
		readDropped bool
	}{
		{"one huge object", 0, &encode.Frame{Objects: []encode.Object{{Key: 1, Set: noise(80_000)}}}, true},
		{"first-format record", 1 << 30, clusterFrame(400, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := partConfig(t, tc.parts)
			l := mustOpen(t, cfg)
			require.NoError(t, l.Append(tc.frame))
			require.Zero(t, cap(l.enc.body))
			if tc.readDropped {
				require.Zero(t, cap(l.enc.out))
			} else {
				require.NotZero(t, cap(l.enc.out))
				require.LessOrEqual(t, cap(l.enc.out), keepBytes)
			}
			require.NoError(t, l.Close())
			l = mustOpen(t, cfg)
			defer l.Close()
			got, _, err := l.Next()
			require.NoError(t, err)
			require.Equal(t, canonical(t, tc.frame), canonical(t, got))
			if tc.readDropped {
				require.Zero(t, cap(l.rbuf))
			} else {
				require.NotZero(t, cap(l.rbuf))
				require.LessOrEqual(t, cap(l.rbuf), keepBytes)
			}
		})
	}
}

// A frame that holds a key twice is refused, also once its keyframe's
// first records are written when the second is met: they are cut off, and
// the log reads as if the frame had never come.
func TestDuplicateKeyRefused(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		cfg := partConfig(t, parts)
		l := mustOpen(t, cfg)
		w := newWorld(46, 20)
		twice := func(f *encode.Frame) *encode.Frame {
			d := *f
			d.Objects = append(slices.Clone(f.Objects), f.Objects[0])
			return &d
		}
		f := w.frame()
		require.ErrorIs(t, l.Append(twice(f)), errDuplicateKey, "a keyframe")
		require.NoError(t, l.Append(f))
		g := w.step()
		require.ErrorIs(t, l.Append(twice(g)), errDuplicateKey, "a delta")
		h := w.step()
		require.NoError(t, l.Append(h))
		require.NoError(t, l.Close())

		l = mustOpen(t, cfg)
		defer l.Close()
		got, _ := readAll(t, l)
		require.Equal(t, []canon{canonical(t, f), canonical(t, h)}, got)
		require.Zero(t, l.Stats().Corrupt)
	})
}
