package pull

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// countingWriter is a ResponseWriter that only counts the body's bytes.
type countingWriter struct {
	h http.Header
	n int64
}

func (w *countingWriter) Header() http.Header         { return w.h }
func (w *countingWriter) WriteHeader(int)             {}
func (w *countingWriter) Write(b []byte) (int, error) { w.n += int64(len(b)); return len(b), nil }

// BenchmarkPullScrape10kPods is one scrape of the pull endpoint at 10,000
// pods and 1,000 nodes: the text is written from the series maps, in
// 64 KiB pieces, without holding the body.
func BenchmarkPullScrape10kPods(b *testing.B) {
	benchPullScrape(b, nil)
}

// BenchmarkPullScrape10kPodsGzip is the same scrape gzipped, as Prometheus
// asks for it.
func BenchmarkPullScrape10kPodsGzip(b *testing.B) {
	benchPullScrape(b, map[string]string{"Accept-Encoding": "gzip"})
}

func benchPullScrape(b *testing.B, header map[string]string) {
	v := &View{}
	for _, g := range []struct {
		resource string
		n        int
		obj      func(int) any
	}{
		{"pods", 10_000, func(i int) any { return benchPod(i) }},
		{"nodes", 1_000, func(i int) any { return benchNode(i) }},
	} {
		objs := make([]any, g.n)
		for i := range objs {
			objs[i] = g.obj(i)
		}
		v.Groups = append(v.Groups, Group{Resource: g.resource, Families: defaultFamilies(b, g.resource), Maps: []Source{render(b, g.resource, nil, objs...)}})
	}
	h := NewHandler(func() *View { return v }, 1, prometheus.NewRegistry())
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	for k, val := range header {
		req.Header.Set(k, val)
	}
	w := &countingWriter{h: http.Header{}}
	h.ServeHTTP(w, req) // warm-up: pooled scratch grows here
	var body int64
	before := testutil.ToFloat64(h.metrics.series)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w.n = 0
		h.ServeHTTP(w, req)
		body = w.n
	}
	b.ReportMetric(float64(body), "body-bytes")
	b.ReportMetric((testutil.ToFloat64(h.metrics.series)-before)/float64(b.N), "series/scrape")
}

// benchPod and benchNode are the benchmarks' realistic objects.
var (
	benchPod  = testenv.BenchPod
	benchNode = testenv.BenchNode
)
