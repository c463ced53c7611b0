package kubelet

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-state-push/kube-state-push/encode"
)

// fakeStore records what the source stores, by key.
type fakeStore struct {
	mu    sync.Mutex
	byKey map[types.UID]*encode.SeriesSet
}

func (s *fakeStore) Set(key types.UID, set *encode.SeriesSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey = map[types.UID]*encode.SeriesSet{}
	}
	if set == nil {
		delete(s.byKey, key)
		return
	}
	s.byKey[key] = set
}

// get returns the series of a node's cAdvisor path, as text, or nil.
func (s *fakeStore) get(t *testing.T, uid types.UID) []string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	set, ok := s.byKey[key(uid, PathCadvisor)]
	if !ok {
		return nil
	}
	return text(t, set)
}

// fakeReader answers per node: ok serves body, forbidden answers 403,
// slow waits until the read's deadline.
type fakeReader struct{}

func (fakeReader) Read(ctx context.Context, n Node, _ string) ([]byte, error) {
	switch n.Name {
	case "forbidden":
		return nil, &StatusError{Code: 403}
	case "slow":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return []byte(body), nil
}

func TestSourceSlowAndForbiddenNodesDelayNoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		reg := prometheus.NewRegistry()
		cfg := Config{Interval: 10 * time.Second, Timeout: 2 * time.Second, Concurrency: 2, Job: "kubelet", FamilyPrefixes: DefaultFamilyPrefixes,
			Paths: []PathConfig{{Path: PathCadvisor}}}
		require.NoError(t, cfg.Paths[0].validate())
		src := New(cfg, Options{Reader: fakeReader{}, Store: store, Metrics: NewMetrics(reg)})
		ok := Node{UID: "u-ok", Name: "ok", Address: "10.0.0.1", Port: 10250}
		slow := Node{UID: "u-slow", Name: "slow", Address: "10.0.0.2", Port: 10250}
		forbidden := Node{UID: "u-forbidden", Name: "forbidden", Address: "10.0.0.3", Port: 10250}
		src.Replace([]Node{ok, slow, forbidden})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); src.Run(ctx) }()

		synctest.Wait() // no time has passed: the slow node is still being read
		require.Len(t, store.get(t, ok.UID), 7, "six series kept and up")
		require.Equal(t, []string{`up{instance="10.0.0.3:10250",job="kubelet",metrics_path="/metrics/cadvisor",node="forbidden"} 0 946684800000`},
			store.get(t, forbidden.UID), "a refused read leaves up=0 alone")
		require.Nil(t, store.get(t, slow.UID))

		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Len(t, store.get(t, slow.UID), 1, "up=0 once the timeout passed")
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kube_state_push_kubelet_read_errors_total Failed reads of a kubelet path, by reason.
# TYPE kube_state_push_kubelet_read_errors_total counter
`+errorLines("forbidden", "forbidden")+errorLines("ok", "")+errorLines("slow", "timeout")+`
# HELP kube_state_push_kubelet_read_success Whether the last read of a kubelet path succeeded (1) or not (0).
# TYPE kube_state_push_kubelet_read_success gauge
kube_state_push_kubelet_read_success{node="forbidden",path="/metrics/cadvisor"} 0
kube_state_push_kubelet_read_success{node="ok",path="/metrics/cadvisor"} 1
kube_state_push_kubelet_read_success{node="slow",path="/metrics/cadvisor"} 0
# HELP kube_state_push_kubelet_read_duration_seconds How long the last read of a kubelet path took.
# TYPE kube_state_push_kubelet_read_duration_seconds gauge
kube_state_push_kubelet_read_duration_seconds{node="forbidden",path="/metrics/cadvisor"} 0
kube_state_push_kubelet_read_duration_seconds{node="ok",path="/metrics/cadvisor"} 0
kube_state_push_kubelet_read_duration_seconds{node="slow",path="/metrics/cadvisor"} 2
# HELP kube_state_push_kubelet_read_samples Samples the last read of a kubelet path kept.
# TYPE kube_state_push_kubelet_read_samples gauge
kube_state_push_kubelet_read_samples{node="forbidden",path="/metrics/cadvisor"} 0
kube_state_push_kubelet_read_samples{node="ok",path="/metrics/cadvisor"} 6
kube_state_push_kubelet_read_samples{node="slow",path="/metrics/cadvisor"} 0
`), "kube_state_push_kubelet_read_errors_total", "kube_state_push_kubelet_read_success",
			"kube_state_push_kubelet_read_duration_seconds", "kube_state_push_kubelet_read_samples"))

		// A node that goes away loses its series at once, and its self-metrics.
		src.Delete(ok.UID)
		require.Nil(t, store.get(t, ok.UID))
		n, err := testutil.GatherAndCount(reg, "kube_state_push_kubelet_read_success")
		require.NoError(t, err)
		require.Equal(t, 2, n)

		// Replace drops the nodes no longer listed.
		src.Replace([]Node{forbidden})
		require.Nil(t, store.get(t, slow.UID))
		cancel()
		<-done
	})
}

// errorLines are a node's read_errors_total lines, every reason at 0 but
// the one given, at 1.
func errorLines(node, failed string) string {
	var b strings.Builder
	for _, r := range reasons {
		v := "0"
		if r == failed {
			v = "1"
		}
		b.WriteString(`kube_state_push_kubelet_read_errors_total{node="` + node + `",path="/metrics/cadvisor",reason="` + r + `"} ` + v + "\n")
	}
	return b.String()
}

func TestSourceSkipsABusyNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		cfg := Config{Interval: time.Second, Timeout: 5 * time.Second, Concurrency: 1, Job: "kubelet", FamilyPrefixes: DefaultFamilyPrefixes,
			Paths: []PathConfig{{Path: PathCadvisor}}}
		src := New(cfg, Options{Reader: fakeReader{}, Store: &fakeStore{}, Metrics: NewMetrics(reg)})
		src.Upsert(Node{UID: "u-slow", Name: "slow", Address: "10.0.0.2", Port: 10250})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); src.Run(ctx) }()
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, 3.0, testutil.ToFloat64(src.o.Metrics.skipped.WithLabelValues("slow")), "three ticks found the first read running")
		cancel()
		<-done
	})
}

// A node added while the source runs is read at once, not an interval
// later; the nodes already read wait for their interval.
func TestSourceReadsANewNodeAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		reads := &countingReader{}
		cfg := Config{Interval: time.Hour, Timeout: time.Second, Concurrency: 2, Job: "kubelet", FamilyPrefixes: DefaultFamilyPrefixes,
			Paths: []PathConfig{{Path: PathCadvisor}}}
		require.NoError(t, cfg.Paths[0].validate())
		src := New(cfg, Options{Reader: reads, Store: store, Metrics: NewMetrics(prometheus.NewRegistry())})
		src.Upsert(Node{UID: "u-a", Name: "a", Address: "10.0.0.1", Port: 10250})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); src.Run(ctx) }()
		synctest.Wait()
		require.Equal(t, map[string]int{"a": 1}, reads.counts())

		src.Upsert(Node{UID: "u-b", Name: "b", Address: "10.0.0.2", Port: 10250})
		synctest.Wait()
		require.Equal(t, map[string]int{"a": 1, "b": 1}, reads.counts(), "b read at once, a not again")
		require.Len(t, store.get(t, "u-b"), 7)

		time.Sleep(time.Hour)
		synctest.Wait()
		require.Equal(t, map[string]int{"a": 2, "b": 2}, reads.counts())
		cancel()
		<-done
	})
}

// countingReader serves body and counts the reads of each node.
type countingReader struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countingReader) Read(_ context.Context, n Node, _ string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[n.Name]++
	return []byte(body), nil
}

func (c *countingReader) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// A node deleted while it is being read gets neither its series nor its
// self-metrics back when the read ends.
func TestSourceDeleteDuringRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		reg := prometheus.NewRegistry()
		cfg := Config{Interval: time.Hour, Timeout: 2 * time.Second, Concurrency: 1, Job: "kubelet", FamilyPrefixes: DefaultFamilyPrefixes,
			Paths: []PathConfig{{Path: PathCadvisor}}}
		src := New(cfg, Options{Reader: fakeReader{}, Store: store, Metrics: NewMetrics(reg)})
		src.Upsert(Node{UID: "u-slow", Name: "slow", Address: "10.0.0.2", Port: 10250})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); src.Run(ctx) }()
		synctest.Wait() // the read waits for its timeout
		src.Delete("u-slow")
		synctest.Wait() // the read ends at once, its slot free
		require.Empty(t, src.sem, "no read holds a slot")
		require.Nil(t, store.get(t, "u-slow"))
		n, err := testutil.GatherAndCount(reg)
		require.NoError(t, err)
		require.Zero(t, n, "no self-metric of the deleted node")
		cancel()
		<-done
	})
}
