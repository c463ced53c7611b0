package queue

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTooOld(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	require.False(t, tooOld(now.UnixMilli(), now, time.Minute))
	require.False(t, tooOld(now.Add(-time.Minute+time.Millisecond).UnixMilli(), now, time.Minute))
	require.True(t, tooOld(now.Add(-time.Minute).UnixMilli(), now, time.Minute), "exactly the limit")
	require.True(t, tooOld(now.Add(-time.Hour).UnixMilli(), now, time.Minute))
}

func TestSampleAgeLimitValidate(t *testing.T) {
	q := DefaultQueueConfig
	require.Zero(t, q.SampleAgeLimit, "off by default, as Prometheus")
	q.SampleAgeLimit = time.Hour
	require.NoError(t, q.Validate())
	q.SampleAgeLimit = -time.Second
	require.EqualError(t, q.Validate(), "sample_age_limit: must not be negative (0 means off), not -1s")
}

// A memory-only shard sends the samples of a batch within sample_age_limit and
// counts the others as too_old.
func TestSampleAgeLimitMemory(t *testing.T) {
	srv := newTestServer(t, nil)
	e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 1, 1
		c.QueueConfig.SampleAgeLimit = time.Hour
	})
	now := time.Now()
	in := []Item{
		item("old", 1, now.Add(-2*time.Hour).UnixMilli()),
		item("fresh", 2, now.UnixMilli()),
		item("older", 3, now.Add(-3*time.Hour).UnixMilli()),
	}
	require.Equal(t, 3, e.appendItems(t.Context(), in))
	require.NoError(t, stop(t, e, 5*time.Second))
	reqs := srv.requests(t)
	require.Len(t, reqs, 1)
	require.Equal(t, []gotSample{{series: "fresh", value: 2, ts: now.UnixMilli()}}, reqs[0].samples)
	require.Equal(t, 1.0, counter(t, m.samplesSent))
	require.Equal(t, 2.0, counter(t, m.samplesDropped, ReasonTooOld))
	require.Zero(t, gaugeOf(t, m, "queue_length"))

	// A batch all too old sends nothing.
	srv2 := newTestServer(t, nil)
	e, m = newTestEndpoint(t, srv2.URL, func(c *Config) { c.QueueConfig.SampleAgeLimit = time.Minute })
	require.Equal(t, 4, e.appendItems(t.Context(), items(4, now.Add(-time.Hour).UnixMilli())))
	require.NoError(t, stop(t, e, 5*time.Second))
	require.Empty(t, srv2.requests(t))
	require.Equal(t, 4.0, counter(t, m.samplesDropped, ReasonTooOld))
	require.Zero(t, gaugeOf(t, m, "queue_length"))
}

// While a memory-only shard retries a batch, a sample that passes
// sample_age_limit ends the retries: it is dropped as too_old and the rest
// is sent on its own.
func TestSampleAgeLimitEndsRetries(t *testing.T) {
	var e *Endpoint
	var m *Metrics
	srv := newTestServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		// Down until the old sample is dropped.
		if counter(t, m.samplesDropped, ReasonTooOld) == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	now := time.Now()
	e, m, _ = buildTestEndpoint(t, srv.URL, func(c *Config) {
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 1, 1
		c.QueueConfig.SampleAgeLimit = 2 * time.Second
	}, nil)
	old := now.Add(-1700 * time.Millisecond).UnixMilli() // too old 300ms from now
	in := []Item{item("old", 1, old), item("fresh", 2, now.UnixMilli())}
	require.Equal(t, 2, e.appendItems(t.Context(), in))
	e.flush()
	require.Eventually(t, func() bool { return counter(t, m.samplesSent) == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, stop(t, e, 5*time.Second))

	reqs := srv.requests(t)
	require.Greater(t, len(reqs), 2, "retried before the old sample aged out")
	last := reqs[len(reqs)-1]
	require.Equal(t, []gotSample{{series: "fresh", value: 2, ts: now.UnixMilli()}}, last.samples)
	for _, r := range reqs[:len(reqs)-1] {
		require.Len(t, r.samples, 2)
	}
	require.Equal(t, 1.0, counter(t, m.samplesDropped, ReasonTooOld))
	require.Zero(t, counter(t, m.samplesDropped, ReasonRetriesDone))
	require.Zero(t, gaugeOf(t, m, "queue_length"))
}

// A disk-buffered shard drops what is too old when it reads a batch, and when it
// tries a kept batch again; every sample is counted once.
func TestSampleAgeLimitDisk(t *testing.T) {
	t.Run("too old on disk", func(t *testing.T) {
		srv := newRecorder(t, nil)
		e, m := newTestEndpoint(t, srv.URL, withDisk(t.TempDir(), func(c *Config) {
			c.QueueConfig.SampleAgeLimit = time.Hour
		}))
		now := time.Now()
		in := append(items(3, now.Add(-2*time.Hour).UnixMilli()), item("fresh", 7, now.UnixMilli()))
		require.Equal(t, 4, e.appendItems(t.Context(), in))
		require.Eventually(t, func() bool { return gaugeOf(t, m, "queue_length") == 0 }, 5*time.Second, time.Millisecond)
		require.NoError(t, stop(t, e, 5*time.Second))
		require.Equal(t, []gotSample{{series: "fresh", value: 7, ts: now.UnixMilli()}}, srv.got())
		require.Equal(t, 3.0, counter(t, m.samplesDropped, ReasonTooOld))
	})
	t.Run("ages out while retried", func(t *testing.T) {
		srv := newRecorder(t, func(int, *http.Request) int { return http.StatusServiceUnavailable })
		e, m := newTestEndpoint(t, srv.URL, withDisk(t.TempDir(), func(c *Config) {
			c.QueueConfig.SampleAgeLimit = 300 * time.Millisecond
		}))
		require.Zero(t, e.cfg.QueueConfig.MaxRetryDuration, "retried until the age limit ends it")
		require.Equal(t, 5, e.appendItems(t.Context(), items(5, time.Now().UnixMilli())))
		require.Eventually(t, func() bool { return gaugeOf(t, m, "queue_length") == 0 }, 5*time.Second, time.Millisecond)
		require.NoError(t, stop(t, e, 5*time.Second))
		require.Greater(t, srv.count(), 1)
		require.Empty(t, srv.got())
		require.Equal(t, 5.0, counter(t, m.samplesDropped, ReasonTooOld))
		require.Zero(t, counter(t, m.samplesDropped, ReasonRetriesDone))
	})
}
