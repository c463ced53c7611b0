package agent

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/kubelet"
)

// TestKubeletStoreStaleness: a series gone from a node's next read, and
// every series of a node deleted, get a staleness marker in the next
// snapshot, as the state series do.
func TestKubeletStoreStaleness(t *testing.T) {
	m := newSeriesMap("kubelet", nil, slog.New(slog.DiscardHandler), newMetrics(prometheus.NewRegistry()).forResource("kubelet"))
	s := kubeletStore{m}
	s.Set("n1/metrics/cadvisor", testenv.KubeletSet("a", "b"))
	var f encode.Frame
	require.Equal(t, 2, m.snapshot(&f, false))
	require.Empty(t, f.Stale)

	s.Set("n1/metrics/cadvisor", testenv.KubeletSet("a"))
	f.Reset()
	require.Equal(t, 1, m.snapshot(&f, false))
	require.Len(t, f.Stale, 1, "b ended")
	require.Equal(t, testenv.KubeletSet("b").Refs[0].Hash, f.Stale[0].Hash)

	s.Set("n1/metrics/cadvisor", nil)
	f.Reset()
	require.Equal(t, 0, m.snapshot(&f, false))
	require.Len(t, f.Stale, 1, "a ended with its node")
}

// TestNodeTeeOwnsOnlyShardNodes: with sharding, the kubelet source hears
// only of the nodes this replica owns.
func TestNodeTeeOwnsOnlyShardNodes(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newSeriesMap("nodes", nil, slog.New(slog.DiscardHandler), newMetrics(reg).forResource("nodes"))
	m.owns = func(uid types.UID) bool { return uid == "mine" }
	var calls []string
	src := kubelet.New(kubelet.Config{Interval: time.Hour, Timeout: time.Second, Concurrency: 1, Job: "kubelet", FamilyPrefixes: kubelet.DefaultFamilyPrefixes,
		Paths: []kubelet.PathConfig{{Path: kubelet.PathCadvisor}}},
		kubelet.Options{Reader: nopReader{}, Store: recordStore{&calls}, Metrics: kubelet.NewMetrics(reg)})
	tee := nodeTee{seriesMap: m, src: src}
	node := func(uid string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}}
	}
	// Foreign nodes are never rendered, so Replace's render is not called.
	require.NoError(t, tee.Replace([]any{node("theirs")}, "1"))
	require.NoError(t, tee.Delete(node("theirs")))
	require.Empty(t, calls, "a foreign node is not read, and has nothing to delete")
	src.Upsert(kubelet.Node{UID: "mine", Name: "mine"})
	require.NoError(t, tee.Delete(node("mine")))
	require.Equal(t, []string{"mine/metrics/cadvisor=nil"}, calls, "deleting an owned node ends its series")
}

type nopReader struct{}

func (nopReader) Read(context.Context, kubelet.Node, string) ([]byte, error) { return nil, nil }

type recordStore struct{ calls *[]string }

func (r recordStore) Set(key types.UID, set *encode.SeriesSet) {
	v := "set"
	if set == nil {
		v = "nil"
	}
	*r.calls = append(*r.calls, string(key)+"="+v)
}

// TestKubeletReload: the kubelet section is read only at start, so a
// reload that changes it is refused; one that leaves it alone is not.
func TestKubeletReload(t *testing.T) {
	const base = "remote_write:\n  - url: http://receiver.example/api/v1/write\nkubelet:\n  timeout: 5s\n"
	load := func(text string) *config.Config {
		cfg, err := config.Load([]byte(text), "inline.yaml")
		require.NoError(t, err)
		return cfg
	}
	same := func(*config.Config) (int, int) { return 0, 1 }
	require.NotContains(t, diffConfigs(load(base), load(base), same).restartOnly, "kubelet")
	require.NotContains(t, diffConfigs(load(base), load(base+"external_labels: {cluster: b}\n"), same).restartOnly, "kubelet",
		"external labels reach the source without a restart")
	require.Contains(t, diffConfigs(load(base), load(base+"  concurrency: 3\n"), same).restartOnly, "kubelet")
	require.Contains(t, diffConfigs(load(base), load("remote_write:\n  - url: http://receiver.example/api/v1/write\n"), same).restartOnly, "kubelet")
}
