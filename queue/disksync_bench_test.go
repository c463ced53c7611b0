package queue

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// BenchmarkDiskSnapshot is what queueing one snapshot of 10,000 samples on a
// disk buffer costs the producer (one op = Append then Flush): "sync" with
// the fsync per snapshot that Flush does, "nosync" without it, so the
// difference is the fsync's cost on this machine's disk. Nothing is sent:
// the lanes are not started.
func BenchmarkDiskSnapshot(b *testing.B) {
	snapshot := items(10_000, 1)
	for _, sync := range []bool{true, false} {
		name := "nosync"
		if sync {
			name = "sync"
		}
		b.Run(name, func(b *testing.B) {
			cfg := DefaultConfig
			cfg.URL, cfg.Name = "http://127.0.0.1:1/api/v1/write", testEndpoint
			cfg.DiskBuffer.Directory = b.TempDir()
			cfg.DiskBuffer.MaxBytes = 64 << 20 // the oldest are dropped: the cap bounds the run
			cfg.QueueConfig.MinShards = 4
			require.NoError(b, cfg.Validate())
			e, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(prometheus.NewRegistry())})
			require.NoError(b, err)
			defer e.Close()
			b.ReportAllocs()
			for b.Loop() {
				e.Append(b.Context(), snapshot)
				if sync {
					e.Flush()
				} else {
					for _, l := range e.cur.lanes {
						l.dirty = false
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/snapshot")
		})
	}
}
