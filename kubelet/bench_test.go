package kubelet

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/config"
	"k8s.io/apimachinery/pkg/types"
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
	cfg.MaxSampleAge = 0 // the recorded body's timestamps are old
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	rd, err := NewDirectReader(cfg, nil)
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
		set, _ := src.readPath(ctx, r, n, &src.cfg.Paths[0])
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

// BenchmarkSource100Nodes is one interval of 100 nodes, each serving the
// 30-container body (from one loopback server, 10 reads at once): the CPU
// an interval costs, and the memory the stored series then hold.
func BenchmarkSource100Nodes(b *testing.B) {
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
	cfg.MaxSampleAge = 0 // the recorded body's timestamps are old
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	rd, err := NewDirectReader(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	store := &fakeStore{}
	src := New(cfg, Options{Reader: rd, Store: store, Metrics: NewMetrics(prometheus.NewRegistry())})
	at := nodeAtURL(b, srv.URL)
	for i := range 100 {
		n := at
		n.UID, n.Name = types.UID(fmt.Sprintf("u%d", i)), fmt.Sprintf("node-%d", i)
		src.Upsert(n)
	}
	ctx := context.Background()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		src.tick(ctx, &wg)
		wg.Wait()
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	// The process's CPU, the loopback server's serving of the bodies included.
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	series := 0
	for _, set := range store.byKey {
		series += set.Len()
	}
	b.ReportMetric(float64(series), "series")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-held")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(series), "B/series-held")
}
