package diskbuffer

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// v1Dir is a log written by the code before frames could span records
// (TestWriteV1Log of commit db3da34, on the code of 87f67aa): two
// segments of kubelet-style and plain sets, and a checkpoint three frames
// into the first with a fourth in flight. v1Golden is what reading it
// must hand out (dumpFrame per frame).
const (
	v1Dir    = "testdata/v1log"
	v1Golden = "testdata/v1log.golden"
)

// dumpFrame writes a frame as text that does not depend on the order of
// its objects: per object, sorted by key, each series' labels, hash,
// value bits and own time; then the staleness markers in order.
func dumpFrame(f *encode.Frame, info Info) string {
	var b strings.Builder
	fmt.Fprintf(&b, "frame ts=%d samples=%d keyframe=%t resent=%t\n", f.Timestamp, info.Samples, info.Keyframe, info.Resent)
	objs := slices.Clone(f.Objects)
	slices.SortFunc(objs, func(x, y encode.Object) int { return cmp.Compare(x.Key, y.Key) })
	for _, o := range objs {
		fmt.Fprintf(&b, "object %x\n", o.Key)
		for i, r := range o.Set.Refs {
			fmt.Fprintf(&b, "  %q %x %x", encode.AppendLabels(nil, o.Set.Labels(i)), r.Hash, math.Float64bits(r.Value))
			if o.Set.Timestamps != nil {
				fmt.Fprintf(&b, " at %d", o.Set.Timestamps[i])
			}
			b.WriteByte('\n')
		}
	}
	for _, s := range f.Stale {
		fmt.Fprintf(&b, "stale %q %x\n", encode.AppendLabels(nil, s.Labels), s.Hash)
	}
	return b.String()
}

// copyDir copies a test log directory, so that opening it changes only
// the copy.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	ents, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, e.Name()), b, 0o600))
	}
	return to
}

// A log written before frames could span records is read as it was
// written: nothing accepted is lost across an upgrade, and the checkpoint
// still says where to resume and what was in flight.
func TestReadsVersion1Log(t *testing.T) {
	want, err := os.ReadFile(v1Golden)
	require.NoError(t, err)
	cfg := testConfig(t)
	cfg.Dir = copyDir(t, v1Dir)
	l := mustOpen(t, cfg)
	defer l.Close()
	pending := l.Stats().PendingFrames
	var got strings.Builder
	for {
		f, info, err := l.Next()
		if err != nil {
			require.ErrorIs(t, err, ErrEmpty)
			break
		}
		got.WriteString(dumpFrame(f, info))
		require.NoError(t, l.Ack())
	}
	require.Equal(t, string(want), got.String())
	require.Equal(t, strings.Count(string(want), "frame "), pending)
	require.Zero(t, l.Stats().Corrupt)
}
