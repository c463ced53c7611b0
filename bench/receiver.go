package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
)

// markerFamily is the family the churn writes lag markers into: the
// restart count of a pod's "app" container.
const markerFamily = "kube_pod_container_status_restarts_total"

// markerContainer is the container whose restart count carries markers.
const markerContainer = "app"

// marker is a value written into a pod at a known time, waiting to be seen
// at the receiver.
type marker struct {
	// value is the restart count written.
	value float64
	// written is when the write to the API server was sent.
	written time.Time
}

// arrival is a marker seen at the receiver.
type arrival struct {
	// written is when the marker was written.
	written time.Time
	// lag is the time from writing it to its first sample at the receiver.
	lag time.Duration
}

// tsStats is what arrived for one sample timestamp: both sides stamp every
// sample of one snapshot or scrape with one timestamp.
type tsStats struct {
	// samples is how many samples carried the timestamp.
	samples int64
	// first and last are when the first and the last of them arrived.
	first, last time.Time
}

// counters are the receiver's running totals.
type counters struct {
	// requests is the number of write requests decoded.
	requests int64
	// samples is the number of samples in them, staleness markers included.
	samples int64
	// stale is how many of those samples were staleness markers.
	stale int64
	// wireBytes is the sum of the request bodies as sent (compressed).
	wireBytes int64
	// zstdRequests counts the requests in VictoriaMetrics' protocol:
	// bodies compressed with zstd instead of snappy.
	zstdRequests int64
	// rawBytes is the sum of the decoded protobuf sizes.
	rawBytes int64
	// targetBytes is the part of rawBytes that the job and instance labels
	// take (each label field whole: tag, length and message), which a
	// scraper adds and a pusher does not.
	targetBytes int64
	// rejected counts requests that could not be decoded or forwarded.
	rejected int64
}

// receiver is a Remote-Write 1.0 endpoint that decodes and counts every
// request, times lag markers, and optionally forwards the request unchanged
// to a real receiver (VictoriaMetrics) and answers with its status. Like
// VictoriaMetrics, it also accepts bodies compressed with zstd
// (Content-Encoding: zstd), which is VictoriaMetrics' own protocol: the same
// protobuf, and what vmagent sends to a receiver that accepts it.
type receiver struct {
	// forward is the write URL requests are passed on to; empty: answer 204.
	forward string
	// zstd decodes VictoriaMetrics' protocol; DecodeAll is safe for
	// concurrent use.
	zstd *zstd.Decoder
	// client sends forwarded requests.
	client *http.Client
	// now is the clock (replaced in tests).
	now func() time.Time

	// mu guards everything below.
	mu sync.Mutex
	// total are the running totals.
	total counters
	// byTS maps a sample timestamp (ms) to what arrived with it.
	byTS map[int64]*tsStats
	// pending maps "namespace/pod" to the marker written last and not yet
	// seen.
	pending map[string]marker
	// arrivals are the markers seen, in order of arrival.
	arrivals []arrival
	// superseded counts markers overwritten by a newer one before arriving.
	superseded int64
}

// newReceiver returns a receiver; forward may be empty.
func newReceiver(forward string) *receiver {
	// A nil reader only decodes whole bodies; it cannot fail.
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	r := &receiver{forward: forward, zstd: dec, client: &http.Client{Timeout: time.Minute}, now: time.Now}
	r.reset()
	return r
}

// reset forgets everything received and every pending marker, between two
// measured programs.
func (r *receiver) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total = counters{}
	r.byTS = map[int64]*tsStats{}
	r.pending = map[string]marker{}
	r.arrivals = nil
	r.superseded = 0
}

// expect records that pod namespace/name's marker container now has
// restart count value, written at the given time.
func (r *receiver) expect(namespace, name string, value float64, written time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := namespace + "/" + name
	if _, ok := r.pending[key]; ok {
		r.superseded++
	}
	r.pending[key] = marker{value: value, written: written}
}

// cancel forgets the pending marker of a pod whose write failed.
func (r *receiver) cancel(namespace, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, namespace+"/"+name)
}

// serve listens on 127.0.0.1 and serves until the listener is closed; it
// returns the write URL and a function that stops the server.
func (r *receiver) serve() (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("receiver: listening: %w", err)
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String() + "/api/v1/write", func() { _ = srv.Close() }, nil
}

// ServeHTTP decodes one write request, counts it, and answers 204 (or, when
// forwarding, the real receiver's status).
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		r.reject()
		http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	at := r.now()
	isZstd := req.Header.Get("Content-Encoding") == "zstd"
	var raw []byte
	if isZstd {
		raw, err = r.zstd.DecodeAll(body, nil)
	} else {
		raw, err = snappy.Decode(nil, body)
	}
	if err != nil {
		r.reject()
		http.Error(w, "decompressing: "+err.Error(), http.StatusBadRequest)
		return
	}
	var wr prompb.WriteRequest
	if err := wr.Unmarshal(raw); err != nil {
		r.reject()
		http.Error(w, "protobuf: "+err.Error(), http.StatusBadRequest)
		return
	}
	if r.forward != "" {
		code, err := r.pass(req, body)
		if err != nil {
			r.reject()
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if code/100 != 2 {
			r.reject()
			w.WriteHeader(code)
			return
		}
	}
	r.count(&wr, len(body), len(raw), isZstd, at)
	w.WriteHeader(http.StatusNoContent)
}

// pass forwards a request body to the real receiver and returns its status.
func (r *receiver) pass(in *http.Request, body []byte) (int, error) {
	out, err := http.NewRequestWithContext(in.Context(), http.MethodPost, r.forward, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("forwarding to %s: %w", r.forward, err)
	}
	for _, h := range []string{"Content-Encoding", "Content-Type", "X-Prometheus-Remote-Write-Version", "X-VictoriaMetrics-Remote-Write-Version", "User-Agent"} {
		if v := in.Header.Get(h); v != "" {
			out.Header.Set(h, v)
		}
	}
	resp, err := r.client.Do(out)
	if err != nil {
		return 0, fmt.Errorf("forwarding to %s: %w", r.forward, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// reject counts a request that was refused.
func (r *receiver) reject() {
	r.mu.Lock()
	r.total.rejected++
	r.mu.Unlock()
}

// count adds a decoded request to the totals and matches lag markers.
func (r *receiver) count(wr *prompb.WriteRequest, wire, raw int, isZstd bool, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total.requests++
	if isZstd {
		r.total.zstdRequests++
	}
	r.total.wireBytes += int64(wire)
	r.total.rawBytes += int64(raw)
	for i := range wr.Timeseries {
		ts := &wr.Timeseries[i]
		for _, l := range ts.Labels {
			if l.Name == "job" || l.Name == "instance" {
				n := l.Size()
				r.total.targetBytes += int64(1 + proto.SizeVarint(uint64(n)) + n)
			}
		}
		for _, s := range ts.Samples {
			r.total.samples++
			if value.IsStaleNaN(s.Value) {
				r.total.stale++
			}
			st := r.byTS[s.Timestamp]
			if st == nil {
				st = &tsStats{first: at}
				r.byTS[s.Timestamp] = st
			}
			st.samples++
			st.last = at
		}
		if len(r.pending) > 0 {
			r.matchMarker(ts, at)
		}
	}
}

// matchMarker records the arrival of a pending marker carried by ts, if
// any. The caller holds mu.
func (r *receiver) matchMarker(ts *prompb.TimeSeries, at time.Time) {
	var name, ns, pod, container string
	for _, l := range ts.Labels {
		switch l.Name {
		case "__name__":
			name = l.Value
		case "namespace":
			ns = l.Value
		case "pod":
			pod = l.Value
		case "container":
			container = l.Value
		}
	}
	if name != markerFamily || container != markerContainer {
		return
	}
	key := ns + "/" + pod
	m, ok := r.pending[key]
	if !ok {
		return
	}
	for _, s := range ts.Samples {
		if s.Value == m.value {
			r.arrivals = append(r.arrivals, arrival{written: m.written, lag: at.Sub(m.written)})
			delete(r.pending, key)
			return
		}
	}
}

// totals returns the running totals.
func (r *receiver) totals() counters {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// timestamp is one sample timestamp and what arrived with it.
type timestamp struct {
	// ms is the sample timestamp in milliseconds since the epoch.
	ms int64
	tsStats
}

// timestamps returns what arrived per sample timestamp, oldest first.
func (r *receiver) timestamps() []timestamp {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]timestamp, 0, len(r.byTS))
	for ms, st := range r.byTS {
		out = append(out, timestamp{ms: ms, tsStats: *st})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ms < out[j].ms })
	return out
}

// lags returns the arrivals of markers written in [from, to], and how many
// markers written then are still pending.
func (r *receiver) lags(from, to time.Time) (got []arrival, missing int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	in := func(t time.Time) bool { return !t.Before(from) && !t.After(to) }
	for _, a := range r.arrivals {
		if in(a.written) {
			got = append(got, a)
		}
	}
	for _, m := range r.pending {
		if in(m.written) {
			missing++
		}
	}
	return got, missing
}

// firstFull finds the first snapshot (or scrape) that was complete: the
// first timestamp whose sample count is at least 99% of the next one's,
// where both are known to be complete because a later timestamp has begun
// to arrive. It returns that timestamp's stats and whether one was found.
// Start-up ends when its last sample arrived.
func firstFull(tss []timestamp) (timestamp, bool) {
	for i := 0; i+2 < len(tss); i++ {
		cur, next := tss[i].samples, tss[i+1].samples
		if cur > 0 && float64(cur) >= 0.99*float64(next) {
			return tss[i], true
		}
	}
	return timestamp{}, false
}
