package diskbuffer

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// BenchmarkNextCaughtUp is an endpoint whose receiver keeps up: every tick
// appends a frame of 20k objects of 20 series (200 of them with changed
// values, 20 staleness markers) and reads it back at once. An op is the
// tick (Append, Next, Ack); next-* are Next's own cost, and reader-MB is
// what the reader's state holds beyond the writer's sets at the end.
// "shared" is Next as it is; "decoded" makes it read every record back, as
// it does for a reader that is behind. "key" appends keyframes only.
func BenchmarkNextCaughtUp(b *testing.B) {
	const objects, perObject, changed = 20_000, 20, 200
	base := make([]*encode.SeriesSet, objects)
	alt := make([]*encode.SeriesSet, changed)
	for i := range base {
		base[i] = series(uint64(i)+1, perObject, 0, func(j int) float64 { return float64(j) })
		if i < changed {
			c := base[i].Clone()
			c.Refs[i%perObject].Value = -1
			alt[i] = &c
		}
	}
	stale := make([]encode.Stale, 20)
	for i := range stale {
		stale[i] = encode.Stale{Hash: base[i].Refs[0].Hash, Labels: base[i].Labels(0)}
	}
	for _, kind := range []string{"delta", "key"} {
		for _, mode := range []string{"shared", "decoded"} {
			b.Run(kind+"/"+mode, func(b *testing.B) {
				cfg := DefaultConfig
				cfg.Dir = b.TempDir()
				cfg.Sync = "never"
				l, err := Open(cfg)
				require.NoError(b, err)
				defer l.Close()
				f := &encode.Frame{Timestamp: 1_700_000_000_000, Stale: stale}
				for i, s := range base {
					f.Objects = append(f.Objects, encode.Object{Key: uint64(i) + 1, Set: s})
				}
				var ms0, ms1 runtime.MemStats
				var nextTime time.Duration
				var nextBytes, nextAllocs uint64
				tick := 0
				b.ReportAllocs()
				for b.Loop() {
					tick++
					for i := range changed {
						f.Objects[i].Set = [2]*encode.SeriesSet{base[i], alt[i]}[tick%2]
					}
					f.Timestamp += 30_000
					if kind == "key" {
						l.needKey = true // as after Open or a failure
					}
					if err := l.Append(f); err != nil {
						b.Fatal(err)
					}
					if mode == "decoded" {
						l.mu.Lock()
						l.dropLastLocked()
						l.mu.Unlock()
					}
					runtime.ReadMemStats(&ms0)
					t0 := time.Now()
					got, info, err := l.Next()
					nextTime += time.Since(t0)
					runtime.ReadMemStats(&ms1)
					if err != nil {
						b.Fatal(err)
					}
					if kind == "key" && !info.Keyframe || len(got.Objects) != objects {
						b.Fatalf("tick %d: keyframe %t, %d objects", tick, info.Keyframe, len(got.Objects))
					}
					nextBytes += ms1.TotalAlloc - ms0.TotalAlloc
					nextAllocs += ms1.Mallocs - ms0.Mallocs
					if err := l.Ack(); err != nil {
						b.Fatal(err)
					}
				}
				n := float64(tick)
				b.ReportMetric(float64(nextTime.Nanoseconds())/n, "next-ns/op")
				b.ReportMetric(float64(nextBytes)/n, "next-B/op")
				b.ReportMetric(float64(nextAllocs)/n, "next-allocs/op")

				// What the reader holds that the writer's sets do not.
				runtime.GC()
				runtime.ReadMemStats(&ms0)
				l.rmu.Lock()
				l.dec.reset()
				l.free = nil
				l.rmu.Unlock()
				runtime.GC()
				runtime.ReadMemStats(&ms1)
				b.ReportMetric(float64(int64(ms0.HeapAlloc)-int64(ms1.HeapAlloc))/(1<<20), "reader-MB")
				runtime.KeepAlive(base)
				runtime.KeepAlive(alt)
			})
		}
	}
}
