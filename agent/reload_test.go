package agent

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// diffBase is the running configuration the diff cases change.
const diffBase = `
resources: [nodes, pods, configmaps]
namespaces: [a, b]
snapshot_interval: 10s
external_labels: {cluster: one}
remote_write:
  - url: http://a:9090/api/v1/write
    name: a
    headers: {X-Scope-OrgID: tenant-1}
    basic_auth: {username: u, password: p1}
    write_relabel_configs:
      - {action: labeldrop, regex: uid}
  - url: http://b:9090/api/v1/write
    name: b
`

func TestDiffConfigs(t *testing.T) {
	load := func(text string) *config.Config {
		t.Helper()
		cfg, err := config.Load([]byte(text), "diff.yaml")
		require.NoError(t, err)
		return cfg
	}
	sharding := func(c *config.Config) (int, int) { return c.Watch.Shard, c.Watch.TotalShards }
	for _, tc := range []struct {
		name    string
		from    string // replaced in diffBase
		to      string
		want    configDiff
		summary string
	}{{
		name:    "nothing",
		summary: "none",
	}, {
		name: "an endpoint's URL",
		from: "url: http://b:9090/api/v1/write", to: "url: http://c:9090/api/v1/write",
		want:    configDiff{endpointsChanged: []string{"b"}},
		summary: "remote_write changed [b]",
	}, {
		name: "a password, which YAML would show as <secret>",
		from: "password: p1", to: "password: p2",
		want: configDiff{endpointsChanged: []string{"a"}},
	}, {
		name: "a tenant header",
		from: "tenant-1", to: "tenant-2",
		want: configDiff{endpointsChanged: []string{"a"}},
	}, {
		name: "relabel rules",
		from: "regex: uid", to: "regex: uid|pod_ip",
		want: configDiff{endpointsChanged: []string{"a"}},
	}, {
		name: "an endpoint renamed: one removed, one added",
		from: "name: b", to: "name: c",
		want:    configDiff{endpointsAdded: []string{"c"}, endpointsRemoved: []string{"b"}},
		summary: "remote_write added [c]; remote_write removed [b]",
	}, {
		name: "a resource added",
		from: "resources: [nodes, pods, configmaps]", to: "resources: [nodes, pods, configmaps, secrets]",
		want:    configDiff{resourcesAdded: []string{"secrets"}, metadataChanged: true},
		summary: "families selected (their metadata sent from now on); resources added [secrets]",
	}, {
		name: "a resource removed",
		from: "resources: [nodes, pods, configmaps]", to: "resources: [nodes, pods]",
		want: configDiff{resourcesRemoved: []string{"configmaps"}, metadataChanged: true},
	}, {
		name: "namespaces: only namespaced resources change",
		from: "namespaces: [a, b]", to: "namespaces: [a]",
		want: configDiff{resourcesChanged: []string{"pods", "configmaps"}},
	}, {
		name: "a family denied: only its resource changes",
		from: "snapshot_interval: 10s", to: "snapshot_interval: 10s\nmetric_denylist: [kube_pod_status_reason]",
		want: configDiff{resourcesChanged: []string{"pods"}, metadataChanged: true},
	}, {
		name: "a label allowlist: only its resource changes",
		from: "snapshot_interval: 10s", to: "snapshot_interval: 10s\nmetric_labels_allowlist: {nodes: [zone]}",
		want: configDiff{resourcesChanged: []string{"nodes"}},
	}, {
		name: "external labels: every resource",
		from: "cluster: one", to: "cluster: two",
		want:    configDiff{resourcesChanged: []string{"nodes", "pods", "configmaps"}, externalLabels: true},
		summary: "resources changed [nodes pods configmaps]; external_labels",
	}, {
		name: "the shard: every resource",
		from: "snapshot_interval: 10s", to: "snapshot_interval: 10s\nshard: 1\ntotal_shards: 2",
		want: configDiff{resourcesChanged: []string{"nodes", "pods", "configmaps"}},
	}, {
		name: "timings and self-metrics",
		from: "snapshot_interval: 10s", to: "snapshot_interval: 5s\nshutdown_timeout: 1m\npush_self_metrics: false",
		want:    configDiff{snapshotInterval: true, shutdownTimeout: true, pushSelfMetrics: true},
		summary: "snapshot_interval; shutdown_timeout; push_self_metrics",
	}, {
		name: "keys read only at start",
		from: "snapshot_interval: 10s", to: "snapshot_interval: 10s\nlisten_address: :9999\nkubeconfig: /k\nkube_api_compression: true\nkube_api_read_batching: 0s\nauto_sharding: true\nleader_election: {enabled: true, lease_namespace: ns, identity: me}",
		want: configDiff{restartOnly: []string{"kubeconfig", "kube_api_compression", "kube_api_read_batching", "listen_address", "leader_election", "auto_sharding"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.from != "" {
				require.Equal(t, 1, strings.Count(diffBase, tc.from), "the case changes diffBase")
			}
			got := diffConfigs(load(diffBase), load(strings.Replace(diffBase, tc.from, tc.to, 1)), sharding)
			require.Equal(t, tc.want, got)
			if tc.summary != "" {
				require.Equal(t, tc.summary, got.String())
			}
		})
	}
}

// reloadCluster is a fake API server's objects: two nodes, two pods in
// namespace a and one in b.
func reloadCluster() *fake.Clientset {
	node := func(name string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	}
	pod := func(ns, name string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)},
			Status:     v1.PodStatus{Phase: v1.PodRunning},
		}
	}
	return fake.NewClientset(node("n1"), node("n2"), pod("a", "p1"), pod("a", "p2"), pod("b", "p3"))
}

// reloadHarness is an agent on a fake API server whose loop the test runs
// itself: it applies configurations and takes snapshots at timestamps of
// its choosing, and reads what a receiver got at each.
type reloadHarness struct {
	t      *testing.T
	a      *Agent
	reg    *prometheus.Registry
	recv   *testenv.Capture
	recv2  *testenv.Capture
	ts     int64
	cancel context.CancelFunc
	// endpoint holds extra keys of the remote_write entry, indented for
	// it (e.g. a disk_buffer).
	endpoint string
}

// reloadConfig is a configuration of the harness: extra top-level keys,
// and the receiver the endpoint sends to.
func (h *reloadHarness) config(extra string, recv *testenv.Capture) *config.Config {
	h.t.Helper()
	cfg, err := config.Load([]byte(fmt.Sprintf(`listen_address: ""
push_self_metrics: false
%s
remote_write:
  - url: %s
    name: recv
    queue_config: {batch_send_deadline: 10ms}
%s`, extra, recv.URL(), h.endpoint)), "reload.yaml")
	require.NoError(h.t, err)
	return cfg
}

// listWithoutWatchList turns off client-go's WatchListClient feature, whose
// streaming list the fake clientset does not serve: a reflector would wait
// 10 s for its bookmark before falling back to a plain list. (The real API
// server serves it; e2e tests use it.)
func listWithoutWatchList(t *testing.T) {
	t.Helper()
	setWatchList(t, false)
}

func newReloadHarness(t *testing.T, extra string) *reloadHarness {
	return newReloadHarnessWith(t, extra, "")
}

// newReloadHarnessWith is newReloadHarness with extra keys for the
// remote_write entry.
func newReloadHarnessWith(t *testing.T, extra, endpoint string) *reloadHarness {
	listWithoutWatchList(t)
	h := &reloadHarness{t: t, reg: prometheus.NewRegistry(), recv: testenv.NewCapture(), recv2: testenv.NewCapture(), endpoint: endpoint}
	t.Cleanup(h.recv.Close)
	t.Cleanup(h.recv2.Close)
	clients := watch.Clients{Kube: reloadCluster()}
	a, err := New(h.config(extra, h.recv), Options{Clients: &clients, Registry: h.reg})
	require.NoError(t, err)
	h.a = a
	// What Run does before its loop.
	ctx, cancel := context.WithCancel(t.Context())
	h.cancel = cancel
	require.NoError(t, a.shard(ctx))
	a.watchCtx = ctx
	for _, e := range a.endpoints {
		e.start()
	}
	for _, g := range a.groups {
		g.start(ctx, a.clients)
	}
	t.Cleanup(h.stop)
	h.waitReady()
	return h
}

// stop does what Run does after its loop.
func (h *reloadHarness) stop() {
	h.cancel()
	for _, g := range h.a.groups {
		g.stop()
	}
	for name := range h.a.pending {
		h.a.dropPending(name)
	}
	for _, e := range h.a.endpoints {
		require.NoError(h.t, e.stop(context.Background()))
	}
	h.a.draining.Wait()
	require.Empty(h.t, h.a.drainErrs)
}

func (h *reloadHarness) waitReady() {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		for _, p := range h.a.pending {
			if !p.synced() {
				return false
			}
		}
		return h.a.Ready()
	}, 10*time.Second, 5*time.Millisecond)
}

// snapshot takes a snapshot and waits until recv got it; it returns what
// recv got at its timestamp.
func (h *reloadHarness) snapshot(recv *testenv.Capture) map[string]float64 {
	h.t.Helper()
	h.ts += 1000
	ts := h.ts
	n := h.a.snapshot(time.UnixMilli(ts))
	require.Eventually(h.t, func() bool { return len(recv.Series(ts)) == n }, 10*time.Second, 5*time.Millisecond,
		"%d samples of the snapshot at %d reach the receiver", n, ts)
	return recv.Series(ts)
}

// summary counts a snapshot's series by family and namespace (stale
// markers as "stale").
func summary(series map[string]float64) map[string]int {
	out := map[string]int{}
	for k, v := range series {
		key := k[:strings.Index(k, "{")]
		if i := strings.Index(k, `namespace="`); i >= 0 {
			key += "/" + strings.SplitN(k[i+len(`namespace="`):], `"`, 2)[0]
		}
		if math.Float64bits(v) == math.Float64bits(encode.StaleNaN) {
			key = "stale " + key
		}
		out[key]++
	}
	return out
}

// A reload adds, changes and removes resources between snapshots: an added
// resource's series appear; a changed one's replacement takes over once
// listed, the series it lacks getting one staleness marker; a removed
// one's series all get one.
func TestReloadResources(t *testing.T) {
	h := newReloadHarness(t, "resources: [nodes]")
	require.Equal(t, map[string]int{"kube_node_info": 2}, onlyInfo(summary(h.snapshot(h.recv))))

	require.NoError(t, h.a.apply(h.config("resources: [nodes, pods]", h.recv)))
	h.waitReady()
	require.Equal(t, map[string]int{"kube_node_info": 2, "kube_pod_info/a": 2, "kube_pod_info/b": 1}, onlyInfo(summary(h.snapshot(h.recv))))

	// Only namespace a: the replacement lists, then takes over; p3's
	// series get a marker once.
	require.NoError(t, h.a.apply(h.config("resources: [nodes, pods]\nnamespaces: [a]", h.recv)))
	require.Len(t, h.a.pending, 1)
	h.waitReady()
	got := summary(h.snapshot(h.recv))
	require.Empty(t, h.a.pending)
	require.Equal(t, map[string]int{"kube_node_info": 2, "kube_pod_info/a": 2, "stale kube_pod_info/b": 1}, onlyInfo(got))
	require.Zero(t, got["stale kube_pod_info/a"], "series both have go on, unmarked")
	require.Equal(t, map[string]int{"kube_node_info": 2, "kube_pod_info/a": 2}, onlyInfo(summary(h.snapshot(h.recv))), "markers once")

	// pods no longer watched: every series of it gets a marker, once.
	require.NoError(t, h.a.apply(h.config("resources: [nodes]", h.recv)))
	got = summary(h.snapshot(h.recv))
	require.Equal(t, map[string]int{"kube_node_info": 2, "stale kube_pod_info/a": 2}, onlyInfo(got))
	for k := range got {
		require.True(t, strings.HasPrefix(k, "kube_node_") || strings.HasPrefix(k, "stale kube_pod_"), k)
	}
	require.Equal(t, map[string]int{"kube_node_info": 2}, onlyInfo(summary(h.snapshot(h.recv))))
	require.Equal(t, 1.0, testutil.ToFloat64(h.a.reloadMetrics.success))
}

// onlyInfo keeps the _info families of a summary.
func onlyInfo(s map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range s {
		if strings.Contains(k, "_info") {
			out[k] = n
		}
	}
	return out
}

// External labels change every series: the old ones get markers once the
// relabeled maps are listed.
func TestReloadExternalLabels(t *testing.T) {
	h := newReloadHarness(t, "resources: [nodes]\nexternal_labels: {cluster: one}")
	before := h.snapshot(h.recv)
	require.NoError(t, h.a.apply(h.config("resources: [nodes]\nexternal_labels: {cluster: two}", h.recv)))
	h.waitReady()
	after := h.snapshot(h.recv)
	require.Len(t, after, 2*len(before), "every series anew, and a marker for each old one")
	for k, v := range after {
		if strings.Contains(k, `cluster="one"`) {
			require.True(t, math.IsNaN(v), k)
		} else {
			require.Contains(t, k, `cluster="two"`)
			require.False(t, math.IsNaN(v), k)
		}
	}
}

// An endpoint whose URL changes stops (its queue delivered) and the new one
// gets the following snapshots; a refused configuration changes nothing.
func TestReloadEndpoints(t *testing.T) {
	h := newReloadHarness(t, "resources: [nodes]")
	first := h.snapshot(h.recv)
	require.NotEmpty(t, first)

	err := h.a.apply(h.config("resources: [nodes]\nkubeconfig: /elsewhere/kubeconfig", h.recv))
	var refused *RefusedError
	require.ErrorAs(t, err, &refused)
	require.ErrorContains(t, err, "kubeconfig changed, which is read only at start: restart the agent to change it")
	require.Equal(t, 0.0, testutil.ToFloat64(h.a.reloadMetrics.success))
	require.Len(t, h.snapshot(h.recv), len(first), "the old configuration runs on")

	require.NoError(t, h.a.apply(h.config("resources: [nodes]", h.recv2)))
	require.Equal(t, 1.0, testutil.ToFloat64(h.a.reloadMetrics.success))
	n := len(h.recv.Timestamps())
	require.Len(t, h.snapshot(h.recv2), len(first))
	require.Len(t, h.recv.Timestamps(), n, "the old receiver gets nothing more")
}

// POST /-/reload answers 200 once applied, 400 with the reason when the
// new configuration is refused, 500 when the agent cannot reload; other
// methods 405.
func TestReloadHandler(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	recv := testenv.NewCapture()
	defer recv.Close()
	good := "listen_address: \"\"\nresources: [nodes]\nremote_write:\n  - url: " + recv.URL() + "\n"
	require.NoError(t, os.WriteFile(path, []byte(good), 0o600))
	cfg, err := config.LoadFile(path)
	require.NoError(t, err)
	listWithoutWatchList(t)
	clients := watch.Clients{Kube: reloadCluster()}
	reg := prometheus.NewRegistry()
	a, err := New(cfg, Options{Clients: &clients, Registry: reg, ConfigFile: path})
	require.NoError(t, err)

	post := func(method string) (int, string) {
		w := httptest.NewRecorder()
		a.handleReload(w, httptest.NewRequestWithContext(t.Context(), method, "/-/reload", nil))
		return w.Code, w.Body.String()
	}
	code, _ := post(http.MethodGet)
	require.Equal(t, http.StatusMethodNotAllowed, code)

	require.NoError(t, os.WriteFile(path, []byte(good+"    queue_config: {max_shards: 0}\n"), 0o600))
	code, body := post(http.MethodPost)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "config.yaml:5: remote_write[0].queue_config.max_shards: must be at least 1, not 0")
	require.Equal(t, 0.0, testutil.ToFloat64(a.reloadMetrics.success))

	// Applied by Run's loop.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	require.NoError(t, os.WriteFile(path, []byte(good), 0o600))
	code, body = post(http.MethodPost)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 1.0, testutil.ToFloat64(a.reloadMetrics.success))
	require.Positive(t, testutil.ToFloat64(a.reloadMetrics.successTime))
	cancel()
	require.NoError(t, <-done)

	code, body = post(http.MethodPost)
	require.Equal(t, http.StatusInternalServerError, code)
	require.Contains(t, body, "the agent is not running")
}

// An endpoint with a disk buffer can be replaced by one on the same
// directory (here: a new URL): the old one hands the directory over instead
// of the reload being refused because the directory is in use. A reload
// refused for another endpoint leaves the old one running on it.
func TestReloadDiskBufferHandover(t *testing.T) {
	dir := t.TempDir()
	h := newReloadHarnessWith(t, "resources: [nodes]", "    disk_buffer: {directory: "+dir+"}\n")
	first := h.snapshot(h.recv)
	require.NotEmpty(t, first)

	// Refused: a second endpoint on a URL that cannot be built. The first
	// endpoint's replacement was built on the directory, so the old one
	// must run again afterwards.
	bad := h.config("resources: [nodes]", h.recv2)
	broken := bad.RemoteWrite[0]
	broken.Name = "broken"
	broken.DiskBuffer.Directory = dir // the same directory: in use
	bad.RemoteWrite = append(bad.RemoteWrite, broken)
	err := h.a.apply(bad)
	var refused *RefusedError
	require.ErrorAs(t, err, &refused)
	require.ErrorContains(t, err, "in use")
	require.Len(t, h.snapshot(h.recv), len(first), "the old configuration runs on, on its directory")

	require.NoError(t, h.a.apply(h.config("resources: [nodes]", h.recv2)))
	require.Len(t, h.snapshot(h.recv2), len(first), "the new endpoint sends from the same directory")
}

// A reload that changes only the families selected keeps the endpoint (and
// its queue) and hands it the new metadata instead of restarting it.
func TestReloadFamiliesKeepsEndpoint(t *testing.T) {
	h := newReloadHarness(t, "resources: [nodes]")
	q := h.a.endpoints[0].q
	require.NoError(t, h.a.apply(h.config("resources: [nodes, pods]", h.recv)))
	require.Same(t, q, h.a.endpoints[0].q, "the endpoint was not rebuilt")
	h.waitReady()
	s := summary(h.snapshot(h.recv))
	require.Equal(t, 3, s["kube_pod_info/a"]+s["kube_pod_info/b"], "the pods flow through the kept endpoint: %v", s)
}

// An endpoint a reload removes leaves no self-metrics behind once it has
// stopped; one of another name, added by the same reload, has its own.
func TestReloadForgetsRemovedEndpoint(t *testing.T) {
	h := newReloadHarness(t, "resources: [nodes]")
	require.NotEmpty(t, h.snapshot(h.recv))
	endpointSeries := func(name string) int {
		mfs, err := h.reg.Gather()
		require.NoError(t, err)
		n := 0
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "endpoint" && l.GetValue() == name {
						n++
					}
				}
			}
		}
		return n
	}
	require.Positive(t, endpointSeries("recv"))

	cfg, err := config.Load([]byte(fmt.Sprintf("listen_address: \"\"\npush_self_metrics: false\nresources: [nodes]\nremote_write:\n  - url: %s\n    name: other\n    queue_config: {batch_send_deadline: 10ms}\n", h.recv2.URL())), "reload.yaml")
	require.NoError(t, err)
	require.NoError(t, h.a.apply(cfg))
	h.a.draining.Wait()
	require.NotEmpty(t, h.snapshot(h.recv2))
	require.Zero(t, endpointSeries("recv"), "the removed endpoint's series are gone")
	require.Positive(t, endpointSeries("other"))
}

// A reload that changes an endpoint whose receiver does not answer returns
// at once: the old endpoint delivers what it holds in the background,
// within shutdown_timeout, and the new one, to the same receiver, sends
// only after it, so that each series stays in order.
func TestReloadSameReceiverDoesNotWait(t *testing.T) {
	h := newReloadHarness(t, "resources: [nodes]")
	release := make(chan struct{})
	var mu sync.Mutex
	var order []string // the X-Config header of each request answered
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		mu.Lock()
		order = append(order, r.Header.Get("X-Config"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hanging.Close()
	configWith := func(header string) *config.Config {
		cfg, err := config.Load([]byte(fmt.Sprintf("listen_address: \"\"\npush_self_metrics: false\nresources: [nodes]\nshutdown_timeout: 20s\nremote_write:\n  - url: %s\n    name: recv\n    headers: {X-Config: %s}\n    queue_config: {batch_send_deadline: 10ms}\n", hanging.URL, header)), "reload.yaml")
		require.NoError(t, err)
		return cfg
	}
	require.NoError(t, h.a.apply(configWith("one")))
	h.a.snapshot(time.UnixMilli(1000)) // its request hangs
	start := time.Now()
	require.NoError(t, h.a.apply(configWith("two")))
	require.Less(t, time.Since(start), time.Second, "the reload does not wait for the old endpoint")
	h.a.snapshot(time.UnixMilli(2000))
	close(release)
	h.a.draining.Wait()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(order, "two")
	}, 10*time.Second, 5*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "one", order[0], "the old endpoint's queue first: %v", order)
	require.False(t, slices.Contains(order[slices.Index(order, "two"):], "one"), "then only the new one: %v", order)
}
