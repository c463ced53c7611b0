package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/kube-state-push/kube-state-push/internal/redact"
)

// Remote-Write request and response headers (remote_write_spec.md and
// remote_write_spec_2_0.md, "Protocol"). Content-Type and the version come
// from the request's encoder.
const (
	contentEncoding = "snappy"
	versionHeader   = "X-Prometheus-Remote-Write-Version"
	retryAttempt    = "Retry-Attempt"
	// samplesWritten is how a 2.0 receiver says how many samples it stored;
	// a 2xx without it means the receiver speaks only 1.0.
	samplesWritten = "X-Prometheus-Remote-Write-Samples-Written"
)

// written is what a successful answer says about storage.
type written struct {
	// samples is the value of X-Prometheus-Remote-Write-Samples-Written.
	samples int
	// reported is true when the answer had that header (a 2.0 receiver).
	reported bool
	// accepted is a 202 Accepted: Mimir's answer to an HA replica that is
	// not the elected one, whose samples it drops on purpose (and reports
	// 0 written); the request succeeded all the same.
	accepted bool
}

// maxErrBody is how much of an error response body is read for logging.
const maxErrBody = 512

// HTTPError is a request the endpoint answered with a status that is not
// retried: the batch is dropped.
type HTTPError struct {
	// Status is the HTTP status code.
	Status int
	// Body is the first bytes of the response body.
	Body string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("remote write answered %d: %s", e.Status, e.Body)
}

// Reason returns the drop reason for the answer: by its status, apart from
// a 400 (Prometheus, Mimir) or 409 (Thanos receive) whose body says the
// samples are too old for the receiver (tooOldAnswer), which is too_old.
func (e *HTTPError) Reason() string {
	switch e.Status {
	case http.StatusBadRequest:
		if tooOldAnswer(e.Body) {
			return ReasonTooOld
		}
		return ReasonBadRequest
	case http.StatusConflict:
		if tooOldAnswer(e.Body) {
			return ReasonTooOld
		}
		return ReasonConflict
	case http.StatusRequestEntityTooLarge:
		return ReasonTooLarge
	case http.StatusUnsupportedMediaType:
		return ReasonUnsupported
	case http.StatusTooManyRequests:
		return ReasonRateLimited
	}
	return ReasonClientError
}

// tooOldMarkers are what receivers write in the body of an answer that
// refuses samples for their age. The status alone cannot tell (a 400 is
// also bad labels, a 409 also out of order), and no receiver sends a code
// for it, so the body is read: this only names the drop reason; whether a
// request is retried never depends on it.
var tooOldMarkers = []string{
	"out of bounds",            // Prometheus tsdb storage.ErrOutOfBounds, also in Thanos receive's 409
	"too old sample",           // Prometheus tsdb storage.ErrTooOldSample (out_of_order_time_window)
	"sample-timestamp-too-old", // Mimir ingester: err-mimir-sample-timestamp-too-old
	"sample-too-old",           // Mimir's discarded-samples reason of the same
	"too-far-in-past",          // Mimir distributor: err-mimir-too-far-in-past
	"too far in the past",      // its message: "received a sample whose timestamp is too far in the past"
	"timestamp too old",        // Cortex and older Mimir validation: "timestamp too old: ..."
}

// tooOldAnswer reports whether an error answer's body says the samples are
// too old. Prometheus wraps a timestamp too far in the future in
// ErrOutOfBounds too ("out of bounds: timestamp is too far in the
// future"): that one is not about age.
func tooOldAnswer(body string) bool {
	b := strings.ToLower(body)
	if strings.Contains(b, "too far in the future") {
		return false
	}
	for _, m := range tooOldMarkers {
		if strings.Contains(b, m) {
			return true
		}
	}
	return false
}

// sender posts encoded batches to one endpoint with retries.
type sender struct {
	url string
	// headers are the configured extra headers.
	headers map[string]string
	// userAgent is sent with every request.
	userAgent string
	// client retries network errors and 5xx (and 429 if configured).
	client *retryablehttp.Client
	// retry429 is queue_config.retry_on_http_429.
	retry429 bool
	// maxRetry is queue_config.max_retry_duration; 0 means no limit.
	maxRetry time.Duration
	// metrics count requests and retries.
	metrics *endpointMetrics
	// failedRequests, when not nil, gets a debug line for every failed try
	// of a 2.0 request (failed_request_logging, failedlog.go).
	failedRequests *slog.Logger
}

// samplesKey carries the number of samples of a request through its context,
// for the retry hooks.
type samplesKey struct{}

// retryDeadlineKey carries the time after which a request is no longer
// retried (queue_config.max_retry_duration) through its context, for
// checkRetry and backoff. Absent means no limit.
type retryDeadlineKey struct{}

func newSender(cfg *Config, hc *http.Client, userAgent string, m *endpointMetrics) *sender {
	q := cfg.QueueConfig
	s := &sender{url: cfg.URL, headers: cfg.Headers, userAgent: userAgent, retry429: q.RetryOnHTTP429, maxRetry: q.MaxRetryDuration, metrics: m}
	s.client = &retryablehttp.Client{
		HTTPClient:   hc,
		RetryWaitMin: q.MinBackoff,
		RetryWaitMax: q.MaxBackoff,
		// Recoverable errors are retried until the retry deadline passes
		// or the context ends: time, not a retry count, bounds them.
		RetryMax: 1<<31 - 1,
		CheckRetry: func(ctx context.Context, resp *http.Response, err error) (bool, error) {
			// net/http's errors quote the URL, query included; every log
			// line and error below gets it masked.
			err = redact.Error(err)
			logFailedTry(ctx, resp, err)
			retry, cerr := checkRetry(ctx, resp, err, q.RetryOnHTTP429)
			if retry {
				m.failed.Add(float64(samplesOf(ctx)))
			}
			return retry, cerr
		},
		Backoff: backoff,
		RequestLogHook: func(_ retryablehttp.Logger, req *http.Request, attempt int) {
			if attempt > 0 {
				req.Header.Set(retryAttempt, strconv.Itoa(attempt))
				m.retried.Add(float64(samplesOf(req.Context())))
			}
		},
		ResponseLogHook: func(_ retryablehttp.Logger, resp *http.Response) {
			m.requests.WithLabelValues(strconv.Itoa(resp.StatusCode)).Inc()
		},
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	return s
}

func samplesOf(ctx context.Context) int {
	n, _ := ctx.Value(samplesKey{}).(int)
	return n
}

// retryDeadline returns the request's retry deadline, if it has one.
func retryDeadline(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(retryDeadlineKey{}).(time.Time)
	return t, ok
}

// checkRetry decides whether a request is sent again: network errors and
// 5xx always, 429 only when enabled; never once the context has ended or
// its retry deadline has passed. A final answer (2xx, other 4xx) is
// returned as is even then. Past the retry deadline, a recoverable answer is
// returned as is too (send turns it into a *retriesEndedError), and a
// network error becomes a *retriesEndedError.
func checkRetry(ctx context.Context, resp *http.Response, err error, retry429 bool) (bool, error) {
	recoverable := err != nil || resp.StatusCode >= 500 ||
		resp.StatusCode == http.StatusTooManyRequests && retry429
	if !recoverable {
		// A final answer stands even if the context ended meanwhile: a 2xx
		// was delivered, and a 4xx says why it was not.
		return false, nil
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if d, ok := retryDeadline(ctx); ok && !time.Now().Before(d) {
		if err != nil {
			return false, &retriesEndedError{last: err}
		}
		return false, nil
	}
	return true, nil
}

// backoff doubles the delay from lo up to hi, with jitter in [d/2, d) so
// that shards and agents do not retry in step. A Retry-After header on a 429
// or 503 answer overrides it. The wait never runs past the request's retry
// deadline, so that a long Retry-After cannot stretch max_retry_duration.
func backoff(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
	d := backoffDelay(lo, hi, attempt, resp)
	if resp != nil && resp.Request != nil {
		if dl, ok := retryDeadline(resp.Request.Context()); ok {
			d = clampDelay(d, time.Until(dl))
		}
	}
	return d
}

// clampDelay returns d, at most left and at least 0.
func clampDelay(d, left time.Duration) time.Duration {
	return max(0, min(d, left))
}

func backoffDelay(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return d
		}
	}
	d := lo
	for i := 0; i < attempt && d < hi; i++ {
		d *= 2
	}
	if d > hi {
		d = hi
	}
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(half)
}

// maxRetryAfter caps a Retry-After delay. Seconds beyond it would overflow
// time.Duration into a negative delay (99999999999 s is past 292 years);
// and a receiver that asks for more than an hour is better asked again
// sooner. max_retry_duration clamps the wait further.
const maxRetryAfter = time.Hour

// retryAfter parses a Retry-After value: delay seconds or an HTTP date,
// at most maxRetryAfter.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if s < 0 {
			return 0, false
		}
		if s > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return clampDelay(t.Sub(now), maxRetryAfter), true
	}
	return 0, false
}

// send posts one compressed request of n samples (or metadata entries),
// with the Content-Type and version header of the protocol that encoded it.
// It returns nil when the endpoint accepted it, with what the answer said
// about storage; an *HTTPError for an answer that is not retried (with the
// samples a 2.0 receiver says it stored all the same, if it says so); a
// *retriesEndedError when max_retry_duration passed; or the context's error.
// body must never be written again (see sendBody).
func (s *sender) send(ctx context.Context, body []byte, n int, ct, version string) (written, error) {
	return s.sendBody(ctx, fixedBody(body), n, ct, version, time.Time{})
}

// sendBody is send for a body the caller may reuse once it has released it
// after sendBody returned: the transport reads it through readers of its
// own, which release it when closed (body.go). Retries end at notAfter at
// the latest, when it is not zero (the batch's oldest sample passing
// sample_age_limit), as they do past max_retry_duration.
func (s *sender) sendBody(ctx context.Context, body *reqBody, n int, ct, version string, notAfter time.Time) (written, error) {
	ctx = context.WithValue(ctx, samplesKey{}, n)
	var deadline time.Time
	if s.maxRetry > 0 {
		deadline = time.Now().Add(s.maxRetry)
	}
	if !notAfter.IsZero() && (deadline.IsZero() || notAfter.Before(deadline)) {
		deadline = notAfter
	}
	if !deadline.IsZero() {
		ctx = context.WithValue(ctx, retryDeadlineKey{}, deadline)
	}
	ctx = s.withFailedRequestLog(ctx, body, version)
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, s.url, retryablehttp.ReaderFunc(body.open))
	if err != nil {
		return written{}, fmt.Errorf("building request: %w", redact.Error(err))
	}
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	encoding, versionName := wireHeaders(version)
	req.Header.Set("Content-Encoding", encoding)
	req.Header.Set("Content-Type", ct)
	req.Header.Set(versionName, version)
	req.Header.Set("User-Agent", s.userAgent)

	resp, err := s.client.Do(req)
	if err != nil {
		err = redact.Error(err)
		if resp != nil {
			// PassthroughErrorHandler returns the last answer with the error.
			_ = resp.Body.Close()
		}
		if ctx.Err() != nil {
			return written{}, fmt.Errorf("sending batch: %w", ctx.Err())
		}
		s.metrics.requests.WithLabelValues("error").Inc()
		return written{}, fmt.Errorf("sending batch: %w", err)
	}
	defer func() {
		// Drain (a bounded amount) so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode/100 == 2 {
		w := written{accepted: resp.StatusCode == http.StatusAccepted}
		if v := resp.Header.Get(samplesWritten); v != "" {
			// An unparsable count still says the receiver speaks 2.0; it
			// is then taken as everything written.
			w.reported = true
			if w.samples, err = strconv.Atoi(v); err != nil || w.samples < 0 {
				w.samples = n
			}
		}
		if f, ok := ctx.Value(failedRequestKey{}).(*failedRequest); ok && n > 0 && (!w.reported || w.samples == 0) {
			// Prometheus takes this answer for a failure (its
			// WriteResponseStats.NoDataWritten); here it is the fall back
			// to 1.0 (no header) or a 202 dropped on purpose, but the
			// request is logged all the same.
			err := fmt.Errorf("answered %d without the %s header", resp.StatusCode, samplesWritten)
			if w.reported {
				err = fmt.Errorf("answered %d, but the %s header says none of %d samples were stored", resp.StatusCode, samplesWritten, n)
			}
			f.logFailed(ctx, err)
		}
		return w, nil
	}
	prefix, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrBody))
	herr := &HTTPError{Status: resp.StatusCode, Body: string(prefix)}
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests && s.retry429 {
		// A recoverable answer reaches here only when the retry deadline
		// passed.
		return written{}, &retriesEndedError{last: herr}
	}
	var w written
	if v := resp.Header.Get(samplesWritten); v != "" && resp.StatusCode/100 == 4 {
		// A 2.0 partial write (remote_write_spec_2_0.md, "Partial
		// Write"): the receiver stored this many samples of the request
		// and refused the rest. An unparsable count says nothing.
		if c, err := strconv.Atoi(v); err == nil && c >= 0 {
			w = written{samples: min(c, n), reported: true}
		}
	}
	return w, herr
}

// retriesEndedError is a batch given up on while its error was recoverable:
// max_retry_duration passed, or the batch's oldest sample passed
// sample_age_limit (sendBody's notAfter).
type retriesEndedError struct{ last error }

func (e *retriesEndedError) Error() string { return "retries ended: " + e.last.Error() }
func (e *retriesEndedError) Unwrap() error { return e.last }
