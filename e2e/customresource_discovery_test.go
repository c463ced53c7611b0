package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kube-state-push/kube-state-push/agent"
	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// discoveryDocument configures three kinds: one whose CRD exists at
// start, one whose CRD is created later, and one that never has a CRD.
const discoveryDocument = `
  spec:
    resources:
      - groupVersionKind: {group: late.example.com, version: v1, kind: Sprocket}
        labelsFromPath: {name: [metadata, name]}
        metrics:
          - {name: sprocket_teeth, help: Teeth., each: {type: Gauge, gauge: {path: [spec, teeth]}}}
      - groupVersionKind: {group: late.example.com, version: v1, kind: Latecomer}
        labelsFromPath: {name: [metadata, name]}
        metrics:
          - {name: latecomer_size, help: Size., each: {type: Gauge, gauge: {path: [spec, size]}}}
      - groupVersionKind: {group: late.example.com, version: v1, kind: Ghost}
        metrics:
          - {name: ghost_count, help: Never served., each: {type: Gauge, gauge: {path: [spec, count]}}}
`

// Beyond kube-state-metrics: a configured kind whose CRD is created after
// the start is watched (listed) within a snapshot interval of the CRD's
// establishment, without a restart, and its objects' series follow; once
// its CRD is deleted its series get staleness markers; a kind no CRD
// serves is reported (self-metric, one log line) and the others flow.
func TestCustomResourceDiscovery(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	dc, err := dynamic.NewForConfig(env.cp.RESTConfig())
	require.NoError(t, err)
	ns := "crs-discovery"
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	sprockets := schema.GroupVersionResource{Group: "late.example.com", Version: "v1", Resource: "sprockets"}
	latecomers := schema.GroupVersionResource{Group: "late.example.com", Version: "v1", Resource: "latecomers"}
	createCRD(t, ctx, dc, crdObject("late.example.com", "Sprocket", "sprockets", "Namespaced", "v1"))
	defer deleteCRD(t, context.Background(), dc, "sprockets.late.example.com")
	defer deleteCRD(t, context.Background(), dc, "latecomers.late.example.com")
	createObjects(t, ctx, dc, sprockets, fmt.Sprintf("{apiVersion: late.example.com/v1, kind: Sprocket, metadata: {name: s1, namespace: %s}, spec: {teeth: 12}}", ns))

	const interval = time.Second
	capture := testenv.NewCapture()
	defer capture.Close()
	logs := &syncBuffer{}
	cfg := captureConfig(capture.URL()).set("custom_resource_state", yamlValue(t, discoveryDocument))
	cfg.SnapshotInterval = interval
	cfg.Resources = []string{"namespaces"}
	o := startAgent(t, agentOptions{ctx: ctx, config: cfg, options: agent.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}})
	defer func() { require.NoError(t, o.stop()) }()

	sprocket := `kube_customresource_sprocket_teeth{customresource_group="late.example.com",customresource_kind="Sprocket",customresource_version="v1",name="s1"}`
	latecomer := `kube_customresource_latecomer_size{customresource_group="late.example.com",customresource_kind="Latecomer",customresource_version="v1",name="l1"}`
	last := func() map[string]float64 {
		ts := capture.Timestamps()
		if len(ts) == 0 {
			return nil
		}
		return capture.Series(ts[len(ts)-1])
	}
	eventually(t, 30*time.Second, "the sprocket's series", func() error {
		if v, ok := last()[sprocket]; !ok || v != 12 {
			return fmt.Errorf("not yet: %v", last())
		}
		return nil
	})
	require.True(t, o.agent.Ready())
	for kind, want := range map[string]float64{"Ghost": 1, "Latecomer": 1, "Sprocket": 0} {
		require.Equal(t, want, o.metric(t, "kube_state_push_custom_resource_missing", map[string]string{"kind": kind}), kind)
	}

	// An update of an object whose CRD existed at start: the next snapshot.
	updated := time.Now()
	_, err = dc.Resource(sprockets).Namespace(ns).Patch(ctx, "s1", types.MergePatchType, []byte(`{"spec":{"teeth":13}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	var seenUpdate time.Time
	eventually(t, 30*time.Second, "the sprocket's update", func() error {
		for _, ts := range capture.Timestamps() {
			if v, ok := capture.Series(ts)[sprocket]; ok && v == 13 {
				seenUpdate = time.UnixMilli(ts)
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
	t.Logf("sprocket update %s after the patch", seenUpdate.Sub(updated).Round(time.Millisecond))

	// The CRD appears: the agent watches it within an interval, and an
	// object created then is in the next snapshot.
	createCRD(t, ctx, dc, crdObject("late.example.com", "Latecomer", "latecomers", "Namespaced", "v1"))
	established := time.Now()
	// The agent's part: the kind is resolved and its watch started...
	eventually(t, 10*time.Second, "the latecomers resolved", func() error {
		if v, _ := o.metrics(t).sum("kube_state_push_custom_resource_missing", map[string]string{"kind": "Latecomer"}); v != 0 {
			return fmt.Errorf("still missing")
		}
		return nil
	})
	resolved := time.Since(established)
	// ... and the API server's: the first list of a CRD created moments
	// ago may wait for its watch cache.
	eventually(t, 10*time.Second, "the latecomers listed", func() error {
		if v, _ := o.metrics(t).sum("kube_state_push_resource_synced", map[string]string{"resource": "late.example.com/v1/latecomers"}); v != 1 {
			return fmt.Errorf("not synced")
		}
		return nil
	})
	t.Logf("latecomers watched %s and listed %s after their CRD was established", resolved.Round(time.Millisecond), time.Since(established).Round(time.Millisecond))
	require.LessOrEqual(t, resolved, interval, "watched within one snapshot interval")
	created := time.Now()
	createObjects(t, ctx, dc, latecomers, fmt.Sprintf("{apiVersion: late.example.com/v1, kind: Latecomer, metadata: {name: l1, namespace: %s}, spec: {size: 3}}", ns))
	var seen time.Time
	eventually(t, 30*time.Second, "the latecomer's series", func() error {
		for _, ts := range capture.Timestamps() {
			if v, ok := capture.Series(ts)[latecomer]; ok && v == 3 {
				seen = time.UnixMilli(ts)
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
	t.Logf("latecomer series %s after the object was created", seen.Sub(created).Round(time.Millisecond))
	// The API server delivers the first watch event of a CRD created
	// moments ago about 2 s late (a plain watch on it shows the same; the
	// following events take milliseconds), so the bound is looser here
	// than for the watch itself.
	require.LessOrEqual(t, seen.Sub(created), interval+3*time.Second, "series within an interval of the API server's first event")

	// The CRD goes: its series end with a staleness marker; the others flow.
	deleteStart := time.Now()
	deleteCRD(t, ctx, dc, "latecomers.late.example.com")
	gone := time.Now()
	var staleAt time.Time
	eventually(t, 30*time.Second, "the latecomer's staleness marker", func() error {
		for _, ts := range capture.Timestamps() {
			if v, ok := capture.Series(ts)[latecomer]; ok && encode.IsStaleNaN(v) {
				staleAt = time.UnixMilli(ts)
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
	t.Logf("CRD deletion took %s; staleness marker %s after the delete call", gone.Sub(deleteStart).Round(time.Millisecond), staleAt.Sub(deleteStart).Round(time.Millisecond))
	require.LessOrEqual(t, staleAt.Sub(gone), interval+500*time.Millisecond, "stale within one snapshot interval of the CRD's removal")
	eventually(t, 10*time.Second, "the sprocket's series after the removal", func() error {
		s := last()
		if _, ok := s[latecomer]; ok {
			return fmt.Errorf("latecomer still in the latest snapshot")
		}
		if s[sprocket] != 13 {
			return fmt.Errorf("sprocket missing: %v", s)
		}
		return nil
	})
	require.Equal(t, 1.0, o.metric(t, "kube_state_push_custom_resource_missing", map[string]string{"kind": "Latecomer"}))

	// One line for the kind that never had a CRD, however many snapshots.
	n := 0
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "no established CRD serves this kind") && strings.Contains(l, "kind=Ghost") {
			n++
		}
	}
	require.Equal(t, 1, n, "log lines about Ghost:\n%s", logs.String())
}
