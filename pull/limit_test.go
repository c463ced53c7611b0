package pull

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// blockingSource holds every scrape in AppendSets until release is closed.
type blockingSource struct {
	entered chan struct{}
	release chan struct{}
}

func (b blockingSource) AppendSets(dst []*encode.SeriesSet) []*encode.SeriesSet {
	b.entered <- struct{}{}
	<-b.release
	return dst
}

// Past max_concurrent_scrapes a scrape is answered 503 at once, and
// counted; once a scrape ends, the next is served.
func TestConcurrentScrapesCapped(t *testing.T) {
	src := blockingSource{entered: make(chan struct{}, 4), release: make(chan struct{})}
	v := &View{Groups: []Group{{Resource: "nodes", Families: defaultFamilies(t, "nodes"), Maps: []Source{src}}}}
	reg := prometheus.NewRegistry()
	h := NewHandler(func() *View { return v }, 2, reg)

	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Go(func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			codes[i] = rec.Code
		})
	}
	<-src.entered
	<-src.entered // both scrapes are being served

	start := time.Now()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	require.Less(t, time.Since(start), time.Second, "answered at once")
	require.Equal(t, 1.0, testutil.ToFloat64(h.metrics.refused))

	close(src.release)
	wg.Wait()
	require.Equal(t, []int{http.StatusOK, http.StatusOK}, codes)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	<-src.entered
	require.Equal(t, http.StatusOK, rec.Code, "a slot is free again")
	require.Equal(t, 1.0, testutil.ToFloat64(h.metrics.refused))
}
