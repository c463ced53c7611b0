package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Flush sends a memory lane's partial batch without waiting out
// batch_send_deadline; without it the batch waits.
func TestFlushSendsPartialBatch(t *testing.T) {
	srv := newTestServer(t, nil)
	e, _ := newTestEndpoint(t, srv.URL, func(c *Config) {
		c.QueueConfig.BatchSendDeadline = time.Hour
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 2, 2
		c.MetadataConfig.Send = false
	})
	e.Append(t.Context(), items(10, 1000))
	select {
	case <-srv.arrived:
		t.Fatal("a partial batch was sent before Flush, with an hour's batch_send_deadline")
	case <-time.After(100 * time.Millisecond):
	}
	e.Flush()
	srv.waitRequests(t, 2) // one per shard: 10 series hash onto both
	got := 0
	for _, r := range srv.requests(t) {
		got += len(r.samples)
	}
	require.Equal(t, 10, got)
	require.NoError(t, stop(t, e, 5*time.Second))
}
