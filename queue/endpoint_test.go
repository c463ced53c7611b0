package queue

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kube-state-push/kube-state-push/encode"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	testEndpoint  = "test"
	testUserAgent = "kube-state-push/test"
	testTenant    = "tenant-a"
)

// gotSample is one sample as the server decoded it.
type gotSample struct {
	// series is the value of the "series" label.
	series string
	value  float64
	ts     int64
}

// request is one request as the server saw it.
type request struct {
	header  http.Header
	samples []gotSample
	// err is a problem decoding the body (reported by the test, not the
	// handler goroutine).
	err error
}

// testServer is an httptest server that records every request, then answers
// as respond says; respond gets the request's index.
type testServer struct {
	*httptest.Server
	// respond answers request i; nil answers 204.
	respond func(i int, w http.ResponseWriter, r *http.Request)
	// arrived gets a token per request, once it is recorded.
	arrived chan struct{}

	// mu guards reqs.
	mu   sync.Mutex
	reqs []request
}

func newTestServer(t *testing.T, respond func(i int, w http.ResponseWriter, r *http.Request)) *testServer {
	t.Helper()
	s := &testServer{respond: respond, arrived: make(chan struct{}, 100000)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

func (s *testServer) handle(w http.ResponseWriter, r *http.Request) {
	req := request{header: r.Header.Clone()}
	req.samples, req.err = decodeBody(r.Body)
	s.mu.Lock()
	i := len(s.reqs)
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	s.arrived <- struct{}{}
	if s.respond == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	s.respond(i, w, r)
}

func decodeBody(body io.Reader) ([]gotSample, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	wr, err := encode.DecodeWriteRequest(b)
	if err != nil {
		return nil, err
	}
	var out []gotSample
	for _, ts := range wr.Timeseries {
		if len(ts.Samples) != 1 {
			return nil, fmt.Errorf("series with %d samples", len(ts.Samples))
		}
		g := gotSample{value: ts.Samples[0].Value, ts: ts.Samples[0].Timestamp}
		for _, l := range ts.Labels {
			if l.Name == "series" {
				g.series = l.Value
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// requests returns a copy of what the server received, checking every body
// decoded.
func (s *testServer) requests(t *testing.T) []request {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.reqs {
		require.NoError(t, r.err, "request %d", i)
	}
	return append([]request(nil), s.reqs...)
}

// waitRequests waits until n requests have arrived.
func (s *testServer) waitRequests(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case <-s.arrived:
		case <-timeout:
			t.Fatalf("got %d requests, want %d", i, n)
		}
	}
}

// newTestEndpoint builds and starts an endpoint sending to url with fast
// retries; change adjusts the config first.
func newTestEndpoint(t *testing.T, url string, change func(*Config)) (*Endpoint, *Metrics) {
	t.Helper()
	e, m, err := buildTestEndpoint(t, url, change, nil)
	require.NoError(t, err)
	return e, m
}

// buildTestEndpoint builds an endpoint as newTestEndpoint does, lets
// beforeStart (if not nil) adjust it, and starts it; it returns New's
// error instead of failing.
func buildTestEndpoint(t *testing.T, url string, change func(*Config), beforeStart func(*Endpoint)) (*Endpoint, *Metrics, error) {
	t.Helper()
	cfg := DefaultConfig
	cfg.URL = url
	cfg.Name = testEndpoint
	cfg.Headers = map[string]string{"X-Scope-OrgID": testTenant}
	cfg.QueueConfig.MinBackoff = time.Millisecond
	cfg.QueueConfig.MaxBackoff = 10 * time.Millisecond
	if change != nil {
		change(&cfg)
	}
	require.NoError(t, cfg.Validate())
	m := NewMetrics(prometheus.NewRegistry())
	e, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Metrics: m, UserAgent: testUserAgent})
	if err != nil {
		return nil, m, err
	}
	if beforeStart != nil {
		beforeStart(e)
	}
	e.startShards()
	return e, m, nil
}

// stop stops e within d and returns Stop's error.
func stop(t *testing.T, e *Endpoint, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return e.Stop(ctx)
}

// item returns the sample {__name__="test_metric", series=series}.
func item(series string, value float64, ts int64) Item {
	var b encode.LabelsBuilder
	var set encode.SeriesSet
	b.Add(encode.MetricName, "test_metric")
	b.Add("series", series)
	b.AppendTo(&set, value)
	return Item{Sample: encode.Sample{Labels: set.Labels(0), Value: value, Timestamp: ts}, Hash: set.Refs[0].Hash}
}

// items returns n samples of n series "s0".."s<n-1>", value i, timestamp ts.
func items(n int, ts int64) []Item {
	out := make([]Item, n)
	for i := range out {
		out[i] = item(fmt.Sprintf("s%d", i), float64(i), ts)
	}
	return out
}

// counter reads one of the endpoint's counters.
func counter(t *testing.T, c *prometheus.CounterVec, labels ...string) float64 {
	t.Helper()
	return testutil.ToFloat64(c.WithLabelValues(append([]string{testEndpoint}, labels...)...))
}

func TestDroppedReasonsInitialised(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	for _, name := range []string{"a", "b"} {
		cfg := DefaultConfig
		cfg.URL = "http://" + name + ".example:9090/api/v1/write"
		require.NoError(t, cfg.Validate())
		_, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Metrics: m, UserAgent: testUserAgent})
		require.NoError(t, err)
	}
	var want strings.Builder
	want.WriteString("# HELP kube_state_push_remote_samples_dropped_total Samples given up on, by reason.\n")
	want.WriteString("# TYPE kube_state_push_remote_samples_dropped_total counter\n")
	for _, ep := range []string{"a.example:9090", "b.example:9090"} {
		for _, r := range []string{"bad_request", "buffer_error", "buffer_full", "client_error", "conflict", "rate_limited", "resent", "retries_ended", "queue_full", "series_too_large", "shutdown", "too_large", "too_old", "unsupported", "invalid_labels", "label_too_long", "too_many_labels"} {
			fmt.Fprintf(&want, "kube_state_push_remote_samples_dropped_total{endpoint=%q,reason=%q} 0\n", ep, r)
		}
	}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want.String()), "kube_state_push_remote_samples_dropped_total"))
	require.Len(t, reasons, 17, "a new reason is added to this test")

	// The per-endpoint series exist from the start too.
	n, err := testutil.GatherAndCount(reg,
		"kube_state_push_remote_samples_sent_total", "kube_state_push_remote_samples_failed_total",
		"kube_state_push_remote_samples_retried_total", "kube_state_push_remote_sent_bytes_total",
		"kube_state_push_remote_queue_length", "kube_state_push_remote_shards")
	require.NoError(t, err)
	require.Equal(t, 2*6, n)
}

func TestShardsKeepSeriesOrder(t *testing.T) {
	srv := newTestServer(t, nil)
	e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
		c.QueueConfig.MinShards = 4
		c.QueueConfig.MaxShards = 4
		c.QueueConfig.MaxSamplesPerSend = 7
		c.QueueConfig.Capacity = 20 // small, so Append blocks and batches interleave
		c.QueueConfig.BatchSendDeadline = time.Millisecond
	})

	const series, rounds = 30, 60
	shardsUsed := map[uint64]bool{}
	for r := 0; r < rounds; r++ {
		batch := make([]Item, series)
		for i := range batch {
			// Append in a different series order every round: only the
			// order within a series is kept.
			s := (i*7 + r) % series
			batch[i] = item(fmt.Sprintf("s%d", s), float64(r), int64(r))
			shardsUsed[batch[i].Hash%4] = true
		}
		require.Equal(t, series, e.appendItems(t.Context(), batch))
	}
	require.NoError(t, stop(t, e, 10*time.Second))
	require.Len(t, shardsUsed, 4, "the series spread over every shard")

	perSeries := map[string][]float64{}
	reqs := srv.requests(t)
	for _, req := range reqs {
		require.LessOrEqual(t, len(req.samples), 7)
		for _, s := range req.samples {
			perSeries[s.series] = append(perSeries[s.series], s.value)
		}
	}
	require.Len(t, perSeries, series)
	want := make([]float64, rounds)
	for r := range want {
		want[r] = float64(r)
	}
	for name, got := range perSeries {
		require.Equal(t, want, got, "series %s", name)
	}
	require.Greater(t, len(reqs), rounds, "many batches")
	require.Equal(t, float64(series*rounds), counter(t, m.samplesSent))
	require.Equal(t, 0.0, testutil.ToFloat64(m.queueLength.WithLabelValues(testEndpoint)))
	require.Equal(t, 4.0, testutil.ToFloat64(m.shards.WithLabelValues(testEndpoint)))
}

func TestBatching(t *testing.T) {
	t.Run("max_samples_per_send", func(t *testing.T) {
		srv := newTestServer(t, nil)
		e, _ := newTestEndpoint(t, srv.URL, func(c *Config) {
			c.QueueConfig.MaxSamplesPerSend = 5
			c.QueueConfig.BatchSendDeadline = time.Hour // only full batches before Stop
		})
		in := items(23, 1000)
		require.Equal(t, 23, e.appendItems(t.Context(), in))
		srv.waitRequests(t, 4)
		require.NoError(t, stop(t, e, 10*time.Second))

		reqs := srv.requests(t)
		var sizes []int
		var got []gotSample
		for _, r := range reqs {
			sizes = append(sizes, len(r.samples))
			got = append(got, r.samples...)
		}
		require.Equal(t, []int{5, 5, 5, 5, 3}, sizes, "full batches, then the rest at Stop")
		require.Equal(t, wantSamples(in), got)
	})

	t.Run("batch_send_deadline flushes a partial batch", func(t *testing.T) {
		srv := newTestServer(t, nil)
		e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
			c.QueueConfig.MaxSamplesPerSend = 100
			c.QueueConfig.BatchSendDeadline = 10 * time.Millisecond
		})
		in := items(3, 1000)
		require.Equal(t, 3, e.appendItems(t.Context(), in))
		srv.waitRequests(t, 1) // before Stop: the deadline sent it
		reqs := srv.requests(t)
		require.Len(t, reqs, 1)
		require.Equal(t, wantSamples(in), reqs[0].samples)
		require.NoError(t, stop(t, e, 10*time.Second))
		require.Len(t, srv.requests(t), 1)
		require.Equal(t, 3.0, counter(t, m.samplesSent))
	})
}

// wantSamples is what the server should decode from items made by items().
func wantSamples(in []Item) []gotSample {
	out := make([]gotSample, len(in))
	for i, it := range in {
		out[i] = gotSample{series: fmt.Sprintf("s%d", i), value: it.Value, ts: it.Timestamp}
	}
	return out
}

func TestStop(t *testing.T) {
	t.Run("flushes everything queued", func(t *testing.T) {
		srv := newTestServer(t, nil)
		e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
			c.QueueConfig.MinShards = 4
			c.QueueConfig.MaxSamplesPerSend = 50
			c.QueueConfig.BatchSendDeadline = time.Hour
		})
		require.Equal(t, 1000, e.appendItems(t.Context(), items(1000, 1)))
		require.NoError(t, stop(t, e, 10*time.Second))

		n := 0
		for _, r := range srv.requests(t) {
			n += len(r.samples)
		}
		require.Equal(t, 1000, n)
		require.Equal(t, 1000.0, counter(t, m.samplesSent))
		require.Equal(t, 0.0, counter(t, m.samplesDropped, ReasonShutdown))
		require.Equal(t, 0.0, testutil.ToFloat64(m.queueLength.WithLabelValues(testEndpoint)))
	})

	// hang returns a server that never answers until the client gives up.
	hang := func(t *testing.T) *testServer {
		t.Helper()
		release := make(chan struct{})
		srv := newTestServer(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
		t.Cleanup(func() { close(release) }) // runs before srv.Close
		return srv
	}

	t.Run("deadline drops queued and in-flight samples", func(t *testing.T) {
		srv := hang(t)
		e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
			c.QueueConfig.MinShards = 2
			c.QueueConfig.MaxSamplesPerSend = 5
			c.QueueConfig.Capacity = 100
			c.QueueConfig.BatchSendDeadline = time.Hour
		})
		in := items(40, 1)
		require.Equal(t, 40, e.appendItems(t.Context(), in))
		srv.waitRequests(t, 2) // one batch in flight per shard

		err := stop(t, e, 50*time.Millisecond)
		require.Error(t, err)
		require.ErrorContains(t, err, `endpoint "test"`)
		require.Equal(t, 40.0, counter(t, m.samplesDropped, ReasonShutdown), "queued + in flight")
		require.Equal(t, 0.0, counter(t, m.samplesSent))
		require.Equal(t, 0.0, testutil.ToFloat64(m.queueLength.WithLabelValues(testEndpoint)))
		require.Len(t, srv.requests(t), 2, "nothing sent after the deadline")
	})

	t.Run("deadline drops the batch in flight", func(t *testing.T) {
		srv := hang(t)
		e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
			c.QueueConfig.MaxSamplesPerSend = 5
		})
		require.Equal(t, 5, e.appendItems(t.Context(), items(5, 1)))
		srv.waitRequests(t, 1) // the whole queue is in flight

		err := stop(t, e, 50*time.Millisecond)
		require.Error(t, err, "samples were dropped")
		require.Equal(t, 5.0, counter(t, m.samplesDropped, ReasonShutdown))
	})

	t.Run("deadline already passed drops a partial batch", func(t *testing.T) {
		// The shard holds a partial batch waiting for the batch deadline;
		// Stop's flush and its cancel arrive together.
		for range 20 {
			srv := hang(t)
			e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
				c.QueueConfig.BatchSendDeadline = time.Hour
			})
			require.Equal(t, 3, e.appendItems(t.Context(), items(3, 1)))
			require.Eventually(t, func() bool { return e.cur.shards[0].ring.len() == 0 }, 5*time.Second, time.Millisecond)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			require.Error(t, e.Stop(ctx))
			require.Equal(t, 3.0, counter(t, m.samplesDropped, ReasonShutdown))
			require.Equal(t, 0.0, testutil.ToFloat64(m.queueLength.WithLabelValues(testEndpoint)))
		}
	})

	t.Run("deadline unblocks a full Append", func(t *testing.T) {
		srv := hang(t)
		e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
			c.QueueConfig.MaxSamplesPerSend = 5
			c.QueueConfig.Capacity = 5
		})
		queued := make(chan int)
		go func() { queued <- e.appendItems(context.Background(), items(30, 1)) }()
		srv.waitRequests(t, 1) // 5 in flight, 5 queued, Append blocked

		require.Error(t, stop(t, e, 50*time.Millisecond))
		n := <-queued
		require.Less(t, n, 30)
		require.Equal(t, float64(n), counter(t, m.samplesDropped, ReasonShutdown))
		require.Equal(t, 0, e.appendItems(context.Background(), items(1, 2)), "closed")
	})

	t.Run("Append gives up when its context ends", func(t *testing.T) {
		srv := hang(t)
		e, _ := newTestEndpoint(t, srv.URL, func(c *Config) {
			c.QueueConfig.MaxSamplesPerSend = 5
			c.QueueConfig.Capacity = 5
		})
		ctx, cancel := context.WithCancel(t.Context())
		queued := make(chan int)
		go func() { queued <- e.appendItems(ctx, items(30, 1)) }()
		srv.waitRequests(t, 1)
		require.Eventually(t, func() bool { return e.cur.shards[0].ring.len() == 5 }, 5*time.Second, time.Millisecond)
		cancel()
		require.Equal(t, 10, <-queued, "5 in flight and 5 queued")
		require.Error(t, stop(t, e, 50*time.Millisecond))
	})
}

// Forget deletes every series of a removed endpoint, and only those.
// A stopped endpoint keeps no connection open: a reload replaces the
// endpoint whose configuration changed, and each one left behind held a
// descriptor and two goroutines until the idle timeout.
func TestStopClosesItsConnections(t *testing.T) {
	var open atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	e, _ := newTestEndpoint(t, srv.URL, func(c *Config) { c.QueueConfig.MinShards = 4 })
	require.Equal(t, 1000, e.appendItems(t.Context(), items(1000, 1)))
	require.NoError(t, stop(t, e, 10*time.Second))
	require.Eventually(t, func() bool { return open.Load() == 0 }, 5*time.Second, 10*time.Millisecond,
		"connections still open after Stop: %d", open.Load())
}

func TestMetricsForget(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	srv := newTestServer(t, nil)
	for _, name := range []string{"removed", "kept"} {
		cfg := DefaultConfig
		cfg.URL, cfg.Name = srv.URL, name
		if name == "removed" {
			cfg.DiskBuffer.Directory = t.TempDir() // the disk buffer's series too
		}
		require.NoError(t, cfg.Validate())
		e, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Metrics: m, UserAgent: testUserAgent})
		require.NoError(t, err)
		e.startShards()
		require.Equal(t, 2, e.appendItems(t.Context(), items(2, 1700000000000)))
		require.NoError(t, stop(t, e, 5*time.Second))
	}
	count := func(endpoint string) int {
		t.Helper()
		mfs, err := reg.Gather()
		require.NoError(t, err)
		n := 0
		for _, mf := range mfs {
			for _, s := range mf.GetMetric() {
				for _, l := range s.GetLabel() {
					if l.GetName() == "endpoint" && l.GetValue() == endpoint {
						n++
					}
				}
			}
		}
		return n
	}
	kept := count("kept")
	require.Greater(t, count("removed"), 20)
	require.Greater(t, kept, 20)

	m.Forget("removed")
	require.Zero(t, count("removed"), "every series of the removed endpoint is gone")
	require.Equal(t, kept, count("kept"), "the others stay")
	require.Equal(t, 2.0, testutil.ToFloat64(m.samplesSent.WithLabelValues("kept")))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kube_state_push_remote_samples_sent_total Samples accepted by the endpoint (2xx).
# TYPE kube_state_push_remote_samples_sent_total counter
kube_state_push_remote_samples_sent_total{endpoint="kept"} 2
`), "kube_state_push_remote_samples_sent_total"))
	m.Forget("unknown") // no-op
}
