package faultproxy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// upstream is a target receiver that keeps the bodies it got and answers
// with status.
type upstream struct {
	srv *httptest.Server
	// mu guards bodies and headers.
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
}

func newUpstream(t *testing.T, status int) *upstream {
	t.Helper()
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, b)
		u.headers = append(u.headers, r.Header.Clone())
		u.mu.Unlock()
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(status)
		_, _ = w.Write([]byte("upstream says " + strconv.Itoa(status)))
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) got() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.bodies)
}

// writeBody encodes a Remote-Write 1.0 request with one series per name,
// each holding samples samples.
func writeBody(t *testing.T, samples int, names ...string) []byte {
	t.Helper()
	var wr prompb.WriteRequest
	for _, n := range names {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: n}, {Name: "pod", Value: n + "-pod"}}}
		for i := range samples {
			ts.Samples = append(ts.Samples, prompb.Sample{Value: float64(i), Timestamp: int64(1000 * (i + 1))})
		}
		wr.Timeseries = append(wr.Timeseries, ts)
	}
	raw, err := wr.Marshal()
	require.NoError(t, err)
	return snappy.Encode(nil, raw)
}

// post sends body to url as a Remote-Write client would, with a
// Retry-Attempt header when attempt > 0.
func post(c *http.Client, url string, body []byte, attempt int) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	if attempt > 0 {
		req.Header.Set("Retry-Attempt", strconv.Itoa(attempt))
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func startProxy(t *testing.T, target string, rules ...Rule) *Proxy {
	t.Helper()
	p, err := New(target, rules...)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func client(t *testing.T) *http.Client {
	t.Helper()
	c := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func TestForwardRecordsAndPassesTheAnswer(t *testing.T) {
	up := newUpstream(t, http.StatusNoContent)
	p := startProxy(t, up.srv.URL+"/api/v1/write")
	body := writeBody(t, 3, "a", "b")

	resp, _, err := post(client(t), p.URL(), body, 2)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "yes", resp.Header.Get("X-Upstream"), "the target's headers come back")

	require.Equal(t, 1, up.got())
	require.Equal(t, body, up.bodies[0], "forwarded byte for byte")
	for _, h := range []string{"Content-Encoding", "Content-Type", "X-Prometheus-Remote-Write-Version", "Retry-Attempt"} {
		require.NotEmpty(t, up.headers[0].Get(h), h)
	}

	recs := p.Records()
	require.Len(t, recs, 1)
	r := recs[0]
	require.Equal(t, Forwarded, r.Outcome)
	require.Equal(t, http.StatusNoContent, r.Status)
	require.Equal(t, 1, r.Seq)
	require.Equal(t, 2, r.Attempt)
	require.Equal(t, len(body), r.BodyBytes)
	require.Equal(t, 6, r.Samples)
	require.Equal(t, 2, r.Series)
	require.NoError(t, r.DecodeErr)
	require.Equal(t, "a", r.Write.Timeseries[0].Labels[0].Value)
}

func TestTargetAnswersAreRecordedAsIs(t *testing.T) {
	up := newUpstream(t, http.StatusBadRequest)
	p := startProxy(t, up.srv.URL)
	resp, b, err := post(client(t), p.URL(), writeBody(t, 1, "a"), 0)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "upstream says 400", string(b))
	r := p.Records()[0]
	require.Equal(t, Forwarded, r.Outcome)
	require.Equal(t, http.StatusBadRequest, r.Status)
}

func TestInjectedAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		act    Action
		status int
		// retryAfter checks the Retry-After header, when set.
		retryAfter func(t *testing.T, v string)
	}{
		{name: "503", act: Respond(http.StatusServiceUnavailable), status: 503},
		{name: "413", act: Respond(http.StatusRequestEntityTooLarge), status: 413},
		{name: "429 seconds", act: RetryAfterSeconds(http.StatusTooManyRequests, 1500*time.Millisecond), status: 429,
			retryAfter: func(t *testing.T, v string) { require.Equal(t, "2", v, "rounded up") }},
		{name: "429 date", act: RetryAfterDate(http.StatusTooManyRequests, 3*time.Second), status: 429,
			retryAfter: func(t *testing.T, v string) {
				at, err := http.ParseTime(v)
				require.NoError(t, err)
				left := time.Until(at)
				require.Greater(t, left, 2*time.Second, v)
				require.LessOrEqual(t, left, 4*time.Second, v)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, http.StatusNoContent)
			p := startProxy(t, up.srv.URL, Requests(1, 1, tc.act))
			c := client(t)
			resp, b, err := post(c, p.URL(), writeBody(t, 2, "a"), 0)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode)
			require.Contains(t, string(b), "faultproxy: injected")
			if tc.retryAfter != nil {
				tc.retryAfter(t, resp.Header.Get("Retry-After"))
			} else {
				require.Empty(t, resp.Header.Get("Retry-After"))
			}
			require.Zero(t, up.got(), "an injected answer is not forwarded")

			// The second request is past the rule: forwarded.
			resp, _, err = post(c, p.URL(), writeBody(t, 2, "a"), 1)
			require.NoError(t, err)
			require.Equal(t, http.StatusNoContent, resp.StatusCode)
			require.Equal(t, 1, up.got())

			recs := p.Records()
			require.Len(t, recs, 2)
			require.Equal(t, Injected, recs[0].Outcome)
			require.Equal(t, tc.status, recs[0].Status)
			require.Equal(t, 2, recs[0].Samples)
			require.Equal(t, Forwarded, recs[1].Outcome)
			require.Equal(t, 1, recs[1].Attempt)
		})
	}
}

func TestBodyOverAnswers413AboveTheSize(t *testing.T) {
	up := newUpstream(t, http.StatusNoContent)
	small, big := writeBody(t, 1, "a"), writeBody(t, 50, "a", "b", "c", "d")
	require.Less(t, len(small), len(big))
	p := startProxy(t, up.srv.URL, BodyOver(len(small), Respond(http.StatusRequestEntityTooLarge)))
	c := client(t)
	for _, tc := range []struct {
		body   []byte
		status int
	}{{small, 204}, {big, 413}} {
		resp, _, err := post(c, p.URL(), tc.body, 0)
		require.NoError(t, err)
		require.Equal(t, tc.status, resp.StatusCode, "body of %d bytes, limit %d", len(tc.body), len(small))
	}
	require.Equal(t, 1, up.got())
}

func TestCloseConnectionGivesNoAnswer(t *testing.T) {
	up := newUpstream(t, http.StatusNoContent)
	p := startProxy(t, up.srv.URL, Requests(1, 1, CloseConnection()))
	c := client(t)
	_, _, err := post(c, p.URL(), writeBody(t, 1, "a"), 0)
	require.Error(t, err, "the client sees a broken connection, not an answer")
	require.Zero(t, up.got())

	// The next request gets through on a new connection.
	resp, _, err := post(c, p.URL(), writeBody(t, 1, "a"), 1)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	recs := p.Records()
	require.Len(t, recs, 2)
	require.Equal(t, Dropped, recs[0].Outcome)
	require.Zero(t, recs[0].Status)
	require.Equal(t, Forwarded, recs[1].Outcome)
}

func TestDelayedForward(t *testing.T) {
	up := newUpstream(t, http.StatusNoContent)
	const d = 200 * time.Millisecond
	p := startProxy(t, up.srv.URL, Requests(1, 1, Forward().After(d)))
	start := time.Now()
	resp, _, err := post(client(t), p.URL(), writeBody(t, 1, "a"), 0)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.GreaterOrEqual(t, time.Since(start), d)
	r := p.Records()[0]
	require.Equal(t, Forwarded, r.Outcome)
	require.Equal(t, d, r.Delay)
	require.False(t, r.ClientGone)
}

func TestClientThatGivesUpDuringTheDelayIsAbandoned(t *testing.T) {
	up := newUpstream(t, http.StatusNoContent)
	p := startProxy(t, up.srv.URL, Requests(1, 1, Forward().After(time.Minute)))
	c := client(t)
	c.Timeout = 100 * time.Millisecond
	_, _, err := post(c, p.URL(), writeBody(t, 1, "a"), 0)
	require.Error(t, err)

	// The proxy notices the closed connection well before the minute.
	deadline := time.Now().Add(10 * time.Second)
	for len(p.Records()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	recs := p.Records()
	require.Len(t, recs, 1, "no record within 10s")
	require.Equal(t, Abandoned, recs[0].Outcome)
	require.Zero(t, recs[0].Status)
	require.Zero(t, up.got(), "nothing forwarded")
}

func TestHoldForwardsAfterTheClientGaveUp(t *testing.T) {
	up := newUpstream(t, http.StatusNoContent)
	const d = 300 * time.Millisecond
	p := startProxy(t, up.srv.URL, Always(Hold(d)))
	c := client(t)
	c.Timeout = 100 * time.Millisecond
	body := writeBody(t, 1, "a")
	go func() { _, _, _ = post(c, p.URL(), body, 0) }()
	deadline := time.Now().Add(10 * time.Second)
	for p.Holding() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, 1, p.Holding(), "the request is held")
	for len(p.Records()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	recs := p.Records()
	require.Len(t, recs, 1, "no record within 10s")
	require.Equal(t, Forwarded, recs[0].Outcome, "forwarded though the client gave up")
	require.Equal(t, http.StatusNoContent, recs[0].Status)
	require.True(t, recs[0].ClientGone)
	require.GreaterOrEqual(t, recs[0].Answered, recs[0].At+d)
	require.Equal(t, 1, up.got())
	require.Zero(t, p.Holding())
}

func TestUnreachableTargetIs502(t *testing.T) {
	up := newUpstream(t, http.StatusNoContent)
	target := up.srv.URL
	up.srv.Close()
	p := startProxy(t, target)
	resp, b, err := post(client(t), p.URL(), writeBody(t, 1, "a"), 0)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.Contains(t, string(b), "forwarding to "+target)
	r := p.Records()[0]
	require.Equal(t, UpstreamError, r.Outcome)
	require.Equal(t, http.StatusBadGateway, r.Status)
}

func TestBodyThatIsNotRemoteWriteIsForwardedWithItsError(t *testing.T) {
	up := newUpstream(t, http.StatusBadRequest)
	p := startProxy(t, up.srv.URL)
	for _, body := range [][]byte{
		[]byte("not snappy at all"),
		snappy.Encode(nil, []byte{0xff, 0xff, 0xff}), // not a protobuf
		binary.AppendUvarint(nil, 300<<20),           // a decoded length over the limit
	} {
		resp, _, err := post(client(t), p.URL(), body, 0)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "the target decides")
	}
	for _, r := range p.Records() {
		require.Error(t, r.DecodeErr, "request %d", r.Seq)
		require.Nil(t, r.Write)
		require.Zero(t, r.Samples)
		require.Equal(t, Forwarded, r.Outcome)
	}
	require.Equal(t, 3, up.got())
}

func TestRulesFirstMatchNthAndSetRules(t *testing.T) {
	up := newUpstream(t, http.StatusNoContent)
	// Metadata-only requests (no samples) pass Nth by; the sample requests
	// get 503, 429, then whatever follows.
	p := startProxy(t, up.srv.URL,
		Nth(HasSamples, Respond(503), Respond(429)),
		When(HasSeries(map[string]string{"__name__": "big"}), Respond(413)),
		Requests(6, 6, Respond(500)),
	)
	c := client(t)
	var meta prompb.WriteRequest
	meta.Metadata = []prompb.MetricMetadata{{MetricFamilyName: "a", Type: prompb.MetricMetadata_GAUGE, Help: "h"}}
	raw, err := meta.Marshal()
	require.NoError(t, err)
	metaBody := snappy.Encode(nil, raw)

	want := []struct {
		body   []byte
		status int
	}{
		{metaBody, 204},                  // 1: no samples: Nth does not count it
		{writeBody(t, 1, "a"), 503},      // 2: first with samples
		{writeBody(t, 1, "big"), 429},    // 3: second with samples: Nth comes first
		{writeBody(t, 1, "big"), 413},    // 4: Nth done; the series rule
		{writeBody(t, 1, "a", "b"), 204}, // 5
		{writeBody(t, 1, "a"), 500},      // 6: by number
	}
	for i, w := range want {
		resp, _, err := post(c, p.URL(), w.body, 0)
		require.NoError(t, err)
		require.Equal(t, w.status, resp.StatusCode, "request %d", i+1)
	}
	recs := p.Records()
	require.Equal(t, 1, recs[0].Metadata)
	require.Zero(t, recs[0].Samples)

	p.SetRules(Requests(1, 100, Respond(503)))
	resp, _, err := post(c, p.URL(), writeBody(t, 1, "a"), 0)
	require.NoError(t, err)
	require.Equal(t, 503, resp.StatusCode, "the new schedule applies")
	p.SetRules()
	resp, _, err = post(c, p.URL(), writeBody(t, 1, "a"), 0)
	require.NoError(t, err)
	require.Equal(t, 204, resp.StatusCode, "no rules: forwarded")
}

func TestDuring(t *testing.T) {
	r := During(time.Second, 2*time.Second, Respond(503))
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{{999 * time.Millisecond, false}, {time.Second, true}, {1999 * time.Millisecond, true}, {2 * time.Second, false}} {
		_, ok := r(&Request{At: tc.at})
		require.Equal(t, tc.want, ok, "at %s", tc.at)
	}
}

func TestSumAddsUpTheMatchingRecords(t *testing.T) {
	recs := []Record{
		{Request: Request{Samples: 3, BodyBytes: 10}, Outcome: Forwarded, Status: 204},
		{Request: Request{Samples: 5, BodyBytes: 20}, Outcome: Injected, Status: 503},
		{Request: Request{Samples: 7, BodyBytes: 40}, Outcome: Forwarded, Status: 204},
	}
	got := Sum(recs, func(r Record) bool { return r.Outcome == Forwarded })
	require.Equal(t, Tally{Requests: 2, Samples: 10, Bytes: 50}, got)
	require.Equal(t, Tally{}, Sum(nil, func(Record) bool { return true }))
}

func TestConcurrentRequestsGetDistinctNumbers(t *testing.T) {
	up := newUpstream(t, http.StatusNoContent)
	p := startProxy(t, up.srv.URL)
	c := client(t)
	body := writeBody(t, 1, "a")
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			resp, _, err := post(c, p.URL(), body, 0)
			if err == nil && resp.StatusCode != http.StatusNoContent {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	recs := p.Records()
	require.Len(t, recs, 20)
	for i, r := range recs {
		require.Equal(t, i+1, r.Seq)
	}
}

func TestUnreadableBodyIsRecorded(t *testing.T) {
	up := newUpstream(t, http.StatusNoContent)
	p, err := newProxy(up.srv.URL, 1024)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	// A body larger than the proxy reads.
	big := bytes.Repeat([]byte{'x'}, 1025)
	resp, _, err := post(client(t), p.URL(), big, 0)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	recs := p.Records()
	require.Len(t, recs, 1)
	require.Equal(t, Unreadable, recs[0].Outcome)
	require.Equal(t, http.StatusBadRequest, recs[0].Status)
	require.ErrorContains(t, recs[0].DecodeErr, "reading body")
	require.Zero(t, up.got())
}
