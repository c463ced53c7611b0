package kubelet

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func TestNodeOfAddressTypes(t *testing.T) {
	n := &v1.Node{}
	n.Name, n.UID = "n1", "u1"
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
	n.Status.Addresses = []v1.NodeAddress{
		{Type: v1.NodeHostName, Address: "worker-1"},
		{Type: v1.NodeExternalIP, Address: "203.0.113.7"},
		{Type: v1.NodeInternalIP, Address: "10.0.0.7"},
	}
	require.Equal(t, Node{UID: "u1", Name: "n1", Address: "10.0.0.7", Port: 10250}, NodeOf(n, defaultAddressTypes))
	require.Equal(t, "203.0.113.7", NodeOf(n, []string{AddressExternalIP, AddressInternalIP}).Address)
	require.Equal(t, "worker-1", NodeOf(n, []string{AddressInternalDNS, AddressHostname}).Address)
	n.Status.Addresses = n.Status.Addresses[:1]
	require.Equal(t, "worker-1", NodeOf(n, defaultAddressTypes).Address, "the hostname when the node has no IP")
	require.Empty(t, NodeOf(n, []string{AddressInternalIP}).Address)
}

// bodyReader serves one body.
type bodyReader string

func (b bodyReader) Read(context.Context, Node, string) ([]byte, error) { return []byte(b), nil }

// A read counts what it drops by reason, every reason from 0; a read over
// sample_limit keeps only up 0.
func TestSourceCountsDropsAndLimits(t *testing.T) {
	reg := prometheus.NewRegistry()
	now := time.Now()
	ms := func(d time.Duration) string { return " " + strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	forged := "kube_pod_status_ready{namespace=\"kube-system\"} 1\nup 1\n" +
		"kubelet_a 1" + ms(-11*time.Minute) + "\nkubelet_b 1" + ms(11*time.Minute) + "\nkubelet_c 1" + ms(-time.Minute) + "\n"
	cfg := DefaultConfig
	cfg.Interval, cfg.Paths = time.Minute, []PathConfig{{Path: PathKubelet}}
	require.NoError(t, cfg.Validate())
	store := &fakeStore{}
	src := New(cfg, Options{Reader: bodyReader(forged), Store: store, Metrics: NewMetrics(reg)})
	n := Node{UID: "u1", Name: "n1", Address: "10.0.0.1", Port: 10250}
	src.Upsert(n)
	m := src.o.Metrics
	for _, r := range dropReasons {
		require.Zero(t, testutil.ToFloat64(m.dropped.WithLabelValues("n1", PathKubelet, r)), r)
	}
	src.readNode(t.Context(), n, make(chan struct{}))
	for r, want := range map[string]float64{DropKube: 1, DropFamily: 1, DropTooOld: 1, DropTooNew: 1} {
		require.Equal(t, want, testutil.ToFloat64(m.dropped.WithLabelValues("n1", PathKubelet, r)), r)
	}
	require.Equal(t, 1.0, testutil.ToFloat64(m.success.WithLabelValues("n1", PathKubelet)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.samples.WithLabelValues("n1", PathKubelet)), "kubelet_c")

	src.cfg.SampleLimit = 1
	src.o.Reader = bodyReader("kubelet_a 1\nkubelet_b 1\n")
	src.readNode(t.Context(), n, make(chan struct{}))
	require.Equal(t, 0.0, testutil.ToFloat64(m.success.WithLabelValues("n1", PathKubelet)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.errors.WithLabelValues("n1", PathKubelet, ReasonSampleLimit)))
	got := store.byKey[key("u1", PathKubelet)]
	require.Equal(t, 1, got.Len(), "up alone: %v", text(t, got))
	require.Contains(t, text(t, got)[0], "up{")
	require.Equal(t, 0.0, got.Refs[0].Value)
}

// The operator's opt-in to an unverified connection is logged at start.
func TestSourceWarnsOfAnUnverifiedToken(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	cfg := DefaultConfig
	cfg.Interval, cfg.Paths = time.Minute, []PathConfig{{Path: PathCadvisor}}
	New(cfg, Options{Metrics: NewMetrics(prometheus.NewRegistry()), Logger: log})
	require.Empty(t, buf.String())
	cfg.Scheme, cfg.AllowTokenOverUnverifiedConnection = "http", true
	require.NoError(t, cfg.Validate())
	New(cfg, Options{Metrics: NewMetrics(prometheus.NewRegistry()), Logger: log})
	require.Contains(t, buf.String(), "level=WARN")
	require.Contains(t, buf.String(), "allow_token_over_unverified_connection")
}
