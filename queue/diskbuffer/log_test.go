package diskbuffer

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// appendAll appends n frames of w and returns their canonical forms.
func appendAll(t *testing.T, l *Log, w *world, n int) []canon {
	t.Helper()
	var want []canon
	for range n {
		f := w.step()
		require.NoError(t, l.Append(f))
		want = append(want, canonical(t, f))
	}
	return want
}

// readAll reads and acknowledges every frame left.
func readAll(t *testing.T, l *Log) ([]canon, []Info) {
	t.Helper()
	var got []canon
	var infos []Info
	for {
		f, info, err := l.Next()
		if errors.Is(err, ErrEmpty) {
			return got, infos
		}
		require.NoError(t, err)
		require.Equal(t, f.Samples(), info.Samples)
		got = append(got, canonical(t, f))
		infos = append(infos, info)
		require.NoError(t, l.Ack())
	}
}

func TestRoundTrip(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		cfg := partConfig(t, parts)
		cfg.DeltaRatio = 0.5 // rotate often
		l := mustOpen(t, cfg)
		defer l.Close()
		w := newWorld(1, 50)

		// Read-ahead: three frames handed out before their Acks, all valid.
		want := appendAll(t, l, w, 3)
		var ahead []*encode.Frame
		for range 3 {
			f, _, err := l.Next()
			require.NoError(t, err)
			ahead = append(ahead, f)
		}
		_, _, err := l.Next()
		require.ErrorIs(t, err, ErrEmpty)
		for i, f := range ahead {
			require.Equal(t, want[i], canonical(t, f), "frame %d", i)
		}
		require.Equal(t, 3, l.Stats().InFlight)
		for i := range 3 {
			require.NoError(t, l.Ack())
			require.Equal(t, 2-i, l.Stats().InFlight, "after %d acks", i+1)
		}

		for round := range 5 {
			want := appendAll(t, l, w, 40)
			got, infos := readAll(t, l)
			require.Equal(t, len(want), len(got), "round %d", round)
			for i := range want {
				require.Equal(t, want[i], got[i], "round %d frame %d", round, i)
				require.False(t, infos[i].Resent)
			}
		}
		st := l.Stats()
		require.Greater(t, st.Keyframes, uint64(3), "the segments rotated")
		require.Zero(t, st.Corrupt)
		require.Zero(t, st.PendingFrames)
		require.Equal(t, 1, st.Segments, "read segments are deleted")
	})
}

func TestRestartResumes(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		for _, kill := range []bool{true, false} {
			name := map[bool]string{true: "kill", false: "close"}[kill]
			t.Run(name, func(t *testing.T) {
				cfg := partConfig(t, parts)
				cfg.DeltaRatio = 0.3
				l := mustOpen(t, cfg)
				w := newWorld(2, 30)
				want := appendAll(t, l, w, 40)
				for range 20 {
					_, _, err := l.Next()
					require.NoError(t, err)
				}
				for range 17 {
					require.NoError(t, l.Ack())
				}
				require.Equal(t, 3, l.Stats().InFlight)
				l2 := reopen(t, l, cfg, kill)
				defer l2.Close()
				require.Equal(t, 23, l2.Stats().PendingFrames)
				require.Zero(t, l2.Stats().InFlight, "a new Log has handed out nothing")
				got, infos := readAll(t, l2)
				require.Equal(t, want[17:], got)
				for i, info := range infos {
					require.Equal(t, i < 3, info.Resent, "frame %d", 17+i)
				}
				// Appending after the restart goes on from a keyframe.
				more := appendAll(t, l2, w, 5)
				got, infos = readAll(t, l2)
				require.Equal(t, more, got)
				require.True(t, infos[0].Keyframe)
			})
		}
	})
}

func TestCapDeletionCounted(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		cfg := partConfig(t, parts)
		cfg.MaxBytes = minMaxBytes
		var frames, samples int
		cfg.OnDrop = func(f, s int) { frames += f; samples += s }
		cfg.DeltaRatio = 0.02 // segments of ~3 frames
		l := mustOpen(t, cfg)
		defer l.Close()
		w := newWorld(3, 500) // ~30 kB keyframes
		want := appendAll(t, l, w, 250)
		st := l.Stats()
		require.LessOrEqual(t, st.Bytes, cfg.MaxBytes)
		require.Positive(t, frames)
		require.Equal(t, uint64(frames), st.DroppedFrames)
		require.Equal(t, uint64(samples), st.DroppedSamples)
		got, _ := readAll(t, l)
		require.Equal(t, len(want), frames+len(got), "every frame read or counted")
		require.Equal(t, want[frames:], got, "the newest frames survive, decodable")
	})
}

func TestCorruptDataSkipped(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		t.Run("flipped byte", func(t *testing.T) {
			cfg := partConfig(t, parts)
			w := newWorld(4, 40)
			var want [][]canon
			for range 3 { // three segments: each Open starts one
				l := mustOpen(t, cfg)
				want = append(want, appendAll(t, l, w, 10))
				require.NoError(t, l.Close())
			}
			// A byte in the middle of segment 2.
			p := filepath.Join(cfg.Dir, segmentName(2))
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[len(b)/2] ^= 0x40
			require.NoError(t, os.WriteFile(p, b, 0o600))

			l := mustOpen(t, cfg)
			defer l.Close()
			got, _ := readAll(t, l)
			st := l.Stats()
			require.Equal(t, uint64(1), st.Corrupt)
			skipped := int(st.CorruptFrames)
			require.Positive(t, skipped)
			require.Equal(t, want[0], got[:10])
			require.Equal(t, want[1][:10-skipped], got[10:20-skipped], "segment 2 up to the bad record")
			require.Equal(t, want[2], got[20-skipped:], "segment 3 from its keyframe")
		})
		t.Run("torn tail", func(t *testing.T) {
			cfg := partConfig(t, parts)
			w := newWorld(5, 40)
			l := mustOpen(t, cfg)
			want := appendAll(t, l, w, 10)
			require.NoError(t, l.Close())
			p := filepath.Join(cfg.Dir, segmentName(1))
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(p, fi.Size()-3))
			l = mustOpen(t, cfg)
			defer l.Close()
			got, _ := readAll(t, l)
			require.Equal(t, want[:9], got)
			require.Equal(t, uint64(1), l.Stats().Corrupt)
			// The log goes on in a new segment.
			more := appendAll(t, l, w, 3)
			got, _ = readAll(t, l)
			require.Equal(t, more, got)
		})
		t.Run("bad checkpoint", func(t *testing.T) {
			cfg := partConfig(t, parts)
			l := mustOpen(t, cfg)
			want := appendAll(t, l, newWorld(6, 10), 5)
			require.NoError(t, l.Close())
			require.NoError(t, os.WriteFile(filepath.Join(cfg.Dir, checkpointName), []byte("garbage"), 0o600))
			l = mustOpen(t, cfg)
			defer l.Close()
			got, _ := readAll(t, l)
			require.Equal(t, want, got, "read again from the oldest segment")
			require.Equal(t, uint64(1), l.Stats().Corrupt)
		})
	})
}

// faultFS fails writes, syncs and creations while full is set, as a full
// disk does.
type faultFS struct {
	osFS
	full bool
}

type faultFile struct {
	File
	fs *faultFS
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if f.full && flag&os.O_CREATE != 0 {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	file, err := f.osFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return faultFile{File: file, fs: f}, nil
}

func (f faultFile) WriteAt(b []byte, off int64) (int, error) {
	if f.fs.full {
		// Half of it makes it, as when the disk fills mid-write.
		n, _ := f.File.WriteAt(b[:len(b)/2], off)
		return n, syscall.ENOSPC
	}
	return f.File.WriteAt(b, off)
}

func TestWriteFailureRecovers(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		cfg := partConfig(t, parts)
		fs := &faultFS{}
		cfg.FS = fs
		cfg.DeltaRatio = 0.5
		l := mustOpen(t, cfg)
		defer l.Close()
		w := newWorld(7, 40)
		var want []canon
		for i := range 60 {
			fs.full = i%7 == 3 || i%7 == 4 // mid-segment and at rotation
			f := w.step()
			err := l.Append(f)
			if fs.full {
				require.ErrorIs(t, err, syscall.ENOSPC, "frame %d", i)
				continue
			}
			require.NoError(t, err, "frame %d", i)
			want = append(want, canonical(t, f))
		}
		fs.full = false
		got, _ := readAll(t, l)
		require.Equal(t, want, got)
		require.Zero(t, l.Stats().Corrupt, "the partial writes were cut off")
	})
}

func TestFileModes(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dir = filepath.Join(cfg.Dir, "log")
	l := mustOpen(t, cfg)
	appendAll(t, l, newWorld(8, 5), 3)
	_, _, err := l.Next()
	require.NoError(t, err)
	require.NoError(t, l.Ack())
	require.NoError(t, l.Close())
	fi, err := os.Stat(cfg.Dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	ents, err := os.ReadDir(cfg.Dir)
	require.NoError(t, err)
	require.NotEmpty(t, ents)
	for _, e := range ents {
		fi, err := e.Info()
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), e.Name())
	}
}

func TestAppendSteadyStateAllocs(t *testing.T) {
	cfg := testConfig(t)
	l := mustOpen(t, cfg)
	defer l.Close()
	w := newWorld(9, 2000)
	f := w.frame()
	require.NoError(t, l.Append(f)) // keyframe
	// One changed value per frame; the rest unchanged.
	k := f.Objects[0].Key
	sets := [2]*encode.SeriesSet{w.objs[k], series(k, len(w.objs[k].Refs), 0, func(int) float64 { return 5 })}
	i := 0
	allocs := testing.AllocsPerRun(50, func() {
		i++
		f.Objects[0].Set = sets[i%2]
		f.Timestamp += 30_000
		if err := l.Append(f); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.1f allocations per delta of %d objects", allocs, len(f.Objects))
	require.Less(t, allocs, 10.0, "a delta allocates a small constant, not per object or series")
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		key  string
	}{
		{"dir", func(c *Config) { c.Dir = "" }, "dir"},
		{"cap", func(c *Config) { c.MaxBytes = 1000 }, "max_size_bytes"},
		{"sync", func(c *Config) { c.Sync = "sometimes" }, "sync"},
		{"ratio", func(c *Config) { c.DeltaRatio = 0 }, "delta_ratio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig
			c.Dir = "x"
			tc.edit(&c)
			require.ErrorContains(t, c.Validate(), tc.key)
		})
	}
	c := DefaultConfig
	c.Dir = "x"
	require.NoError(t, c.Validate())
	require.Equal(t, SyncAlways, c.Sync)
}

// Series with their own sample times (kubelet series) keep them through the
// log, decoded after a restart: in whole sets, in value changes, and when a
// set gains or loses them.
func TestOwnTimestampsRoundTrip(t *testing.T) {
	forEachPartSize(t, func(t *testing.T, parts int) {
		cfg := partConfig(t, parts)
		l := mustOpen(t, cfg)
		timed := func(key uint64, n int, at int64, value float64) *encode.SeriesSet {
			s := series(key, n, 0, func(i int) float64 { return value + float64(i) })
			for i := range n {
				s.Timestamps = append(s.Timestamps, at-int64(i*7))
			}
			return s
		}
		plain := series(9, 3, 0, func(i int) float64 { return float64(i) })
		var frames []*encode.Frame
		for k := range 6 {
			ts := int64(1_700_000_000_000 + k*30_000)
			f := &encode.Frame{Timestamp: ts, Objects: []encode.Object{
				{Key: 1, Set: timed(1, 4, ts-1500, float64(k))}, // values and times change: opValuesTimed
				{Key: 9, Set: plain},
			}}
			switch k {
			case 2:
				// Key 2 appears with times (opSet with setTimestamps).
				f.Objects = append(f.Objects, encode.Object{Key: 2, Set: timed(2, 2, ts-200, 1)})
			case 3:
				// ... and loses them (a diff without times).
				f.Objects = append(f.Objects, encode.Object{Key: 2, Set: series(2, 2, 0, func(int) float64 { return 1 })})
			case 4:
				// ... and gets them back.
				f.Objects = append(f.Objects, encode.Object{Key: 2, Set: timed(2, 2, ts-100, 2)})
			}
			frames = append(frames, f)
		}
		var want []canon
		for _, f := range frames {
			require.NoError(t, l.Append(f))
			want = append(want, canonical(t, f))
		}
		require.NoError(t, l.Close())

		// Reopened, the reader decodes every frame: nothing is shared.
		l = mustOpen(t, cfg)
		defer l.Close()
		got, _ := readAll(t, l)
		require.Equal(t, want, got)
		require.Zero(t, l.Stats().Corrupt)
	})
}
