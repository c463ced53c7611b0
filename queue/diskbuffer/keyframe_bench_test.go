package diskbuffer

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// clusterFrame is a frame the size of the one the agent writes at 10k
// pods (~615k series, ~75 MB of keyframe body): per pod 56 series
// labelled as kube-state-metrics labels pod series (namespace, pod, uid
// and a few more), and per node 55 kubelet-style series that carry their
// own sample times.
func clusterFrame(pods, nodes int) *encode.Frame {
	var b encode.LabelsBuilder
	f := &encode.Frame{Timestamp: 1_700_000_000_000}
	for i := range pods {
		ns := fmt.Sprintf("team-%02d", i%100)
		pod := fmt.Sprintf("service-%03d-%010x-%05x", i/100%1000, uint64(i)*2654435761%(1<<40), i)
		uid := fmt.Sprintf("3f2b8c1e-%04x-4e7b-8c6a-%012x", i%0xffff, i)
		s := &encode.SeriesSet{}
		for j := range 56 {
			b.Reset()
			b.Add(encode.MetricName, fmt.Sprintf("kube_pod_container_status_family_%02d", j))
			b.Add("namespace", ns)
			b.Add("pod", pod)
			b.Add("uid", uid)
			b.Add("container", [2]string{"app", "istio-proxy"}[j%2])
			if j%4 == 0 {
				b.Add("condition", [3]string{"true", "false", "unknown"}[j%3])
			}
			b.AppendTo(s, float64(j%3))
		}
		f.Objects = append(f.Objects, encode.Object{Key: uint64(i)*0x9e3779b97f4a7c15 + 1, Set: s})
	}
	for i := range nodes {
		node := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i/250, i)
		s := &encode.SeriesSet{}
		for j := range 55 {
			b.Reset()
			b.Add(encode.MetricName, fmt.Sprintf("container_resource_family_%02d", j))
			b.Add("node", node)
			b.Add("container", fmt.Sprintf("c-%d", j%5))
			b.AppendTo(s, float64(i*j)+0.5)
			s.Timestamps = append(s.Timestamps, f.Timestamp-int64(1000+j))
		}
		f.Objects = append(f.Objects, encode.Object{Key: uint64(i)*0x9e3779b97f4a7c15 + 2, Set: s})
	}
	return f
}

// heapPeak samples the bytes of heap objects (live and not yet swept)
// every 100µs until stopped, without stopping the world.
type heapPeak struct {
	stop chan struct{}
	wg   sync.WaitGroup
	max  uint64
}

func startHeapPeak() *heapPeak {
	p := &heapPeak{stop: make(chan struct{})}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	p.wg.Go(func() {
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			p.max = max(p.max, s[0].Value.Uint64())
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	})
	return p
}

func (p *heapPeak) done() uint64 {
	close(p.stop)
	p.wg.Wait()
	return p.max
}

// BenchmarkAppendKeyframe appends keyframes of ~615k series, as after
// every Open or failure and at every rotation: what writing one costs in
// memory. first-MB is what the first keyframe of a new log allocates,
// B/op what each later one does; peak-MB is the most heap (live and
// garbage not yet collected) above the frame's own sets seen during the
// run, kept-MB what the log holds afterwards (its buffers and the last
// frame's object list).
func BenchmarkAppendKeyframe(b *testing.B) {
	f := clusterFrame(10_000, 1_000)
	samples := f.Samples()
	cfg := DefaultConfig
	cfg.Dir = b.TempDir()
	cfg.Sync = SyncNever
	cfg.MaxBytes = 64 << 20 // old segments go: the disk stays small
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	l, err := Open(cfg)
	require.NoError(b, err)
	defer l.Close()
	peak := startHeapPeak()
	before := ms.TotalAlloc
	require.NoError(b, l.Append(f))
	runtime.ReadMemStats(&ms)
	first := ms.TotalAlloc - before
	b.ReportAllocs()
	for b.Loop() {
		l.needKey = true
		if err := l.Append(f); err != nil {
			b.Fatal(err)
		}
	}
	top := peak.done()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(samples), "series")
	b.ReportMetric(float64(first)/(1<<20), "first-MB")
	b.ReportMetric(float64(int64(top)-int64(base))/(1<<20), "peak-MB")
	b.ReportMetric(float64(int64(ms.HeapAlloc)-int64(base))/(1<<20), "kept-MB")
	runtime.KeepAlive(f)
}

// BenchmarkReadKeyframe reads back the keyframe of BenchmarkAppendKeyframe
// by decoding it, as a reader that is behind does. B/op includes the
// decoded sets themselves (about the body's size in labels, plus the
// series); peak-MB is the most heap above the frame's own sets during the
// reads.
func BenchmarkReadKeyframe(b *testing.B) {
	f := clusterFrame(10_000, 1_000)
	cfg := DefaultConfig
	cfg.Dir = b.TempDir()
	cfg.Sync = SyncNever
	cfg.MaxBytes = 64 << 20
	l, err := Open(cfg)
	require.NoError(b, err)
	defer l.Close()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	peak := startHeapPeak()
	var readBytes uint64
	var reads int
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		l.needKey = true
		if err := l.Append(f); err != nil {
			b.Fatal(err)
		}
		l.mu.Lock()
		l.dropLastLocked() // read it back instead of sharing the sets
		l.mu.Unlock()
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		b.StartTimer()
		got, info, err := l.Next()
		if err != nil || !info.Keyframe || len(got.Objects) != len(f.Objects) {
			b.Fatalf("read %v, %+v, %d objects", err, info, len(got.Objects))
		}
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		readBytes += ms.TotalAlloc - before
		reads++
		if err := l.Ack(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	top := peak.done()
	b.ReportMetric(float64(readBytes)/float64(reads)/(1<<20), "read-MB/op")
	b.ReportMetric(float64(int64(top)-int64(base))/(1<<20), "peak-MB")
	runtime.KeepAlive(f)
}
