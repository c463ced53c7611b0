package agent

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue/diskbuffer"
)

// BenchmarkRestartKeyframe is what a restart with a disk buffer holds of
// the 10k-pod cluster's last keyframe once it has read it back: the frame
// log is written by one Log, closed, and read by a new one, as after a
// restart. decoded-B/pod is the heap the decoded frame keeps (a GC after
// the read), live-B/pod the series map's own sets for the same pods, both
// per pod of the 10k (and nodes' share).
func BenchmarkRestartKeyframe(b *testing.B) {
	m := newMetrics(prometheus.NewRegistry())
	pods := benchMap(b, m, "pods", 10_000, func(i int) any { return benchPod(i) })
	nodes := benchMap(b, m, "nodes", 1_000, func(i int) any { return benchNode(i) })
	f := &encode.Frame{Timestamp: 1_700_000_000_000}
	live := 0
	for _, sm := range []*seriesMap{pods, nodes} {
		for uid, set := range sm.objects {
			f.Objects = append(f.Objects, encode.Object{Key: objectKey(uid), Set: set})
		}
		n, _ := seriesBytes(sm)
		live += n
	}
	cfg := diskbuffer.DefaultConfig
	cfg.Dir = b.TempDir()
	cfg.Sync = diskbuffer.SyncNever
	w, err := diskbuffer.Open(cfg)
	require.NoError(b, err)
	require.NoError(b, w.Append(f))
	require.NoError(b, w.Close())
	var kept uint64
	for b.Loop() {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		r, err := diskbuffer.Open(cfg)
		require.NoError(b, err)
		got, info, err := r.Next()
		require.NoError(b, err)
		require.True(b, info.Keyframe)
		require.Len(b, got.Objects, len(f.Objects))
		runtime.GC()
		runtime.ReadMemStats(&ms)
		kept = ms.HeapAlloc - base
		runtime.KeepAlive(got)
		require.NoError(b, r.Close())
	}
	b.ReportMetric(float64(kept)/10_000, "decoded-B/pod")
	b.ReportMetric(float64(live)/10_000, "live-B/pod")
}
