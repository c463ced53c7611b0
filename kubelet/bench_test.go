package kubelet

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/config"
)

// cadvisorBody30 is /metrics/cadvisor as the hollow kubelet of
// tools/kubelet serves it for a node with 30 containers (10 pods of 3),
// written by e2e's TestKubeletCadvisorBody30.
const cadvisorBody30 = "testdata/cadvisor-30containers.txt"

// BenchmarkReadCadvisor30 is one read of one node: the HTTP GET from a
// loopback server, the parse, filters and labels, the up series and the
// copy the store keeps.
func BenchmarkReadCadvisor30(b *testing.B) {
	body, err := os.ReadFile(cadvisorBody30)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	defer srv.Close()
	cfg := DefaultConfig
	cfg.Scheme, cfg.BearerTokenFile, cfg.TLSConfig = "http", "", config.TLSConfig{}
	cfg.Paths = []PathConfig{{Path: PathCadvisor}}
	cfg.Interval = 30e9
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	rd, err := NewDirectReader(cfg)
	if err != nil {
		b.Fatal(err)
	}
	src := New(cfg, Options{Reader: rd, Store: &fakeStore{}, Metrics: NewMetrics(prometheus.NewRegistry())})
	n := nodeAtURL(b, srv.URL)
	r := newRenderer()
	ctx := context.Background()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	series := 0
	for b.Loop() {
		set := src.readPath(ctx, r, n, &src.cfg.Paths[0])
		series = set.Len()
	}
	b.ReportMetric(float64(series), "series/op")
}

// BenchmarkRenderCadvisor30 is the parse, filters and labels alone.
func BenchmarkRenderCadvisor30(b *testing.B) {
	body, err := os.ReadFile(cadvisorBody30)
	if err != nil {
		b.Fatal(err)
	}
	p := &PathConfig{Path: PathCadvisor}
	if err := p.validate(); err != nil {
		b.Fatal(err)
	}
	r := newRenderer()
	t := testTarget(p)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.render(body, t, 0); err != nil {
			b.Fatal(err)
		}
	}
}
