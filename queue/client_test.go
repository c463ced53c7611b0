package queue

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// answer writes one response.
type answer func(w http.ResponseWriter, r *http.Request)

func status(code int, header ...string) answer {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, http.StatusText(code))
	}
}

// statusBody answers code with body.
func statusBody(code int, body string) answer {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// Bodies of answers that refuse samples for their age, as the receivers
// word them.
const (
	prometheusOutOfBounds = "out of bounds\n"
	prometheusTooOld      = "too old sample\n"
	thanosOutOfBounds     = "store locally for endpoint 127.0.0.1:10901: add 3 samples: out of bounds\n"
	mimirTooOld           = "send data to ingesters: failed pushing to ingester ingester-zone-a-0: user=edge-1: the sample has been rejected because its timestamp is too old (err-mimir-sample-timestamp-too-old). The affected sample has timestamp 2023-11-14T22:13:20Z and is from series {__name__=\"test_metric\"}"
	mimirTooFarInPast     = "received a sample whose timestamp is too far in the past, timestamp: 1700000000000 series: 'test_metric' (err-mimir-too-far-in-past). To adjust the related per-tenant limit, configure -validation.past-grace-period, or contact your service administrator."
)

// hangUp closes the connection without answering.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// answers answers request i with as[i], repeating the last one.
func answers(as ...answer) func(int, http.ResponseWriter, *http.Request) {
	return func(i int, w http.ResponseWriter, r *http.Request) {
		as[min(i, len(as)-1)](w, r)
	}
}

// requireProtocol checks the Remote-Write 1.0 headers and the configured
// extra header.
func requireProtocol(t *testing.T, h http.Header) {
	t.Helper()
	require.Equal(t, "snappy", h.Get("Content-Encoding"))
	require.Equal(t, "application/x-protobuf", h.Get("Content-Type"))
	require.Equal(t, "0.1.0", h.Get("X-Prometheus-Remote-Write-Version"))
	require.Equal(t, testUserAgent, h.Get("User-Agent"))
	require.Equal(t, testTenant, h.Get("X-Scope-OrgID"))
}

func TestStatusCodes(t *testing.T) {
	tests := []struct {
		name     string
		answers  []answer
		retry429 bool
		// wantRequests is how many requests the server gets.
		wantRequests int
		// wantDropped is the drop reason; "" means the batch was sent.
		wantDropped string
		// wantCodes is requests_total by code.
		wantCodes map[string]float64
		// single sends a batch of one sample: a refused batch of more is
		// split (TestDelivery).
		single bool
		// wantDeduplicated is true when the samples count as deduplicated
		// (a 202 from Mimir's HA tracker).
		wantDeduplicated bool
	}{
		{name: "200 sent", answers: []answer{status(200)}, wantRequests: 1, wantCodes: map[string]float64{"200": 1}},
		{name: "204 sent", answers: []answer{status(204)}, wantRequests: 1, wantCodes: map[string]float64{"204": 1}},
		{name: "202 sent, deduplicated", answers: []answer{status(202)}, wantRequests: 1, wantCodes: map[string]float64{"202": 1}, wantDeduplicated: true},
		{name: "400 dropped", single: true, answers: []answer{status(400), status(204)}, wantRequests: 1, wantDropped: ReasonBadRequest, wantCodes: map[string]float64{"400": 1}},
		{name: "409 dropped", single: true, answers: []answer{status(409), status(204)}, wantRequests: 1, wantDropped: ReasonConflict, wantCodes: map[string]float64{"409": 1}},
		{
			name: "400 out of bounds dropped as too_old (Prometheus)", single: true,
			answers: []answer{statusBody(400, prometheusOutOfBounds), status(204)}, wantRequests: 1,
			wantDropped: ReasonTooOld, wantCodes: map[string]float64{"400": 1},
		},
		{
			name: "409 out of bounds dropped as too_old (Thanos receive)", single: true,
			answers: []answer{statusBody(409, thanosOutOfBounds), status(204)}, wantRequests: 1,
			wantDropped: ReasonTooOld, wantCodes: map[string]float64{"409": 1},
		},
		{
			name: "400 sample-timestamp-too-old dropped as too_old (Mimir)", single: true,
			answers: []answer{statusBody(400, mimirTooOld), status(204)}, wantRequests: 1,
			wantDropped: ReasonTooOld, wantCodes: map[string]float64{"400": 1},
		},
		// 413 splits the batch: TestDelivery.
		{name: "415 dropped", answers: []answer{status(415), status(204)}, wantRequests: 1, wantDropped: ReasonUnsupported, wantCodes: map[string]float64{"415": 1}},
		{name: "404 dropped", answers: []answer{status(404), status(204)}, wantRequests: 1, wantDropped: ReasonClientError, wantCodes: map[string]float64{"404": 1}},
		{
			name:    "429 dropped without retry_on_http_429",
			answers: []answer{status(429, "Retry-After", "0"), status(204)}, wantRequests: 1,
			wantDropped: ReasonRateLimited, wantCodes: map[string]float64{"429": 1},
		},
		{
			name:     "429 retried with retry_on_http_429",
			answers:  []answer{status(429, "Retry-After", "0"), status(429), status(204)},
			retry429: true, wantRequests: 3, wantCodes: map[string]float64{"429": 2, "204": 1},
		},
		{
			name:    "500 retried",
			answers: []answer{status(500), status(204)}, wantRequests: 2,
			wantCodes: map[string]float64{"500": 1, "204": 1},
		},
		{
			name:    "503 retried",
			answers: []answer{status(503), status(502), status(204)}, wantRequests: 3,
			wantCodes: map[string]float64{"503": 1, "502": 1, "204": 1},
		},
		{
			name:    "connection closed retried",
			answers: []answer{hangUp, status(204)}, wantRequests: 2,
			wantCodes: map[string]float64{"204": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTestServer(t, answers(tt.answers...))
			e, m := newTestEndpoint(t, srv.URL, func(c *Config) { c.QueueConfig.RetryOnHTTP429 = tt.retry429 })
			in := items(3, 1700000000000)
			if tt.single {
				in = in[:1]
			}
			require.Equal(t, len(in), e.appendItems(t.Context(), in))
			require.NoError(t, stop(t, e, 10*time.Second))

			reqs := srv.requests(t)
			require.Len(t, reqs, tt.wantRequests)
			for i, r := range reqs {
				requireProtocol(t, r.header)
				require.Equal(t, wantSamples(in), r.samples, "request %d", i)
				if i == 0 {
					require.Empty(t, r.header.Values(retryAttempt), "first request")
				} else {
					require.Equal(t, strconv.Itoa(i), r.header.Get(retryAttempt), "request %d", i)
				}
			}

			n := float64(len(in))
			retries := float64(tt.wantRequests - 1)
			wantSent := n
			if tt.wantDropped != "" {
				wantSent = 0
			}
			require.Equal(t, wantSent, counter(t, m.samplesSent), "sent")
			wantDeduplicated := 0.0
			if tt.wantDeduplicated {
				wantDeduplicated = n
			}
			require.Equal(t, wantDeduplicated, counter(t, m.deduplicated), "deduplicated")
			require.Equal(t, n*retries, counter(t, m.samplesRetried), "retried")
			require.Equal(t, n*retries, counter(t, m.samplesFailed), "failed")
			for _, r := range reasons {
				want := 0.0
				if r == tt.wantDropped {
					want = n
				}
				require.Equal(t, want, counter(t, m.samplesDropped, r), "dropped reason %s", r)
			}
			require.Equal(t, len(tt.wantCodes), testutil.CollectAndCount(m.requests))
			for code, want := range tt.wantCodes {
				require.Equal(t, want, counter(t, m.requests, code), "requests with code %s", code)
			}
			require.Equal(t, 0.0, testutil.ToFloat64(m.queueLength.WithLabelValues(testEndpoint)))
		})
	}
}

func TestConnectionRefusedThenSuccess(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	e, m := newTestEndpoint(t, "http://"+addr+"/api/v1/write", func(c *Config) {
		c.QueueConfig.BatchSendDeadline = time.Millisecond
	})
	in := items(3, 1)
	require.Equal(t, 3, e.appendItems(t.Context(), in))
	require.Eventually(t, func() bool { return counter(t, m.samplesFailed) >= 3 }, 5*time.Second, time.Millisecond,
		"a refused connection is a recoverable error")

	// Now the receiver comes up on the same address.
	l, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &testServer{arrived: make(chan struct{}, 100)}
	srv.Server = httptest.NewUnstartedServer(http.HandlerFunc(srv.handle))
	require.NoError(t, srv.Listener.Close())
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)

	srv.waitRequests(t, 1)
	require.NoError(t, stop(t, e, 10*time.Second))
	reqs := srv.requests(t)
	require.Len(t, reqs, 1)
	requireProtocol(t, reqs[0].header)
	require.Equal(t, wantSamples(in), reqs[0].samples)
	attempt, err := strconv.Atoi(reqs[0].header.Get(retryAttempt))
	require.NoError(t, err)
	require.GreaterOrEqual(t, attempt, 1)
	require.Equal(t, 3.0, counter(t, m.samplesSent))
	require.Equal(t, float64(3*attempt), counter(t, m.samplesRetried))
	for _, r := range reasons {
		require.Equal(t, 0.0, counter(t, m.samplesDropped, r), "dropped reason %s", r)
	}
}

// newTestSender returns a sender to url and its metrics.
func newTestSender(t *testing.T, url string, headers map[string]string) (*sender, *endpointMetrics) {
	t.Helper()
	return newTestSenderWith(t, url, headers, http.DefaultTransport)
}

func newTestSenderWith(t *testing.T, url string, headers map[string]string, rt http.RoundTripper) (*sender, *endpointMetrics) {
	t.Helper()
	cfg := DefaultConfig
	cfg.URL = url
	cfg.Headers = headers
	cfg.QueueConfig.MinBackoff = time.Millisecond
	cfg.QueueConfig.MaxBackoff = 10 * time.Millisecond
	m := NewMetrics(prometheus.NewRegistry()).forEndpoint(testEndpoint)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: rt}
	t.Cleanup(hc.CloseIdleConnections)
	return newSender(&cfg, hc, testUserAgent, m), m
}

func TestSendErrorBody(t *testing.T) {
	long := strings.Repeat("x", 10*maxErrBody)
	srv := newTestServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "out of order sample: "+long)
	})
	s, _ := newTestSender(t, srv.URL, nil)
	_, err := s.send(t.Context(), encodeItems(items(1, 1)), 1, encode.ContentTypeV1, encode.VersionV1)
	var herr *HTTPError
	require.ErrorAs(t, err, &herr)
	require.Equal(t, http.StatusBadRequest, herr.Status)
	require.Equal(t, ReasonBadRequest, herr.Reason())
	require.Len(t, herr.Body, maxErrBody, "only a prefix of the body is kept")
	require.True(t, strings.HasPrefix(herr.Body, "out of order sample: "))
	require.ErrorContains(t, err, "remote write answered 400: out of order sample")
}

func TestSendProtocolHeadersWin(t *testing.T) {
	srv := newTestServer(t, nil)
	// Validate rejects these; send must still never let them through.
	s, _ := newTestSender(t, srv.URL, map[string]string{
		"content-type":  "text/plain",
		"User-Agent":    "other",
		"X-Scope-OrgID": testTenant,
	})
	_, err := s.send(t.Context(), encodeItems(items(2, 1)), 2, encode.ContentTypeV1, encode.VersionV1)
	require.NoError(t, err)
	reqs := srv.requests(t)
	require.Len(t, reqs, 1)
	requireProtocol(t, reqs[0].header)
}

func TestSendContextEnds(t *testing.T) {
	srv := newTestServer(t, answers(status(503)))
	s, m := newTestSender(t, srv.URL, nil)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		srv.waitRequests(t, 2) // failed, then retried
		cancel()
	}()
	_, err := s.send(ctx, encodeItems(items(1, 1)), 1, encode.ContentTypeV1, encode.VersionV1)
	require.ErrorIs(t, err, context.Canceled)
	var herr *HTTPError
	require.False(t, errors.As(err, &herr), "not a drop decided by the endpoint")
	require.GreaterOrEqual(t, testutil.ToFloat64(m.retried), 1.0)
}

// encodeItems is the compressed request body of in.
func encodeItems(in []Item) []byte {
	samples := make([]encode.Sample, len(in))
	for i := range in {
		samples[i] = in[i].Sample
	}
	return encode.Compress(nil, encode.AppendWriteRequest(nil, samples))
}

// cancelAfterResponse is a RoundTripper that ends the request's context
// right after the answer arrives: the answer and the end of the context race.
type cancelAfterResponse struct {
	http.RoundTripper
	cancel context.CancelFunc
}

func (c cancelAfterResponse) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.RoundTripper.RoundTrip(r)
	c.cancel()
	return resp, err
}

func TestSendAnswerAfterContextEnds(t *testing.T) {
	tests := []struct {
		code int
		// want is "sent", "dropped" (an *HTTPError) or "shutdown".
		want string
	}{
		{code: 204, want: "sent"},     // delivered: not a drop
		{code: 400, want: "dropped"},  // the answer says why
		{code: 429, want: "shutdown"}, // retried by default
		{code: 503, want: "shutdown"}, // would be retried
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.code), func(t *testing.T) {
			srv := newTestServer(t, answers(status(tt.code)))
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			ctx, cancel := context.WithCancel(t.Context())
			s, _ := newTestSenderWith(t, srv.URL, nil, cancelAfterResponse{RoundTripper: tr, cancel: cancel})
			_, err := s.send(ctx, encodeItems(items(1, 1)), 1, encode.ContentTypeV1, encode.VersionV1)
			switch tt.want {
			case "sent":
				require.NoError(t, err)
			case "dropped":
				var herr *HTTPError
				require.ErrorAs(t, err, &herr)
				require.Equal(t, tt.code, herr.Status)
			case "shutdown":
				require.ErrorIs(t, err, context.Canceled)
			}
			require.Len(t, srv.requests(t), 1)
		})
	}
}

func TestHTTPErrorReason(t *testing.T) {
	for code, want := range map[int]string{
		400: ReasonBadRequest, 401: ReasonClientError, 403: ReasonClientError, 404: ReasonClientError,
		409: ReasonConflict, 413: ReasonTooLarge, 415: ReasonUnsupported, 422: ReasonClientError,
		429: ReasonRateLimited,
	} {
		require.Equal(t, want, (&HTTPError{Status: code}).Reason(), "status %d", code)
	}
	for _, tt := range []struct {
		status int
		body   string
		want   string
	}{
		{400, prometheusOutOfBounds, ReasonTooOld},
		{400, prometheusTooOld, ReasonTooOld},
		{409, thanosOutOfBounds, ReasonTooOld},
		{409, "too old sample", ReasonTooOld},
		{400, mimirTooOld, ReasonTooOld},
		{400, mimirTooFarInPast, ReasonTooOld},
		{400, "sample-too-old", ReasonTooOld},
		{400, "timestamp too old: 1700000000000 metric: \"test_metric\"", ReasonTooOld},
		{400, "OUT OF BOUNDS", ReasonTooOld},
		// Not about age.
		{400, "out of bounds: timestamp is too far in the future", ReasonBadRequest},
		{400, "out of order sample", ReasonBadRequest},
		{409, "duplicate sample for timestamp", ReasonConflict},
		{400, "snappy: corrupt input", ReasonBadRequest},
		// Only 400 and 409 look at the body.
		{422, prometheusOutOfBounds, ReasonClientError},
		{413, prometheusOutOfBounds, ReasonTooLarge},
	} {
		require.Equal(t, tt.want, (&HTTPError{Status: tt.status, Body: tt.body}).Reason(), "%d %q", tt.status, tt.body)
	}
}

func TestCheckRetry(t *testing.T) {
	resp := func(code int) *http.Response { return &http.Response{StatusCode: code} }
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	past := context.WithValue(t.Context(), retryDeadlineKey{}, time.Now().Add(-time.Second))
	future := context.WithValue(t.Context(), retryDeadlineKey{}, time.Now().Add(time.Hour))
	tests := []struct {
		name     string
		ctx      context.Context
		resp     *http.Response
		err      error
		retry429 bool
		want     bool
		wantErr  bool
		// wantEnded expects a *retriesEndedError.
		wantEnded bool
	}{
		{name: "network error", ctx: t.Context(), err: errors.New("connection refused"), want: true},
		{name: "500", ctx: t.Context(), resp: resp(500), want: true},
		{name: "503", ctx: t.Context(), resp: resp(503), want: true},
		{name: "204", ctx: t.Context(), resp: resp(204)},
		{name: "400", ctx: t.Context(), resp: resp(400)},
		{name: "409", ctx: t.Context(), resp: resp(409)},
		{name: "429 off", ctx: t.Context(), resp: resp(429)},
		{name: "429 on", ctx: t.Context(), resp: resp(429), retry429: true, want: true},
		{name: "context ended", ctx: cancelled, resp: resp(503), wantErr: true},
		{name: "context ended on error", ctx: cancelled, err: errors.New("x"), wantErr: true},
		{name: "context ended after 204", ctx: cancelled, resp: resp(204)},
		{name: "context ended after 400", ctx: cancelled, resp: resp(400)},
		{name: "context ended after 429 off", ctx: cancelled, resp: resp(429)},
		{name: "context ended after 429 on", ctx: cancelled, resp: resp(429), retry429: true, wantErr: true},
		{name: "before retry deadline", ctx: future, resp: resp(503), want: true},
		{name: "retry deadline passed on 503", ctx: past, resp: resp(503)},
		{name: "retry deadline passed on 429 on", ctx: past, resp: resp(429), retry429: true},
		{name: "retry deadline passed on error", ctx: past, err: errors.New("x"), wantEnded: true},
		{name: "retry deadline passed after 204", ctx: past, resp: resp(204)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkRetry(tt.ctx, tt.resp, tt.err, tt.retry429)
			require.Equal(t, tt.want, got)
			var rerr *retriesEndedError
			switch {
			case tt.wantErr:
				require.ErrorIs(t, err, context.Canceled)
			case tt.wantEnded:
				require.ErrorAs(t, err, &rerr)
				require.ErrorIs(t, err, tt.err)
			default:
				require.NoError(t, err)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{in: "", wantOK: false},
		{in: "0", want: 0, wantOK: true},
		{in: "7", want: 7 * time.Second, wantOK: true},
		{in: "120", want: 2 * time.Minute, wantOK: true},
		{in: "-1", wantOK: false},
		{in: "1.5", wantOK: false},
		{in: "soon", wantOK: false},
		{in: now.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second, wantOK: true},
		{in: "Sun, 29 Nov 2026 12:00:30 GMT", want: 30 * time.Second, wantOK: true},
		{in: "Sunday, 29-Nov-26 12:00:30 GMT", want: 30 * time.Second, wantOK: true}, // RFC 850
		{in: "Sun Nov 29 12:00:30 2026", want: 30 * time.Second, wantOK: true},       // ANSI C
		{in: now.Add(-time.Hour).Format(http.TimeFormat), want: 0, wantOK: true},     // past: retry now
		// Seconds that would overflow time.Duration into a negative delay.
		{in: "99999999999", want: maxRetryAfter, wantOK: true},
		{in: "99999999999999999999", want: maxRetryAfter, wantOK: true}, // past int64
		{in: "3601", want: maxRetryAfter, wantOK: true},
		{in: "3600", want: time.Hour, wantOK: true},
		{in: "-99999999999999999999", wantOK: false},
		{in: now.AddDate(1000, 0, 0).Format(http.TimeFormat), want: maxRetryAfter, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := retryAfter(tt.in, now)
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Run("doubles within [d/2, d) and never exceeds max", func(t *testing.T) {
		const lo, hi = 10 * time.Millisecond, 300 * time.Millisecond
		for attempt := 0; attempt < 70; attempt++ {
			d := lo << min(attempt, 20)
			d = min(d, hi)
			for range 200 {
				got := backoff(lo, hi, attempt, nil)
				require.GreaterOrEqual(t, got, d/2, "attempt %d", attempt)
				require.Less(t, got, d, "attempt %d", attempt)
				require.LessOrEqual(t, got, hi)
			}
		}
	})
	t.Run("jittered", func(t *testing.T) {
		seen := map[time.Duration]bool{}
		for range 100 {
			seen[backoff(time.Second, time.Second, 0, nil)] = true
		}
		require.Greater(t, len(seen), 10)
	})
	t.Run("tiny durations", func(t *testing.T) {
		require.Equal(t, time.Nanosecond, backoff(time.Nanosecond, time.Nanosecond, 3, nil))
	})
	t.Run("Retry-After overrides on 429 and 503", func(t *testing.T) {
		for _, code := range []int{429, 503} {
			resp := &http.Response{StatusCode: code, Header: http.Header{"Retry-After": {"3"}}}
			require.Equal(t, 3*time.Second, backoff(time.Millisecond, 10*time.Millisecond, 0, resp))
		}
	})
	t.Run("never waits past the retry deadline", func(t *testing.T) {
		req := func(left time.Duration) *http.Request {
			ctx := context.WithValue(t.Context(), retryDeadlineKey{}, time.Now().Add(left))
			r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://x/", nil)
			require.NoError(t, err)
			return r
		}
		resp := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"3600"}}, Request: req(time.Second)}
		got := backoff(time.Millisecond, 10*time.Millisecond, 0, resp)
		require.LessOrEqual(t, got, time.Second)
		require.Greater(t, got, 900*time.Millisecond)
		resp.Request = req(-time.Second)
		require.Equal(t, time.Duration(0), backoff(time.Millisecond, 10*time.Millisecond, 0, resp), "deadline passed")
		resp.Request = req(time.Hour)
		resp.Header.Set("Retry-After", "3")
		require.Equal(t, 3*time.Second, backoff(time.Millisecond, 10*time.Millisecond, 0, resp), "Retry-After within the deadline")
	})
	t.Run("a huge Retry-After is clamped, never negative", func(t *testing.T) {
		resp := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"99999999999"}}}
		require.Equal(t, maxRetryAfter, backoff(time.Millisecond, 10*time.Millisecond, 0, resp))
	})
	t.Run("Retry-After ignored on 500 or when invalid", func(t *testing.T) {
		for _, resp := range []*http.Response{
			{StatusCode: 500, Header: http.Header{"Retry-After": {"3"}}},
			{StatusCode: 503, Header: http.Header{"Retry-After": {"later"}}},
			{StatusCode: 429, Header: http.Header{}},
		} {
			got := backoff(time.Millisecond, 10*time.Millisecond, 0, resp)
			require.Less(t, got, time.Millisecond)
		}
	})
}
