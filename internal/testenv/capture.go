package testenv

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/prometheus/prometheus/prompb"

	"github.com/kube-state-push/kube-state-push/encode"
)

// Capture is a Remote-Write 1.0 receiver that decodes and keeps every
// request, for tests that compare exactly what was sent.
type Capture struct {
	srv *httptest.Server
	// mu guards requests.
	mu       sync.Mutex
	requests []prompb.WriteRequest
}

// NewCapture starts a capturing receiver on 127.0.0.1.
func NewCapture() *Capture {
	c := &Capture{}
	c.srv = httptest.NewServer(http.HandlerFunc(c.handle))
	return c
}

// URL is the receiver's write URL.
func (c *Capture) URL() string { return c.srv.URL + "/api/v1/write" }

// Close stops the receiver.
func (c *Capture) Close() { c.srv.Close() }

func (c *Capture) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := encode.DecodeWriteRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.requests = append(c.requests, *req)
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// Series returns every captured series carrying a sample at timestamp ts,
// with that sample's value, keyed by its labels (__name__ first, then the
// others sorted, as `name{a="x",b="y"}`). MaxTimestamp tells the latest.
func (c *Capture) Series(ts int64) map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]float64{}
	for _, req := range c.requests {
		for _, s := range req.Timeseries {
			for _, smp := range s.Samples {
				if smp.Timestamp == ts {
					out[seriesKey(s.Labels)] = smp.Value
				}
			}
		}
	}
	return out
}

// Timestamps returns the distinct sample timestamps seen, in order.
func (c *Capture) Timestamps() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[int64]bool{}
	var out []int64
	for _, req := range c.requests {
		for _, s := range req.Timeseries {
			for _, smp := range s.Samples {
				if !seen[smp.Timestamp] {
					seen[smp.Timestamp] = true
					out = append(out, smp.Timestamp)
				}
			}
		}
	}
	sortInt64(out)
	return out
}

func seriesKey(ls []prompb.Label) string {
	var name string
	var kv []Label
	for _, l := range ls {
		if l.Name == "__name__" {
			name = l.Value
			continue
		}
		kv = append(kv, Label{Name: l.Name, Value: l.Value})
	}
	return FormatSeries(name, kv)
}
