package queue

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// Flush sends a memory-only shard's partial batch without waiting out
// batch_send_deadline; without it the batch waits.
func TestFlushSendsPartialBatch(t *testing.T) {
	srv := newTestServer(t, nil)
	e, _ := newTestEndpoint(t, srv.URL, func(c *Config) {
		c.QueueConfig.BatchSendDeadline = time.Hour
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 2, 2
		c.MetadataConfig.Send = false
	})
	e.appendItems(t.Context(), items(10, 1000))
	select {
	case <-srv.arrived:
		t.Fatal("a partial batch was sent before Flush, with an hour's batch_send_deadline")
	case <-time.After(100 * time.Millisecond):
	}
	e.flush()
	srv.waitRequests(t, 2) // one per shard: 10 series hash onto both
	got := 0
	for _, r := range srv.requests(t) {
		got += len(r.samples)
	}
	require.Equal(t, 10, got)
	require.NoError(t, stop(t, e, 5*time.Second))
}

// Close releases an endpoint that was built but never started, so that
// another one can take its disk buffer directory.
func TestCloseUnstartedReleasesDisk(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig
	cfg.URL, cfg.Name = "http://127.0.0.1:1/api/v1/write", testEndpoint
	cfg.DiskBuffer.Directory = dir
	require.NoError(t, cfg.Validate())
	opts := Options{Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(prometheus.NewRegistry())}
	e, err := New(cfg, opts)
	require.NoError(t, err)
	_, err = New(cfg, Options{Logger: opts.Logger, Metrics: NewMetrics(prometheus.NewRegistry())})
	require.ErrorContains(t, err, "in use")
	e.Close()
	e2, err := New(cfg, Options{Logger: opts.Logger, Metrics: NewMetrics(prometheus.NewRegistry())})
	require.NoError(t, err)
	e2.Close()
}
