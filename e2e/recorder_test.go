package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/prompb"

	"github.com/kube-state-push/kube-state-push/encode"
)

// recorder is a Remote-Write 1.0 receiver for tests that look at requests,
// not just at what is stored: it keeps each accepted request's path,
// headers and samples. It can require credentials per path, and be taken
// down (answering 503, as a receiver that is restarting does).
type recorder struct {
	srv *httptest.Server
	// auth checks a request to a path, when the path has a check; an error
	// is answered 401.
	auth map[string]func(*http.Request) error
	// down makes every request answer 503.
	down atomic.Bool

	// mu guards accepted and refused.
	mu sync.Mutex
	// accepted are the requests answered 204.
	accepted []recordedRequest
	// refused counts the requests answered 401 or 503.
	refused int
}

// recordedRequest is one accepted request.
type recordedRequest struct {
	// path is the URL path.
	path string
	// header is the request's headers.
	header http.Header
	// samples maps each series (recordedKey) to its sample timestamps;
	// stale to those of its staleness markers, which samples also holds.
	samples, stale map[string][]int64
}

// newRecorder starts a recorder on 127.0.0.1; auth may be nil.
func newRecorder(t *testing.T, auth map[string]func(*http.Request) error) *recorder {
	t.Helper()
	r := &recorder{auth: auth}
	r.srv = httptest.NewServer(http.HandlerFunc(r.handle))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the receiver's URL for path.
func (r *recorder) URL(path string) string { return r.srv.URL + path }

func (r *recorder) handle(w http.ResponseWriter, req *http.Request) {
	if r.down.Load() {
		r.refuse()
		http.Error(w, "receiver restarting", http.StatusServiceUnavailable)
		return
	}
	if check := r.auth[req.URL.Path]; check != nil {
		if err := check(req); err != nil {
			r.refuse()
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	wr, err := encode.DecodeWriteRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec := recordedRequest{path: req.URL.Path, header: req.Header.Clone(), samples: map[string][]int64{}, stale: map[string][]int64{}}
	for _, ts := range wr.Timeseries {
		k := recordedKey(ts.Labels)
		for _, s := range ts.Samples {
			rec.samples[k] = append(rec.samples[k], s.Timestamp)
			if encode.IsStaleNaN(s.Value) {
				rec.stale[k] = append(rec.stale[k], s.Timestamp)
			}
		}
	}
	r.mu.Lock()
	r.accepted = append(r.accepted, rec)
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *recorder) refuse() {
	r.mu.Lock()
	r.refused++
	r.mu.Unlock()
}

// refusedCount returns how many requests were answered 401 or 503.
func (r *recorder) refusedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused
}

// requests returns the accepted requests to path.
func (r *recorder) requests(path string) []recordedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recordedRequest
	for _, req := range r.accepted {
		if req.path == path {
			out = append(out, req)
		}
	}
	return out
}

// timestamps returns, sorted and without repeats, the timestamps of the
// samples accepted at path of the series whose key contains every one of
// subs.
func (r *recorder) timestamps(path string, subs ...string) []int64 {
	seen := map[int64]bool{}
	for _, req := range r.requests(path) {
		for k, tss := range req.samples {
			if containsAll(k, subs) {
				for _, ts := range tss {
					seen[ts] = true
				}
			}
		}
	}
	out := make([]int64, 0, len(seen))
	for ts := range seen {
		out = append(out, ts)
	}
	slices.Sort(out)
	return out
}

// series returns the keys of the series accepted at path whose key
// contains every one of subs.
func (r *recorder) series(path string, subs ...string) []string {
	seen := map[string]bool{}
	for _, req := range r.requests(path) {
		for k := range req.samples {
			if containsAll(k, subs) {
				seen[k] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// recordedKey is a series' identity: its labels sorted by name, as
// `{__name__="kube_pod_info", namespace="x"}`.
func recordedKey(ls []prompb.Label) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%s=%q", l.Name, l.Value)
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

// seriesAt returns the keys of the series accepted at path with a sample at
// timestamp ts.
func (r *recorder) seriesAt(path string, ts int64) map[string]bool {
	out := map[string]bool{}
	for _, req := range r.requests(path) {
		for k, tss := range req.samples {
			if slices.Contains(tss, ts) {
				out[k] = true
			}
		}
	}
	return out
}

// liveAt is seriesAt without the series whose sample at ts is a staleness
// marker.
func (r *recorder) liveAt(path string, ts int64) map[string]bool {
	out := r.seriesAt(path, ts)
	for _, req := range r.requests(path) {
		for k, tss := range req.stale {
			if slices.Contains(tss, ts) {
				delete(out, k)
			}
		}
	}
	return out
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// maxGap returns the longest interval between consecutive timestamps (ms),
// and where it starts.
func maxGap(tss []int64) (gap, at int64) {
	for i := 1; i < len(tss); i++ {
		if d := tss[i] - tss[i-1]; d > gap {
			gap, at = d, tss[i-1]
		}
	}
	return gap, at
}

// needTimestamps is a check for eventually: at least n timestamps at path
// for the series matching subs.
func (r *recorder) needTimestamps(n int, path string, subs ...string) func() error {
	return func() error {
		if got := len(r.timestamps(path, subs...)); got < n {
			return fmt.Errorf("%d of %d snapshots of %v at %s", got, n, subs, path)
		}
		return nil
	}
}
