package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/queue"
)

// One bad series costs one series: a batch holding a series the real
// receiver refuses delivers every other series of it.

// TestRefusedSeriesPrometheus makes a real Prometheus, in its default
// configuration, refuse one of the agent's series: a sample five minutes
// ahead (Prometheus takes up to ten) stored for kube_deployment_spec_replicas
// makes each of the agent's next samples of it out of order. Prometheus
// answers 400 to every request holding one, and rolls a 1.0 request back
// whole; a 2.0 request it stores but for that series, and says so in its
// Samples-Written header. Either way every other series of the batch keeps
// arriving, and the agent counts one dropped sample a snapshot, as
// bad_request.
func TestRefusedSeriesPrometheus(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prom, err := testenv.StartPrometheus(ctx, t.TempDir())
	require.NoError(t, err)
	defer prom.Stop()
	client, err := env.cp.Client()
	require.NoError(t, err)

	for _, tc := range []struct{ name, proto string }{{"v1", protoV1}, {"v2", protoV2}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "refused-prom-" + tc.name
			createMatrixObjects(t, ctx, client, ns)
			a := startAgent(t, agentOptions{config: matrixConfig(ns, map[string]string{"cluster": matrixCluster},
				matrixEndpoint("prom", prom.WriteURL(), tc.proto, nil))})
			expectMatrixSeries(t, prom.Query, ns, "")

			ep := map[string]string{"endpoint": "prom"}
			dropped := func(reason string) float64 {
				return a.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": "prom", "reason": reason})
			}
			require.Zero(t, dropped(queue.ReasonBadRequest))

			// The labels the agent sends for the series, as stored.
			res, err := prom.Query(ctx, fmt.Sprintf(`kube_deployment_spec_replicas{namespace=%q}`, ns))
			require.NoError(t, err)
			require.Len(t, res, 1)
			var labels []prompb.Label
			for _, k := range sortedKeys(res[0].Metric) {
				labels = append(labels, prompb.Label{Name: k, Value: res[0].Metric[k]})
			}
			planted := time.Now()
			w, err := testenv.PushV1(ctx, prom.WriteURL(), nil,
				prompb.TimeSeries{Labels: labels, Samples: []prompb.Sample{{Value: 7, Timestamp: planted.Add(5 * time.Minute).UnixMilli()}}})
			require.NoError(t, err)
			require.Equal(t, http.StatusNoContent, w.Status, w.Body)
			snapshots := a.metric(t, "kube_state_push_snapshot_total", nil)

			eventually(t, 30*time.Second, "three snapshots refused", func() error {
				if n := dropped(queue.ReasonBadRequest); n < 3 {
					return fmt.Errorf("%v samples dropped as bad_request", n)
				}
				return nil
			})
			// Every other series of the namespace got samples after the
			// refusals began.
			others := fmt.Sprintf(`{namespace=%q,__name__!="kube_deployment_spec_replicas"}`, ns)
			eventually(t, 15*time.Second, "every other series delivered since", func() error {
				all, err := prom.RawSamples(ctx, others, 3*time.Second)
				if err != nil {
					return err
				}
				if len(all) < 10 {
					return fmt.Errorf("only %d series", len(all))
				}
				for _, s := range all {
					if last := s.Timestamps[len(s.Timestamps)-1]; last < planted.Add(2*time.Second).UnixMilli() {
						return fmt.Errorf("%v last stored at %d, before the refusals (%d)", s.Metric, last, planted.UnixMilli())
					}
				}
				return nil
			})
			require.NoError(t, a.stop())

			refused := dropped(queue.ReasonBadRequest)
			taken := a.metric(t, "kube_state_push_snapshot_total", nil) - snapshots
			requests400 := a.metric(t, "kube_state_push_remote_requests_total", map[string]string{"endpoint": "prom", "code": "400"})
			all, err := prom.Query(ctx, fmt.Sprintf(`count({namespace=%q})`, ns))
			require.NoError(t, err)
			require.Len(t, all, 1)
			t.Logf("%.0f snapshots since the planted sample: %.0f samples dropped as bad_request, %.0f requests answered 400; %.0f series in a snapshot",
				taken, refused, requests400, all[0].Value)
			require.LessOrEqual(t, refused, taken+1, "one sample a snapshot, not its batch")
			for _, r := range []string{queue.ReasonConflict, queue.ReasonClientError, queue.ReasonTooOld, queue.ReasonResent, queue.ReasonRetriesDone} {
				require.Zero(t, dropped(r), r)
			}
			require.Positive(t, a.metric(t, "kube_state_push_remote_samples_sent_total", ep))
		})
	}
}

// TestRefusedSeriesVictoriaMetrics pushes a pod annotation longer than
// VictoriaMetrics' default -maxLabelValueLen (4 KiB) to a real
// VictoriaMetrics, which skips that series and stores the rest (204). With
// series_limits set to its limit, the agent drops the series itself,
// counted, or truncates the value so that the series arrives.
func TestRefusedSeriesVictoriaMetrics(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	vm := startVM(t)
	client, err := env.cp.Client()
	require.NoError(t, err)
	query := func(ctx context.Context, q string) ([]testenv.Sample, error) { return vm.Query(ctx, q) }
	long := strings.Repeat("x", 5000)

	for _, tc := range []struct {
		name   string
		limits map[string]any
		// reason is the drop the agent counts; "" for none.
		reason string
		// arrives says whether the annotation series is stored.
		arrives bool
	}{
		{name: "drop", limits: map[string]any{"max_label_value_length": 4096}, reason: queue.ReasonLabelTooLong},
		{name: "truncate", limits: map[string]any{"max_label_value_length": 4096, "action": "truncate"}, arrives: true},
		{name: "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "refused-vm-" + tc.name
			createMatrixObjects(t, ctx, client, ns)
			annotate(t, ctx, client, ns, "web-0", "note", long)
			endpoint := matrixEndpoint("vm", vm.WriteURL(), protoV1, nil)
			if tc.limits != nil {
				endpoint.Extra = map[string]any{"series_limits": tc.limits}
			}
			cfg := matrixConfig(ns, map[string]string{"cluster": matrixCluster}, endpoint)
			cfg.set("metric_annotations_allowlist", map[string][]string{"pods": {"note"}})
			ignoredBefore := vmIgnored(t, vm, "too_long_label_value")
			a := startAgent(t, agentOptions{config: cfg})

			expectMatrixSeries(t, query, ns, "")
			ep := map[string]string{"endpoint": "vm"}
			a.waitDelivered(t, ep, 3)
			require.NoError(t, vm.ForceFlush(ctx))
			notes, err := vm.Query(ctx, fmt.Sprintf(`kube_pod_annotations{namespace=%q}`, ns))
			require.NoError(t, err)
			var stored []string
			for _, s := range notes {
				if v := s.Metric["annotation_note"]; v != "" {
					stored = append(stored, v)
				}
			}
			ignored := vmIgnored(t, vm, "too_long_label_value") - ignoredBefore
			require.NoError(t, a.stop())

			if tc.arrives {
				require.Len(t, stored, 1, "the series arrives, its value cut")
				require.LessOrEqual(t, len(stored[0]), 4096)
				require.True(t, strings.HasPrefix(stored[0], long[:4000]))
				require.Positive(t, a.metric(t, "kube_state_push_remote_samples_truncated_total", ep))
			} else {
				require.Empty(t, stored, "VictoriaMetrics never stores the series")
			}
			if tc.reason != "" {
				require.Positive(t, a.metric(t, "kube_state_push_remote_samples_dropped_total",
					map[string]string{"endpoint": "vm", "reason": tc.reason}), "dropped by the agent, counted")
				require.Zero(t, ignored, "never sent")
			}
			if tc.limits == nil {
				require.Positive(t, ignored, "VictoriaMetrics skipped it, and answered 204")
				a.requireNothingDropped(t, "vm")
			}
			t.Logf("%s: VictoriaMetrics ignored %v series, the agent dropped %v (%s), truncated %v",
				tc.name, ignored, a.metric(t, "kube_state_push_remote_samples_dropped_total", ep), tc.reason,
				a.metric(t, "kube_state_push_remote_samples_truncated_total", ep))
		})
	}
}

// annotate sets annotation key of pod ns/name to value.
func annotate(t *testing.T, ctx context.Context, c kubernetes.Interface, ns, name, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	_, err := c.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err, "annotating pod %s/%s", ns, name)
}

// vmIgnored reads vm_rows_ignored_total{reason} from VictoriaMetrics' own
// metrics: the rows it skipped while answering 204.
func vmIgnored(t *testing.T, vm *testenv.VictoriaMetrics, reason string) float64 {
	t.Helper()
	resp, err := http.Get(vm.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	prefix := fmt.Sprintf(`vm_rows_ignored_total{reason=%q} `, reason)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return f
		}
	}
	require.NoError(t, sc.Err())
	return 0
}
