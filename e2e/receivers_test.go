package e2e

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/queue"
)

// The receiver matrix: the agent pushes a namespace of its own to
// each real receiver, once per Remote-Write version, and the test reads the
// series back through the receiver's own API.

// Remote-Write versions as protobuf_message names them.
const (
	protoV1 = queue.ProtoV1
	protoV2 = queue.ProtoV2
)

// matrixCluster is the external label every matrix agent adds.
const matrixCluster = "matrix"

// matrixPods are the pods each matrix namespace holds; doomed is deleted to
// check staleness markers.
var matrixPods = []string{"web-0", "web-1", "doomed"}

// createMatrixObjects creates namespace ns with matrixPods, running, and a
// deployment "web" of 2 replicas, and removes them when the test ends.
func createMatrixObjects(t *testing.T, ctx context.Context, c kubernetes.Interface, ns string) {
	t.Helper()
	_, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err, "creating namespace %s", ns)
	t.Cleanup(func() {
		zero := int64(0)
		bg := context.Background()
		_ = c.CoreV1().Pods(ns).DeleteCollection(bg, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		_ = c.AppsV1().Deployments(ns).Delete(bg, "web", metav1.DeleteOptions{})
		_ = c.CoreV1().Namespaces().Delete(bg, ns, metav1.DeleteOptions{})
	})
	for _, name := range matrixPods {
		p, err := c.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "nginx:1.27"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err, "creating pod %s/%s", ns, name)
		p.Status.Phase = v1.PodRunning
		_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		require.NoError(t, err, "writing the status of pod %s/%s", ns, name)
	}
	replicas := int32(2)
	_, err = c.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "creating deployment %s/web", ns)
}

// deleteMatrixPod deletes the doomed pod of ns at once.
func deleteMatrixPod(t *testing.T, ctx context.Context, c kubernetes.Interface, ns string) {
	t.Helper()
	zero := int64(0)
	require.NoError(t, c.CoreV1().Pods(ns).Delete(ctx, "doomed", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
}

// matrixConfig watches the pods and deployments of ns on the shared
// control plane, snapshots every second and pushes to endpoint.
func matrixConfig(ns string, externalLabels map[string]string, endpoint *remoteWrite) *agentConfig {
	cfg := newConfig("").noSelfMetrics()
	cfg.Resources, cfg.Namespaces = []string{"pods", "deployments"}, []string{ns}
	cfg.ShutdownTimeout = 10 * time.Second
	cfg.ExternalLabels = externalLabels
	cfg.RemoteWrite = []*remoteWrite{endpoint}
	return cfg
}

// matrixEndpoint is the remote_write entry of matrixConfig: short batch
// deadlines and backoffs, 1.0 metadata every second, and the given headers.
func matrixEndpoint(name, url, proto string, headers map[string]string) *remoteWrite {
	return &remoteWrite{
		URL: url, Name: name, ProtobufMessage: proto, Headers: headers,
		MetadataConfig: &metadataConfig{Send: true, SendInterval: time.Second},
		QueueConfig:    queueConfig{BatchSendDeadline: 100 * time.Millisecond, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond},
	}
}

// queryFunc runs an instant PromQL query against a receiver.
type queryFunc func(ctx context.Context, q string) ([]testenv.Sample, error)

// seriesKey names a sample by its metric name and the labels in keep, for
// compact comparisons.
func seriesKey(s testenv.Sample, keep ...string) string {
	parts := []string{s.Metric["__name__"]}
	for _, k := range keep {
		parts = append(parts, k+"="+s.Metric[k])
	}
	return strings.Join(parts, ",")
}

// expectMatrixSeries waits until the receiver holds the series of ns's
// objects with the right values, each with the agent's external label.
// extra is appended to every selector (e.g. `,tenant_id="t"`).
func expectMatrixSeries(t *testing.T, query queryFunc, ns string, extra string) {
	t.Helper()
	want := map[string]float64{
		"kube_deployment_spec_replicas,deployment=web,cluster=" + matrixCluster: 2,
	}
	for _, p := range matrixPods {
		want["kube_pod_info,pod="+p+",cluster="+matrixCluster] = 1
		want["kube_pod_status_phase,pod="+p+",phase=Running,cluster="+matrixCluster] = 1
	}
	sel := fmt.Sprintf(`namespace=%q%s`, ns, extra)
	q := fmt.Sprintf(`{__name__=~"kube_pod_info|kube_deployment_spec_replicas",%s} or kube_pod_status_phase{%s,phase="Running"}`, sel, sel)
	eventually(t, 30*time.Second, q, func() error {
		res, err := query(context.Background(), q)
		if err != nil {
			return err
		}
		got := map[string]float64{}
		for _, s := range res {
			switch s.Metric["__name__"] {
			case "kube_deployment_spec_replicas":
				got[seriesKey(s, "deployment", "cluster")] = s.Value
			case "kube_pod_info":
				got[seriesKey(s, "pod", "cluster")] = s.Value
			default:
				got[seriesKey(s, "pod", "phase", "cluster")] = s.Value
			}
		}
		if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
			return fmt.Errorf("got %v, want %v", sorted(got), sorted(want))
		}
		return nil
	})
}

// expectDoomedStale deletes the doomed pod of ns and waits until its series
// (those matching extra too) are gone from instant queries, which takes a
// staleness marker: without one they would stay for the 5-minute lookback.
func expectDoomedStale(t *testing.T, query queryFunc, c kubernetes.Interface, ns, extra string) {
	t.Helper()
	q := fmt.Sprintf(`{namespace=%q,pod="doomed"%s}`, ns, extra)
	res, err := query(context.Background(), q)
	require.NoError(t, err)
	require.NotEmpty(t, res, "the doomed pod has series before it is deleted")
	deleteMatrixPod(t, context.Background(), c, ns)
	start := time.Now()
	eventually(t, 30*time.Second, "series of the deleted pod gone from "+q, func() error {
		res, err := query(context.Background(), q)
		if err != nil {
			return err
		}
		if len(res) > 0 {
			return fmt.Errorf("%d series left, e.g. %v", len(res), res[0].Metric)
		}
		return nil
	})
	t.Logf("series of the deleted pod gone after %s", time.Since(start).Round(100*time.Millisecond))
}

// TestReceiverPrometheus pushes to a Prometheus of its own, started with
// type-and-unit-labels so that the TYPE a 2.0 request carries is stored as
// the __type__ label. Prometheus' /api/v1/metadata lists only the metadata
// of its scrape targets, never what remote write brought (v0.316.0,
// web/api/v1/api.go metricMetadata), and its receiver ignores 1.0 metadata
// altogether; so 1.0 metadata is checked as accepted by the receiver, and
// its content in TestReceiverMimir.
func TestReceiverPrometheus(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prom, err := testenv.StartPrometheus(ctx, t.TempDir(), "--enable-feature=type-and-unit-labels")
	require.NoError(t, err)
	defer prom.Stop()
	client, err := env.cp.Client()
	require.NoError(t, err)

	for _, tc := range []struct {
		name, proto string
		version     float64
	}{
		{"v1", protoV1, 1},
		{"v2", protoV2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "matrix-prom-" + tc.name
			createMatrixObjects(t, ctx, client, ns)
			a := startAgent(t, agentOptions{config: matrixConfig(ns, map[string]string{"cluster": matrixCluster},
				matrixEndpoint("prom", prom.WriteURL(), tc.proto, nil))})

			expectMatrixSeries(t, prom.Query, ns, "")
			if tc.version == 2 {
				// The TYPE of each 2.0 series reached the TSDB.
				expectMatrixSeries(t, prom.Query, ns, `,__type__="gauge"`)
			}
			expectDoomedStale(t, prom.Query, client, ns, "")

			ep := map[string]string{"endpoint": "prom"}
			require.Equal(t, tc.version, a.metric(t, "kube_state_push_remote_protocol_version", ep), "no fallback")
			require.Zero(t, a.metric(t, "kube_state_push_remote_protocol_fallbacks_total", ep))
			require.Zero(t, a.metric(t, "kube_state_push_remote_samples_not_written_total", ep),
				"Prometheus wrote every sample its Samples-Written header counts")
			if tc.version == 1 {
				eventually(t, 10*time.Second, "1.0 metadata accepted", func() error {
					if a.metric(t, "kube_state_push_remote_metadata_sent_total", ep) == 0 {
						return fmt.Errorf("no metadata entries accepted yet")
					}
					return nil
				})
			} else {
				require.Zero(t, a.metric(t, "kube_state_push_remote_metadata_sent_total", ep), "2.0 carries metadata inline")
			}
			require.NoError(t, a.stop())
			a.requireNothingDropped(t, "prom")
			require.Positive(t, a.metric(t, "kube_state_push_remote_samples_sent_total", ep))
		})
	}
}

// TestReceiverVictoriaMetrics pushes to VictoriaMetrics, which speaks only
// Remote-Write 1.0: a 2.0 endpoint gets 204 without the Samples-Written
// header, falls back and sends the same samples again as 1.0. Every sample
// the agent counts as sent is then in /api/v1/export, staleness markers
// included.
func TestReceiverVictoriaMetrics(t *testing.T) {
	needEnv(t)
	needBinary(t, "victoria-metrics")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vm, err := testenv.StartVictoriaMetrics(ctx, t.TempDir())
	require.NoError(t, err)
	defer vm.Stop()
	client, err := env.cp.Client()
	require.NoError(t, err)
	query := func(ctx context.Context, q string) ([]testenv.Sample, error) { return vm.Query(ctx, q) }

	for _, tc := range []struct {
		name, proto string
		fallbacks   float64
	}{
		{"v1", protoV1, 0},
		{"v2", protoV2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "matrix-vm-" + tc.name
			createMatrixObjects(t, ctx, client, ns)
			a := startAgent(t, agentOptions{config: matrixConfig(ns, map[string]string{"cluster": matrixCluster},
				matrixEndpoint("vm", vm.WriteURL(), tc.proto, nil))})

			expectMatrixSeries(t, query, ns, "")
			expectDoomedStale(t, query, client, ns, "")

			ep := map[string]string{"endpoint": "vm"}
			require.Equal(t, tc.fallbacks, a.metric(t, "kube_state_push_remote_protocol_fallbacks_total",
				map[string]string{"endpoint": "vm", "reason": queue.FallbackNoWrittenHeader}), "fallbacks")
			require.Equal(t, 1.0, a.metric(t, "kube_state_push_remote_protocol_version", ep), "1.0 at the end")
			require.NoError(t, a.stop())
			a.requireNothingDropped(t, "vm")

			// Every sample counted as sent is stored, once.
			series, err := vm.Export(context.Background(), fmt.Sprintf(`{namespace=%q}`, ns))
			require.NoError(t, err)
			stored, stale := 0, 0
			for _, s := range series {
				stored += len(s.Values)
				if s.Metric["pod"] == "doomed" {
					require.True(t, math.IsNaN(s.Values[len(s.Values)-1]), "%v ends with a staleness marker", s.Metric)
					stale++
				}
			}
			require.Positive(t, stale)
			sent := a.metric(t, "kube_state_push_remote_samples_sent_total", ep)
			require.Equal(t, sent, float64(stored), "samples sent and stored")
			t.Logf("%d samples sent, %d stored in %d series", int(sent), stored, len(series))
		})
	}
}

// TestReceiverThanos pushes to a Thanos receive under a tenant of its own
// (THANOS-TENANT), reads through Thanos query under that tenant's label, and
// makes the receive answer 409 by storing, before the agent's next sample,
// a sample in the future for one of the agent's series.
func TestReceiverThanos(t *testing.T) {
	needEnv(t)
	needBinary(t, "thanos")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	th, err := testenv.StartThanos(ctx, t.TempDir())
	require.NoError(t, err)
	defer th.Stop()
	client, err := env.cp.Client()
	require.NoError(t, err)
	query := func(ctx context.Context, q string) ([]testenv.Sample, error) { return th.Query(ctx, q) }

	for _, tc := range []struct {
		name, proto string
		fallbacks   float64
	}{
		{"v1", protoV1, 0},
		// Thanos receive v0.42.4 answers a 2.0 request 200 without the
		// Samples-Written header and stores nothing (REFERENCE.md).
		{"v2", protoV2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "matrix-thanos-" + tc.name
			tenant := "tenant-" + tc.name
			createMatrixObjects(t, ctx, client, ns)
			a := startAgent(t, agentOptions{config: matrixConfig(ns, map[string]string{"cluster": matrixCluster},
				matrixEndpoint("thanos", th.WriteURL(), tc.proto, map[string]string{testenv.ThanosTenantHeader: tenant}))})

			inTenant := fmt.Sprintf(",%s=%q", testenv.ThanosTenantLabel, tenant)
			expectMatrixSeries(t, query, ns, inTenant)
			res, err := th.Query(ctx, fmt.Sprintf(`{namespace=%q,%s!=%q}`, ns, testenv.ThanosTenantLabel, tenant))
			require.NoError(t, err)
			require.Empty(t, res, "series of ns stored under another tenant")
			expectDoomedStale(t, query, client, ns, inTenant)

			ep := map[string]string{"endpoint": "thanos"}
			require.Equal(t, 1.0, a.metric(t, "kube_state_push_remote_protocol_version", ep), "1.0 at the end")
			require.Equal(t, tc.fallbacks, a.metric(t, "kube_state_push_remote_protocol_fallbacks_total",
				map[string]string{"endpoint": "thanos", "reason": queue.FallbackNoWrittenHeader}), "fallbacks")
			a.requireNothingDropped(t, "thanos")

			t.Run("conflict", func(t *testing.T) {
				conflictOnce(t, th, a, ns, tenant)
			})
			require.NoError(t, a.stop())
		})
	}
}

// conflictOnce stores a sample one hour ahead for the agent's
// kube_deployment_spec_replicas series in ns, so that the agent's next
// sample of it is out of order: the receive answers 409 and the agent counts
// the request's samples as dropped with reason conflict.
func conflictOnce(t *testing.T, th *testenv.Thanos, a *testAgent, ns, tenant string) {
	t.Helper()
	ctx := context.Background()
	res, err := th.Query(ctx, fmt.Sprintf(`kube_deployment_spec_replicas{namespace=%q,%s=%q}`, ns, testenv.ThanosTenantLabel, tenant))
	require.NoError(t, err)
	require.Len(t, res, 1)
	// The labels the agent sent: the query adds the tenant and the
	// receive's replica label.
	var labels []prompb.Label
	for _, k := range sortedKeys(res[0].Metric) {
		if k != testenv.ThanosTenantLabel && k != testenv.ThanosReplicaLabel {
			labels = append(labels, prompb.Label{Name: k, Value: res[0].Metric[k]})
		}
	}
	ep := map[string]string{"endpoint": "thanos"}
	conflicts := func() float64 {
		return a.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": "thanos", "reason": queue.ReasonConflict})
	}
	require.Zero(t, conflicts())
	future := time.Now().Add(time.Hour).UnixMilli()
	w, err := testenv.PushV1(ctx, th.WriteURL(), map[string][]string{testenv.ThanosTenantHeader: {tenant}},
		prompb.TimeSeries{Labels: labels, Samples: []prompb.Sample{{Value: 2, Timestamp: future}}})
	require.NoError(t, err)
	require.Equal(t, 200, w.Status, w.Body)

	eventually(t, 15*time.Second, "a 409 counted as conflict drops", func() error {
		if conflicts() == 0 {
			return fmt.Errorf("no samples dropped as conflict yet; requests: %v", a.metric(t, "kube_state_push_remote_requests_total", map[string]string{"endpoint": "thanos", "code": "409"}))
		}
		return nil
	})
	require.Positive(t, a.metric(t, "kube_state_push_remote_requests_total", map[string]string{"endpoint": "thanos", "code": "409"}))
	for _, r := range []string{queue.ReasonBadRequest, queue.ReasonClientError, queue.ReasonRetriesDone, queue.ReasonUnsupported} {
		require.Zero(t, a.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": "thanos", "reason": r}), r)
	}
	require.Zero(t, a.metric(t, "kube_state_push_remote_samples_retried_total", ep), "a 409 is not retried")
	t.Logf("%v samples dropped as conflict", conflicts())
}
