package framelog

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// TestWriteV1Log writes testdata/v1log with the version-1 code; run once
// with FRAMELOG_WRITE_V1=1 before the format changed.
func TestWriteV1Log(t *testing.T) {
	if os.Getenv("FRAMELOG_WRITE_V1") == "" {
		t.Skip("FRAMELOG_WRITE_V1 not set")
	}
	require.NoError(t, os.RemoveAll(v1Dir))
	cfg := DefaultConfig
	cfg.Dir = v1Dir
	cfg.Sync = SyncNever
	cfg.DeltaRatio = 100 // one segment per Open
	w := newWorld(31, 8)
	timed := func(key uint64, n int, at int64, value float64) *encode.SeriesSet {
		s := series(key, n, 0, func(i int) float64 { return value + float64(i) })
		for i := range n {
			s.Timestamps = append(s.Timestamps, at-int64(i*7))
		}
		return s
	}
	frame := func(k int) *encode.Frame {
		f := w.step()
		f.Objects = append(f.Objects, encode.Object{Key: 1 << 62, Set: timed(1<<62, 3, f.Timestamp-1500, float64(k))})
		if k%3 != 2 {
			f.Objects = append(f.Objects, encode.Object{Key: 1<<62 + 1, Set: timed(1<<62+1, 2, f.Timestamp-900, -float64(k))})
		}
		return f
	}
	var frames []*encode.Frame
	l, err := Open(cfg)
	require.NoError(t, err)
	for k := range 6 {
		f := frame(k)
		require.NoError(t, l.Append(f))
		frames = append(frames, f)
	}
	require.NoError(t, l.Close())
	l, err = Open(cfg)
	require.NoError(t, err)
	for k := range 4 {
		f := frame(6 + k)
		require.NoError(t, l.Append(f))
		frames = append(frames, f)
	}
	for range 4 {
		_, _, err := l.Next()
		require.NoError(t, err)
	}
	for range 3 {
		require.NoError(t, l.Ack())
	}
	require.NoError(t, l.Close())

	// What a reader hands out, from a copy.
	rc := cfg
	rc.Dir = copyDir(t, v1Dir)
	l, err = Open(rc)
	require.NoError(t, err)
	defer l.Close()
	var golden strings.Builder
	for i := 3; ; i++ {
		f, info, err := l.Next()
		if err != nil {
			require.ErrorIs(t, err, ErrEmpty)
			require.Equal(t, len(frames), i)
			break
		}
		require.Equal(t, canonical(t, frames[i]), canonical(t, f))
		golden.WriteString(dumpFrame(f, info))
		require.NoError(t, l.Ack())
	}
	require.NoError(t, os.WriteFile(v1Golden, []byte(golden.String()), 0o644))
}
