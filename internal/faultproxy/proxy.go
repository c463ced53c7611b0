package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/kube-state-push/kube-state-push/encode"
)

// Limits on what the proxy reads, so that a bad request cannot make it
// allocate without bound.
const (
	// maxBody is the largest request body read (Proxy.maxBody).
	maxBody = 64 << 20
	// maxDecoded is the largest decoded (uncompressed) body decoded.
	maxDecoded = 256 << 20
)

// Outcome is what the proxy did with a request.
type Outcome string

// The outcomes of a request.
const (
	// Forwarded: passed to the target; Status is the target's answer.
	Forwarded Outcome = "forwarded"
	// Injected: answered by the proxy itself with Status.
	Injected Outcome = "injected"
	// Dropped: the connection was closed without an answer.
	Dropped Outcome = "dropped"
	// Abandoned: the client went away while the proxy held the request;
	// nothing was forwarded.
	Abandoned Outcome = "abandoned"
	// UpstreamError: the target could not be reached; the proxy answered
	// 502.
	UpstreamError Outcome = "upstream_error"
	// Unreadable: the request body could not be read (too large, or the
	// client went away); the proxy answered 400 and asked no rule.
	Unreadable Outcome = "unreadable"
)

// Request is what the rules see of one request.
type Request struct {
	// Seq numbers the requests from 1, in arrival order.
	Seq int
	// At is when the request arrived, since the proxy started.
	At time.Duration
	// Attempt is the Retry-Attempt header's value, 0 when absent.
	Attempt int
	// BodyBytes is the size of the body as sent (snappy-compressed).
	BodyBytes int
	// Samples, Series and Metadata count what the decoded request holds.
	Samples, Series, Metadata int
	// Write is the decoded request; nil when DecodeErr is set.
	Write *prompb.WriteRequest
	// DecodeErr says why the body is not a Remote-Write 1.0 request.
	DecodeErr error
	// Header is the request's header.
	Header http.Header
}

// Record is one request and what the proxy did with it.
type Record struct {
	Request
	// Outcome is what the proxy did.
	Outcome Outcome
	// Status is the status the client got; 0 when it got no answer
	// (Dropped, Abandoned).
	Status int
	// Delay is how long the proxy held the request before acting.
	Delay time.Duration
	// Answered is when the request ended (answered, dropped or
	// abandoned), since the proxy started.
	Answered time.Duration
	// ClientGone is set when a forwarded request's client had gone by the
	// time the target answered: the target may hold data the client
	// counts as failed.
	ClientGone bool
}

// Proxy is a Remote-Write proxy on 127.0.0.1 in front of one target URL.
type Proxy struct {
	// target is the receiver's write URL every forwarded request goes to.
	target string
	// maxBody is the largest request body read; larger ones are Unreadable.
	maxBody int64
	// client forwards requests to target.
	client *http.Client
	// srv serves the listener; url is its write URL and start when it
	// began (Request.At counts from it).
	srv   *http.Server
	url   string
	start time.Time

	// mu guards seq, rules, records and holding; rules are called with it
	// held.
	mu      sync.Mutex
	seq     int
	rules   []Rule
	records []Record
	// holding counts the requests in their Delay now.
	holding int
}

// New starts a proxy on a free port of 127.0.0.1 forwarding to target (a
// write URL) by rules, tried in order: the first that applies decides, and
// a request no rule takes is forwarded.
func New(target string, rules ...Rule) (*Proxy, error) {
	return newProxy(target, maxBody, rules...)
}

// newProxy is New with a body size limit.
func newProxy(target string, bodyLimit int64, rules ...Rule) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy for %s: listening: %w", target, err)
	}
	p := &Proxy{
		target:  target,
		maxBody: bodyLimit,
		client:  &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		url:     "http://" + l.Addr().String() + "/api/v1/write",
		start:   time.Now(),
		rules:   rules,
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// URL is the proxy's write URL. Any path reaches the target URL.
func (p *Proxy) URL() string { return p.url }

// Close stops the proxy: it waits up to 5s for requests in progress, then
// closes every connection.
func (p *Proxy) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
	_ = p.srv.Close()
	p.client.CloseIdleConnections()
}

// SetRules replaces the schedule for the requests that arrive from now on.
func (p *Proxy) SetRules(rules ...Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = rules
}

// Records returns a copy of every request's record so far, by Seq. A request
// is recorded before its client gets an answer (or its connection closed),
// so once a client has its answer, its record is here.
func (p *Proxy) Records() []Record {
	p.mu.Lock()
	out := append([]Record(nil), p.records...)
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// Start is when the proxy started: Request.At and Record.Answered count
// from it.
func (p *Proxy) Start() time.Time { return p.start }

// Holding returns the number of requests being held (in their Delay) now.
func (p *Proxy) Holding() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holding
}

// Tally adds up requests.
type Tally struct {
	// Requests, Samples and Bytes (body bytes as sent) of the requests.
	Requests, Samples, Bytes int
}

// Sum adds up the records match accepts.
func Sum(recs []Record, match func(Record) bool) Tally {
	var t Tally
	for _, r := range recs {
		if match(r) {
			t.Requests++
			t.Samples += r.Samples
			t.Bytes += r.BodyBytes
		}
	}
	return t
}

// ServeHTTP reads and decodes the request, picks an action by the rules, and
// carries it out.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Since(p.start)
	req := Request{At: arrived, Header: r.Header.Clone()}
	req.Attempt, _ = strconv.Atoi(r.Header.Get("Retry-Attempt"))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.maxBody))
	if err != nil {
		p.mu.Lock()
		p.seq++
		req.Seq = p.seq
		p.mu.Unlock()
		req.BodyBytes, req.DecodeErr = len(body), fmt.Errorf("reading body: %w", err)
		p.record(Record{Request: req, Outcome: Unreadable, Status: http.StatusBadRequest})
		http.Error(w, "faultproxy: reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req.BodyBytes = len(body)
	req.Write, req.DecodeErr = decode(body)
	if req.Write != nil {
		req.Series = len(req.Write.Timeseries)
		req.Metadata = len(req.Write.Metadata)
		for _, ts := range req.Write.Timeseries {
			req.Samples += len(ts.Samples)
		}
	}

	p.mu.Lock()
	p.seq++
	req.Seq = p.seq
	act := Forward()
	for _, rule := range p.rules {
		if a, ok := rule(&req); ok {
			act = a
			break
		}
	}
	p.mu.Unlock()

	rec := Record{Request: req, Delay: act.Delay}
	client := r.Context()
	if act.Detach {
		r = r.WithContext(context.WithoutCancel(r.Context()))
	}
	if act.Delay > 0 && !p.hold(r.Context(), act.Delay) {
		rec.Outcome = Abandoned
		p.record(rec)
		return
	}
	switch {
	case act.Close:
		p.closeConn(w, rec)
	case act.Status != 0:
		p.inject(w, act, rec)
	default:
		p.forward(client, w, r, body, rec)
	}
}

// hold waits d, counted in holding; it returns false when ctx ends first.
func (p *Proxy) hold(ctx context.Context, d time.Duration) bool {
	p.mu.Lock()
	p.holding++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.holding--
		p.mu.Unlock()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// record stores a finished request's record.
func (p *Proxy) record(rec Record) {
	rec.Answered = time.Since(p.start)
	p.mu.Lock()
	p.records = append(p.records, rec)
	p.mu.Unlock()
}

// closeConn closes the client's connection without an answer.
func (p *Proxy) closeConn(w http.ResponseWriter, rec Record) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Cannot happen on the HTTP/1 server New starts; answer rather
		// than pretend the connection was closed.
		rec.Outcome, rec.Status = Injected, http.StatusInternalServerError
		p.record(rec)
		http.Error(w, "faultproxy: cannot close the connection: "+err.Error(), http.StatusInternalServerError)
		return
	}
	rec.Outcome = Dropped
	p.record(rec)
	_ = conn.Close()
}

// inject answers with the action's status and headers.
func (p *Proxy) inject(w http.ResponseWriter, act Action, rec Record) {
	for k, vs := range act.Header {
		w.Header()[k] = append([]string(nil), vs...)
	}
	if act.RetryAfterDate > 0 {
		at := time.Now().Add(act.RetryAfterDate + time.Second - 1).Truncate(time.Second)
		w.Header().Set("Retry-After", at.UTC().Format(http.TimeFormat))
	}
	rec.Outcome, rec.Status = Injected, act.Status
	p.record(rec)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(act.Status)
	_, _ = fmt.Fprintf(w, "faultproxy: injected %d for request %d\n", act.Status, rec.Seq)
}

// forward sends the request to the target and copies its answer back; r's
// context ends the forwarding, client's is the client's own.
func (p *Proxy) forward(client context.Context, w http.ResponseWriter, r *http.Request, body []byte, rec Record) {
	out, err := http.NewRequestWithContext(r.Context(), http.MethodPost, p.target, bytes.NewReader(body))
	if err != nil {
		rec.Outcome, rec.Status = UpstreamError, http.StatusBadGateway
		p.record(rec)
		http.Error(w, "faultproxy: building request to "+p.target+": "+err.Error(), http.StatusBadGateway)
		return
	}
	for k, vs := range r.Header {
		if !hopByHop[http.CanonicalHeaderKey(k)] {
			out.Header[k] = append([]string(nil), vs...)
		}
	}
	resp, err := p.client.Do(out)
	if err != nil {
		if r.Context().Err() != nil {
			// The client went away while the target was being asked.
			rec.Outcome, rec.ClientGone = Abandoned, true
			p.record(rec)
			return
		}
		rec.Outcome, rec.Status = UpstreamError, http.StatusBadGateway
		p.record(rec)
		http.Error(w, "faultproxy: forwarding to "+p.target+": "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		rec.Outcome, rec.Status = UpstreamError, http.StatusBadGateway
		p.record(rec)
		http.Error(w, "faultproxy: reading the answer of "+p.target+": "+err.Error(), http.StatusBadGateway)
		return
	}
	rec.Outcome, rec.Status = Forwarded, resp.StatusCode
	rec.ClientGone = errors.Is(client.Err(), context.Canceled)
	p.record(rec)
	for k, vs := range resp.Header {
		if !hopByHop[k] && k != "Content-Length" {
			w.Header()[k] = append([]string(nil), vs...)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// hopByHop are the headers a proxy does not pass on (RFC 9110, 7.6.1).
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// decode reads a Remote-Write 1.0 body: snappy block format, then
// prometheus.WriteRequest.
func decode(body []byte) (*prompb.WriteRequest, error) {
	n, err := snappy.DecodedLen(body)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	if n > maxDecoded {
		return nil, fmt.Errorf("snappy: decoded length %d is more than %d", n, maxDecoded)
	}
	return encode.DecodeWriteRequest(body)
}
