package queue

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// A change of shard count, in memory and on disk, keeps every series in
// order: the new shards send only after the old ones have sent all they
// hold, while Append goes on.
func TestReshardKeepsSeriesOrder(t *testing.T) {
	for _, disk := range []bool{false, true} {
		name := "memory"
		if disk {
			name = "disk"
		}
		t.Run(name, func(t *testing.T) {
			// Slow answers, so that the old shards still hold samples when
			// the count changes.
			srv := newRecorder(t, func(int, *http.Request) int {
				time.Sleep(time.Millisecond)
				return http.StatusNoContent
			})
			dir := t.TempDir()
			change := func(c *Config) {
				c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 1, 5
				c.QueueConfig.MaxSamplesPerSend = 7
				c.QueueConfig.Capacity = 50
				c.QueueConfig.BatchSendDeadline = time.Millisecond
				if disk {
					c.DiskBuffer.Directory = dir
				}
			}
			e, m := newTestEndpoint(t, srv.URL, change)
			const series, rounds = 40, 60
			counts := []int{3, 2, 5, 1}
			seen := map[int]bool{}
			for r := range rounds {
				if r%15 == 14 {
					// Ask for the next count once the last change has
					// drained, so that none is skipped.
					require.Eventually(t, func() bool { return len(e.liveGenerations()) == 1 }, 10*time.Second, time.Millisecond)
					e.want.Store(int64(counts[r/15]))
				}
				require.Equal(t, series, e.appendItems(t.Context(), roundItems(series, r)))
				seen[len(e.cur.shards)] = true
				if disk {
					gens, err := filepath.Glob(filepath.Join(dir, "g*"))
					require.NoError(t, err)
					require.LessOrEqual(t, len(gens), 2, "at most the old and the new generation on disk")
				}
			}
			require.NoError(t, stop(t, e, 30*time.Second))
			require.Equal(t, map[int]bool{1: true, 3: true, 2: true, 5: true}, seen)
			requireRounds(t, srv.got(), series, 0, rounds)
			requireNoDrops(t, m)
			require.Equal(t, 1.0, gaugeOf(t, m, "shards"), "the last count asked for")
			require.Zero(t, gaugeOf(t, m, "queue_length"))
		})
	}
}

// Under a load one shard cannot carry, the resharding loop grows the shard
// count, and the series stay in order.
func TestReshardingGrowsUnderLoad(t *testing.T) {
	srv := newRecorder(t, func(int, *http.Request) int {
		time.Sleep(3 * time.Millisecond) // a receiver that takes its time
		return http.StatusNoContent
	})
	e, m, err := buildTestEndpoint(t, srv.URL, func(c *Config) {
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 1, 8
		c.QueueConfig.MaxSamplesPerSend = 50
		c.QueueConfig.Capacity = 200
		c.QueueConfig.BatchSendDeadline = time.Millisecond
	}, func(e *Endpoint) { e.reshardEvery = 50 * time.Millisecond })
	require.NoError(t, err)
	const series = 100
	r := 0
	deadline := time.Now().Add(20 * time.Second)
	for ; e.shardCount.Load() == 1; r++ {
		require.True(t, time.Now().Before(deadline), "never grew; desired %v", gaugeOf(t, m, "shards_desired"))
		require.Equal(t, series, e.appendItems(t.Context(), roundItems(series, r)))
	}
	grown := e.shardCount.Load()
	for end := r + 10; r < end; r++ {
		require.Equal(t, series, e.appendItems(t.Context(), roundItems(series, r)))
	}
	require.NoError(t, stop(t, e, 30*time.Second))
	t.Logf("grew from 1 to %d shards after %d rounds (desired %.2f)", grown, r-10, gaugeOf(t, m, "shards_desired"))
	require.Greater(t, gaugeOf(t, m, "shards_desired"), 1.3)
	requireRounds(t, srv.got(), series, 0, r)
	requireNoDrops(t, m)
}

// BenchmarkAppend queues snapshot-sized chunks (4096 samples, as the
// snapshotter hands them over) to an endpoint sending to a receiver that
// accepts everything, in memory and with a disk buffer, on one shard (as at
// the bench cluster's load) and on four; allocations are per batch, not per
// sample. cpu-ns/sample is the process' CPU time (user and system, the
// receiver's included) a sample, which a wall-clock figure on two cores hides.
func BenchmarkAppend(b *testing.B) {
	for _, disk := range []bool{false, true} {
		for _, shards := range []int{1, 4} {
			kind := "memory"
			if disk {
				kind = "disk"
			}
			b.Run(fmt.Sprintf("%s/shards=%d", kind, shards), func(b *testing.B) { benchmarkAppend(b, disk, shards) })
		}
	}
}

func benchmarkAppend(b *testing.B, disk bool, shards int) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	cfg := DefaultConfig
	cfg.URL, cfg.Name = srv.URL, testEndpoint
	cfg.QueueConfig.MinShards, cfg.QueueConfig.MaxShards = shards, shards
	if disk {
		cfg.DiskBuffer.Directory = b.TempDir()
	}
	e, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(prometheus.NewRegistry()), UserAgent: testUserAgent})
	require.NoError(b, err)
	e.startShards()
	chunk := items(4096, 1)
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for j := range chunk {
			chunk[j].Timestamp = int64(i)
		}
		e.appendItems(b.Context(), chunk)
	}
	b.StopTimer()
	cpu := processCPU(b) - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(chunk)), "ns/sample")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*len(chunk)), "cpu-ns/sample")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(b, e.Stop(ctx))
}
