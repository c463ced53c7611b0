package queue

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// syncBuffer is a bytes.Buffer safe for the shards' goroutines.
type syncBuffer struct {
	// mu guards b.
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the logged lines with the failed request message.
func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(s.b.String(), "\n") {
		if strings.Contains(l, "failed to send remote write 2.0 request") {
			out = append(out, l)
		}
	}
	return out
}

// failedLogRun sends 2 samples to an endpoint of proto whose receiver
// answers as respond says, with failed_request_logging set to on, and
// returns the failed request lines logged at debug level.
func failedLogRun(t *testing.T, proto string, on bool, respond func(i, samples int, w http.ResponseWriter)) []string {
	t.Helper()
	srv := newProtoServer(t, respond)
	cfg := DefaultConfig
	cfg.URL, cfg.Name, cfg.ProtobufMessage, cfg.FailedRequestLogging = srv.URL, testEndpoint, proto, on
	cfg.QueueConfig.MinBackoff, cfg.QueueConfig.MaxBackoff = time.Millisecond, 10*time.Millisecond
	cfg.QueueConfig.BatchSendDeadline = 10 * time.Millisecond
	require.NoError(t, cfg.Validate())
	var buf syncBuffer
	e, err := New(cfg, Options{
		Logger:  slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Metrics: NewMetrics(prometheus.NewRegistry()), UserAgent: testUserAgent,
		Metadata: map[string]encode.Metadata{"test_metric": {Type: encode.TypeGauge, Help: "A test metric."}},
	})
	require.NoError(t, err)
	e.startShards()
	e.appendItems(t.Context(), items(2, 1000))
	require.NoError(t, stop(t, e, 5*time.Second))
	return buf.lines()
}

// failed_request_logging logs each failed try of a 2.0 request at debug
// level, with its series and the error, as Prometheus does; nothing when
// off, for 1.0 requests, or for tries that succeed.
func TestFailedRequestLogging(t *testing.T) {
	c, err := decodeEntry(t, "url: http://r/api/v1/write\nfailed_request_logging: true\n")
	require.NoError(t, err)
	require.True(t, c.FailedRequestLogging)
	require.False(t, DefaultConfig.FailedRequestLogging, "off, as in Prometheus")

	twoFailures := func(i, n int, w http.ResponseWriter) {
		if i < 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		answerWritten(w, n)
	}
	lines := failedLogRun(t, ProtoV2, true, twoFailures)
	require.Len(t, lines, 2, "one per failed try: %q", lines)
	for _, l := range lines {
		require.Contains(t, l, "level=DEBUG")
		require.Contains(t, l, `endpoint=test`)
		require.Contains(t, l, `test_metric{series=\"s0\"} 0 @1000`)
		require.Contains(t, l, `test_metric{series=\"s1\"} 1 @1000`)
		require.Contains(t, l, "503 Service Unavailable")
	}

	lines = failedLogRun(t, ProtoV2, true, func(_, _ int, w http.ResponseWriter) {
		w.WriteHeader(http.StatusBadRequest)
	})
	require.Len(t, lines, 3, "a final answer is logged too, for the request and each half of its split: %q", lines)
	for _, l := range lines {
		require.Contains(t, l, "400 Bad Request")
	}
	require.Contains(t, lines[0], `test_metric{series=\"s0\"} 0 @1000, test_metric{series=\"s1\"} 1 @1000`)
	require.NotContains(t, lines[1], `series=\"s1\"`)
	require.NotContains(t, lines[2], `series=\"s0\"`)

	// A 2xx without Samples-Written: logged once; the 1.0 resend is not.
	lines = failedLogRun(t, ProtoV2, true, func(_, _ int, w http.ResponseWriter) {
		w.WriteHeader(http.StatusNoContent)
	})
	require.Len(t, lines, 1, "%q", lines)
	require.Contains(t, lines[0], "without the X-Prometheus-Remote-Write-Samples-Written header")

	require.Empty(t, failedLogRun(t, ProtoV2, false, twoFailures), "off")
	require.Empty(t, failedLogRun(t, ProtoV1, true, twoFailures), "1.0 requests are not logged, as in Prometheus")
	require.Empty(t, failedLogRun(t, ProtoV2, true, func(_, n int, w http.ResponseWriter) { answerWritten(w, n) }), "no failure")
}

func TestFormatValue(t *testing.T) {
	require.Equal(t, "stale", formatValue(encode.StaleNaN))
	require.Equal(t, "1.5", formatValue(1.5))
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
