package queue

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestDelivery runs status sequences through a whole endpoint and checks
// what the receiver got, in which order, and that every sample ends as sent
// or dropped exactly once.
func TestDelivery(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		answers []answer
		change  func(*QueueConfig)
		// wantBatches are the series of each request, in order; nil skips
		// the check (the number of retries depends on timing).
		wantBatches [][]string
		// minRequests is checked when wantBatches is nil.
		minRequests int
		wantSent    int
		// wantDropped is the drop reason of the samples not sent.
		wantDropped string
		// wantRetried is samples_retried_total (and samples_failed_total);
		// -1 skips the check.
		wantRetried int
		// wantCodes is requests_total by code; nil skips the check.
		wantCodes map[string]float64
	}{
		{
			name: "413 then 204 for the halves", n: 4,
			answers:     []answer{status(413), status(204)},
			wantBatches: [][]string{{"s0", "s1", "s2", "s3"}, {"s0", "s1"}, {"s2", "s3"}},
			wantSent:    4, wantCodes: map[string]float64{"413": 1, "204": 2},
		},
		{
			name: "413 on a half splits it again, in order", n: 5,
			answers: []answer{status(413), status(413), status(204)},
			wantBatches: [][]string{
				{"s0", "s1", "s2", "s3", "s4"}, {"s0", "s1"}, {"s0"}, {"s1"}, {"s2", "s3", "s4"},
			},
			wantSent: 5, wantCodes: map[string]float64{"413": 2, "204": 3},
		},
		{
			name: "413 always drops every sample one by one", n: 7,
			answers:     []answer{status(413)},
			wantBatches: splitOrder(seriesNames(7)), // 2n-1 requests
			wantDropped: ReasonTooLarge, wantCodes: map[string]float64{"413": 13},
		},
		{
			name: "a half retried after 503 keeps its place", n: 2,
			answers:     []answer{status(413), status(503), status(204)},
			wantBatches: [][]string{{"s0", "s1"}, {"s0"}, {"s0"}, {"s1"}},
			wantSent:    2, wantRetried: 1, wantCodes: map[string]float64{"413": 1, "503": 1, "204": 2},
		},
		{
			name: "429 x3 then 204 retried by default", n: 3,
			answers: []answer{
				status(429, "Retry-After", "0"), status(429), status(429, "Retry-After", "0"), status(204),
			},
			wantBatches: [][]string{seriesNames(3), seriesNames(3), seriesNames(3), seriesNames(3)},
			wantSent:    3, wantRetried: 9, wantCodes: map[string]float64{"429": 3, "204": 1},
		},
		{
			name: "503 forever ends at max_retry_duration", n: 3,
			answers:     []answer{status(503)},
			change:      func(q *QueueConfig) { q.MaxRetryDuration = 50 * time.Millisecond },
			minRequests: 2, wantDropped: ReasonRetriesDone, wantRetried: -1,
		},
		{
			name: "a long Retry-After does not stretch max_retry_duration", n: 3,
			answers:     []answer{status(429, "Retry-After", "3600")},
			change:      func(q *QueueConfig) { q.MaxRetryDuration = 50 * time.Millisecond },
			minRequests: 1, wantDropped: ReasonRetriesDone, wantRetried: -1,
		},
		{
			name: "network errors end at max_retry_duration", n: 3,
			answers:     []answer{hangUp},
			change:      func(q *QueueConfig) { q.MaxRetryDuration = 50 * time.Millisecond },
			minRequests: 2, wantDropped: ReasonRetriesDone, wantRetried: -1,
			wantCodes: map[string]float64{"error": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTestServer(t, answers(tt.answers...))
			e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
				if tt.change != nil {
					tt.change(&c.QueueConfig)
				}
			})
			in := items(tt.n, 1700000000000)
			start := time.Now()
			require.Equal(t, tt.n, e.appendItems(t.Context(), in))
			require.NoError(t, stop(t, e, 10*time.Second))
			require.Less(t, time.Since(start), 3*time.Second, "retries are bounded")

			reqs := srv.requests(t)
			got := make([][]string, len(reqs))
			for i, r := range reqs {
				requireProtocol(t, r.header)
				for _, s := range r.samples {
					got[i] = append(got[i], s.series)
				}
			}
			if tt.wantBatches != nil {
				require.Equal(t, tt.wantBatches, got)
			} else {
				require.GreaterOrEqual(t, len(reqs), tt.minRequests)
				for i := range got {
					require.Equal(t, seriesNames(tt.n), got[i], "request %d", i)
				}
			}

			require.Equal(t, float64(tt.wantSent), counter(t, m.samplesSent), "sent")
			for _, r := range reasons {
				want := 0.0
				if r == tt.wantDropped {
					want = float64(tt.n - tt.wantSent)
				}
				require.Equal(t, want, counter(t, m.samplesDropped, r), "dropped reason %s", r)
			}
			if tt.wantRetried >= 0 {
				require.Equal(t, float64(tt.wantRetried), counter(t, m.samplesRetried), "retried")
				require.Equal(t, float64(tt.wantRetried), counter(t, m.samplesFailed), "failed")
			}
			if tt.wantCodes != nil {
				require.Equal(t, len(tt.wantCodes), testutil.CollectAndCount(m.requests))
				for code, want := range tt.wantCodes {
					require.Equal(t, want, counter(t, m.requests, code), "requests with code %s", code)
				}
			}
			require.Equal(t, 0.0, testutil.ToFloat64(m.queueLength.WithLabelValues(testEndpoint)))
		})
	}
}

// TestSplitDroppedMetrics checks the self-metrics of a batch that is too
// large down to every single series, as exposed.
func TestSplitDroppedMetrics(t *testing.T) {
	srv := newTestServer(t, answers(status(413)))
	e, m := newTestEndpoint(t, srv.URL, nil)
	require.Equal(t, 4, e.appendItems(t.Context(), items(4, 1)))
	require.NoError(t, stop(t, e, 10*time.Second))
	require.Len(t, srv.requests(t), 2*4-1)

	var want strings.Builder
	want.WriteString("# HELP kube_state_push_remote_samples_dropped_total Samples given up on, by reason.\n")
	want.WriteString("# TYPE kube_state_push_remote_samples_dropped_total counter\n")
	for _, r := range []string{"bad_request", "buffer_error", "buffer_full", "client_error", "conflict", "rate_limited", "resent", "retries_ended", "queue_full", "series_too_large", "shutdown", "too_large", "too_old", "unsupported", "invalid_labels", "label_too_long", "too_many_labels"} {
		v := 0
		if r == ReasonTooLarge {
			v = 4
		}
		fmt.Fprintf(&want, "kube_state_push_remote_samples_dropped_total{endpoint=%q,reason=%q} %d\n", testEndpoint, r, v)
	}
	require.NoError(t, testutil.CollectAndCompare(m.samplesDropped, strings.NewReader(want.String())))
	require.NoError(t, testutil.CollectAndCompare(m.requests, strings.NewReader(`
# HELP kube_state_push_remote_requests_total HTTP requests by status code ("error" for no response).
# TYPE kube_state_push_remote_requests_total counter
kube_state_push_remote_requests_total{code="413",endpoint="test"} 7
`)))
	require.Equal(t, 0.0, counter(t, m.samplesSent))
}

func TestQueueConfigValidateMaxRetryDuration(t *testing.T) {
	q := DefaultQueueConfig
	require.Zero(t, q.MaxRetryDuration, "no limit by default, as Prometheus")
	require.True(t, q.RetryOnHTTP429, "on by default, as in Grafana Alloy")
	q.MaxRetryDuration = 0
	require.NoError(t, q.Validate(), "0 means no limit")
	q.MaxRetryDuration = -time.Second
	require.EqualError(t, q.Validate(), "max_retry_duration: must not be negative (0 means no limit), not -1s")
}

// An effective config (marshalled with its defaults) must keep explicit
// values that differ from the defaults when loaded again.
func TestQueueConfigRoundTrip(t *testing.T) {
	q := DefaultQueueConfig
	q.RetryOnHTTP429 = false
	q.MaxRetryDuration = 5 * time.Minute
	out, err := yaml.Marshal(&q)
	require.NoError(t, err)
	require.Contains(t, string(out), "retry_on_http_429: false")
	require.Contains(t, string(out), "max_retry_duration: 5m0s")
	got := DefaultQueueConfig
	require.NoError(t, yaml.Unmarshal(out, &got))
	require.Equal(t, q, got)

	// The default, 0, survives too.
	q = DefaultQueueConfig
	out, err = yaml.Marshal(&q)
	require.NoError(t, err)
	require.Contains(t, string(out), "max_retry_duration: 0s")
	got = QueueConfig{}
	require.NoError(t, yaml.Unmarshal(out, &got))
	require.Equal(t, q, got)
}

// seriesNames returns "s0".."s<n-1>".
func seriesNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "s" + strconv.Itoa(i)
	}
	return out
}

// splitOrder is the order of requests when every request is answered 413:
// the batch, then its first half split the same way, then its second half.
func splitOrder(batch []string) [][]string {
	out := [][]string{batch}
	if len(batch) > 1 {
		mid := len(batch) / 2
		out = append(out, splitOrder(batch[:mid])...)
		out = append(out, splitOrder(batch[mid:])...)
	}
	return out
}

// With max_retry_duration at its default, 0, a memory-only shard retries a
// recoverable error until Stop, as Prometheus does: nothing is dropped as
// retries_ended, and what the stop deadline cuts off is counted as shutdown.
func TestRetriesUntilStopByDefault(t *testing.T) {
	srv := newTestServer(t, answers(status(503)))
	e, m := newTestEndpoint(t, srv.URL, nil)
	require.Zero(t, e.cfg.QueueConfig.MaxRetryDuration)
	require.Equal(t, 3, e.appendItems(t.Context(), items(3, 1700000000000)))
	e.flush()
	srv.waitRequests(t, 20) // backoff 1ms..10ms: well past any short limit
	require.Zero(t, counter(t, m.samplesDropped, ReasonRetriesDone), "still retrying")
	require.Error(t, stop(t, e, 50*time.Millisecond))
	require.Zero(t, counter(t, m.samplesDropped, ReasonRetriesDone))
	require.Equal(t, 3.0, counter(t, m.samplesDropped, ReasonShutdown))
	require.Zero(t, counter(t, m.samplesSent))
}
