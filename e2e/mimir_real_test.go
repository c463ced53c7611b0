package e2e

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/internal/faultproxy"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// The receiver matrix against a real Mimir: one process of its own per
// test (-target=all, filesystem storage), a tenant per scenario.

// startMimir starts a Mimir for the test with opts and stops it at the end.
func startMimir(t *testing.T, opts testenv.MimirOptions) *testenv.Mimir {
	t.Helper()
	needBinary(t, "mimir")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := testenv.StartMimir(ctx, t.TempDir(), opts)
	require.NoError(t, err)
	t.Cleanup(m.Stop)
	t.Logf("mimir ready after %s", m.Started.Round(10*time.Millisecond))
	return m
}

// mimirQuery queries tenant's series in m.
func mimirQuery(m *testenv.Mimir, tenant string) queryFunc {
	return func(ctx context.Context, q string) ([]testenv.Sample, error) { return m.Query(ctx, tenant, q) }
}

// kubePodInfoHelp is kube_pod_info's HELP as kube-state-metrics prints it.
const kubePodInfoHelp = "[STABLE] Information about pod."

// mimirTenant is the header of an endpoint that writes into tenant.
func mimirTenant(tenant string) map[string]string {
	return map[string]string{testenv.MimirOrgHeader: tenant}
}

// TestReceiverMimir pushes to Mimir under a tenant of its own
// (X-Scope-OrgID), once per Remote-Write version, and reads through Mimir's
// Prometheus API. Mimir speaks 2.0 (Samples-Written on every answer), so
// neither version falls back; it keeps the HELP and TYPE of 1.0 metadata
// requests and of 2.0's inline metadata alike.
func TestReceiverMimir(t *testing.T) {
	needEnv(t)
	m := startMimir(t, testenv.MimirOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
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
			ns := "matrix-mimir-" + tc.name
			tenant := "tenant-" + tc.name
			createMatrixObjects(t, ctx, client, ns)
			a := startAgent(t, agentOptions{config: matrixConfig(ns, map[string]string{"cluster": matrixCluster},
				matrixEndpoint("mimir", m.WriteURL(), tc.proto, mimirTenant(tenant)))})
			query := mimirQuery(m, tenant)

			expectMatrixSeries(t, query, ns, "")
			res, err := m.Query(ctx, "another-tenant", fmt.Sprintf(`{namespace=%q}`, ns))
			require.NoError(t, err)
			require.Empty(t, res, "series of ns stored under another tenant")
			eventually(t, 15*time.Second, "the HELP and TYPE of kube_pod_info", func() error {
				md, err := m.Metadata(ctx, tenant, "kube_pod_info")
				if err != nil {
					return err
				}
				if want := (testenv.MimirMetadata{Type: "gauge", Help: kubePodInfoHelp}); !slices.Contains(md, want) {
					return fmt.Errorf("metadata %v, want %v among it", md, want)
				}
				return nil
			})
			expectDoomedStale(t, query, client, ns, "")

			ep := map[string]string{"endpoint": "mimir"}
			require.Equal(t, tc.version, a.metric(t, "kube_state_push_remote_protocol_version", ep), "no fallback")
			require.Zero(t, a.metric(t, "kube_state_push_remote_protocol_fallbacks_total", ep))
			require.Zero(t, a.metric(t, "kube_state_push_remote_samples_not_written_total", ep),
				"Mimir wrote every sample its Samples-Written header counts")
			require.Zero(t, a.metric(t, "kube_state_push_remote_samples_deduplicated_total", ep), "no HA tracker")
			require.NoError(t, a.stop())
			a.requireNothingDropped(t, "mimir")
			require.Positive(t, a.metric(t, "kube_state_push_remote_samples_sent_total", ep))
		})
	}
}

// TestMimirHATracker runs two agents, leader election off, as replicas a
// and b of one cluster (cluster and __replica__ external labels) into a
// Mimir with its HA tracker on. a pushes first and is elected: one stream
// is stored, without the replica label; b's requests are answered 202,
// counted as sent and deduplicated, never retried nor dropped. When a
// stops, b takes over after the failover timeout: a pod created after a
// stopped reaches Mimir.
func TestMimirHATracker(t *testing.T) {
	needEnv(t)
	m := startMimir(t, testenv.MimirOptions{HATracker: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns, tenant = "mimir-ha", "ha"
	createMatrixObjects(t, ctx, client, ns)
	query := mimirQuery(m, tenant)
	replica := func(name string) *testAgent {
		return startAgent(t, agentOptions{config: matrixConfig(ns,
			map[string]string{testenv.MimirClusterLabel: matrixCluster, testenv.MimirReplicaLabel: name},
			matrixEndpoint("mimir", m.WriteURL(), protoV2, mimirTenant(tenant)))})
	}
	ep := map[string]string{"endpoint": "mimir"}
	// code is how many requests of a were answered c; the family is
	// missing until a's first answer.
	code := func(a *testAgent, c string) float64 {
		v, err := a.metrics(t).sum("kube_state_push_remote_requests_total", map[string]string{"endpoint": "mimir", "code": c})
		if err != nil {
			return 0
		}
		return v
	}

	a := replica("a")
	expectMatrixSeries(t, query, ns, "")
	b := replica("b")
	eventually(t, 30*time.Second, "replica b answered 202", func() error {
		if code(b, "202") < 3 {
			return fmt.Errorf("%g requests answered 202", code(b, "202"))
		}
		return nil
	})

	// One stream: a's, without the replica label.
	res, err := m.Query(ctx, tenant, fmt.Sprintf(`{namespace=%q,%s!=""}`, ns, testenv.MimirReplicaLabel))
	require.NoError(t, err)
	require.Empty(t, res, "series stored with a replica label")
	res, err = m.Query(ctx, tenant, fmt.Sprintf(`count(kube_pod_info{namespace=%q})`, ns))
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.Equal(t, float64(len(matrixPods)), res[0].Value, "one kube_pod_info per pod")
	require.Zero(t, code(b, "200"), "nothing of b's stored while a is elected")
	require.Positive(t, code(a, "200"))
	require.Zero(t, a.metric(t, "kube_state_push_remote_samples_deduplicated_total", ep), "a is elected")
	for name, r := range map[string]*testAgent{"a": a, "b": b} {
		require.Zero(t, r.metric(t, "kube_state_push_remote_samples_retried_total", ep), "replica %s", name)
		require.Zero(t, r.metric(t, "kube_state_push_remote_samples_failed_total", ep), "replica %s", name)
		require.Zero(t, r.metric(t, "kube_state_push_remote_samples_not_written_total", ep), "replica %s", name)
		require.Zero(t, r.metric(t, "kube_state_push_remote_protocol_fallbacks_total", ep), "replica %s: a 202 carries Samples-Written", name)
		r.requireNothingDropped(t, "mimir")
	}
	// Every sample b got an answer for was deduplicated.
	dedup := b.metric(t, "kube_state_push_remote_samples_deduplicated_total", ep)
	require.Positive(t, dedup)
	require.Equal(t, b.metric(t, "kube_state_push_remote_samples_sent_total", ep), dedup, "b's samples all answered 202")

	require.NoError(t, a.stop())
	stopped := time.Now()
	late, err := client.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: ns},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	q := fmt.Sprintf(`kube_pod_info{namespace=%q,pod=%q}`, ns, late.Name)
	eventually(t, 30*time.Second, "b's samples stored after a stopped", func() error {
		res, err := query(ctx, q)
		if err != nil {
			return err
		}
		if len(res) != 1 {
			return fmt.Errorf("%d series for %s; b's answers: %g x 200, %g x 202", len(res), q, code(b, "200"), code(b, "202"))
		}
		return nil
	})
	t.Logf("b took over %s after a stopped (failover timeout %s)", time.Since(stopped).Round(100*time.Millisecond), testenv.MimirMinFailover)
	require.Positive(t, code(b, "200"))
	require.NoError(t, b.stop())
	b.requireNothingDropped(t, "mimir")
	require.Zero(t, b.metric(t, "kube_state_push_remote_samples_retried_total", ep))
}

// mimirOutage is how many snapshots (1 s apart) Mimir is unreachable for in
// TestMimirOutOfOrderBackfill.
const mimirOutage = 10

// TestMimirOutOfOrderBackfill pushes with backfill: newest_first and a disk
// buffer into a Mimir whose out-of-order window is on. A proxy in front
// answers 503 for mimirOutage snapshots; after it forwards again, the newest
// snapshot goes ahead of the backlog, and Mimir stores both: the backlog's
// samples, older than the newest ones of their series, are within the
// window. Without the window Mimir would refuse them as out of order.
func TestMimirOutOfOrderBackfill(t *testing.T) {
	needEnv(t)
	m := startMimir(t, testenv.MimirOptions{OutOfOrderWindow: 10 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns, tenant = "mimir-backfill", "backfill"
	createPods(ctx, t, client, ns, "web-1", "web-2")
	t.Cleanup(func() { deleteNamespace(t, client, ns) })
	proxy := startProxy(t, m.WriteURL())

	cfg := newConfig(proxy.URL()).noSelfMetrics()
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	cfg.ExternalLabels = map[string]string{"cluster": "mimir-backfill"}
	cfg.RemoteWrite[0] = &remoteWrite{URL: proxy.URL(), Name: "mimir", Backfill: "newest_first", Headers: mimirTenant(tenant),
		MetadataConfig: &metadataConfig{Send: false}, DiskBuffer: &diskBuffer{Directory: filepath.Join(t.TempDir(), "buffer")},
		QueueConfig: queueConfig{BatchSendDeadline: 100 * time.Millisecond, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}}
	a := startAgent(t, agentOptions{ctx: ctx, config: cfg})
	snapshots := func() float64 { return a.metric(t, "kube_state_push_snapshot_total", nil) }
	endpoint := map[string]string{"endpoint": "mimir"}
	a.waitDelivered(t, endpoint, 3)

	proxy.SetRules(faultproxy.Always(faultproxy.Respond(503)))
	atStop := snapshots()
	eventually(t, 2*mimirOutage*time.Second, "snapshots while Mimir is unreachable", func() error {
		if n := snapshots() - atStop; n < mimirOutage {
			return fmt.Errorf("%g snapshots", n)
		}
		return nil
	})
	outageRecords := len(proxy.Records())
	proxy.SetRules()
	newestAtUp := int64(a.metric(t, "kube_state_push_snapshot_last_timestamp_seconds", nil) * 1000)
	eventually(t, 60*time.Second, "the backlog delivered", func() error {
		if q := a.metric(t, "kube_state_push_remote_queue_length", endpoint); q > 0 || snapshots() < atStop+mimirOutage+3 {
			return fmt.Errorf("%g samples queued", q)
		}
		return nil
	})
	require.NoError(t, a.stop())
	a.requireNothingDropped(t, "mimir")

	// What Mimir accepted after the recovery, by timestamp, in order: the
	// newest snapshot first, then the backlog behind it.
	var order []int64
	seen := map[int64]bool{}
	for _, rec := range proxy.Records()[outageRecords:] {
		if rec.Outcome != faultproxy.Forwarded || rec.Write == nil {
			continue
		}
		require.True(t, accepted(rec.Status), "Mimir answered %d after the recovery", rec.Status)
		for _, ts := range rec.Write.Timeseries {
			for _, s := range ts.Samples {
				if !seen[s.Timestamp] {
					seen[s.Timestamp] = true
					order = append(order, s.Timestamp)
				}
			}
		}
	}
	i := slices.IndexFunc(order, func(ts int64) bool { return ts >= newestAtUp })
	require.GreaterOrEqual(t, i, 0, "the newest snapshot at recovery was forwarded")
	var backlog []int64
	for _, ts := range order[i+1:] {
		if ts < newestAtUp {
			backlog = append(backlog, ts)
		}
	}
	// A batch being retried when Mimir came back goes first; the rest of
	// the backlog follows the newest snapshot, out of order.
	require.Positive(t, len(backlog), "older snapshots of the backlog follow the newest: %v", order)

	// Mimir holds every sample it accepted, the newest snapshot and the
	// backlog alike; staleness markers are not in a range vector.
	var want []int64
	for _, rec := range proxy.Records() {
		if rec.Outcome != faultproxy.Forwarded || rec.Write == nil || !accepted(rec.Status) {
			continue
		}
		for _, ts := range rec.Write.Timeseries {
			if k := promLabelKey(ts.Labels); !strings.Contains(k, `__name__="kube_pod_info"`) || !strings.Contains(k, `pod="web-1"`) {
				continue
			}
			for _, smp := range ts.Samples {
				if !math.IsNaN(smp.Value) && !slices.Contains(want, smp.Timestamp) {
					want = append(want, smp.Timestamp)
				}
			}
		}
	}
	slices.Sort(want)
	require.Contains(t, want, order[i], "the newest snapshot")
	series, err := m.RawSamples(ctx, tenant, fmt.Sprintf(`kube_pod_info{namespace=%q,pod="web-1"}`, ns), 10*time.Minute)
	require.NoError(t, err)
	require.Len(t, series, 1)
	got := series[0].Timestamps
	require.Equal(t, want, got, "the samples Mimir accepted are the samples it holds")
	for _, ts := range backlog {
		require.Contains(t, got, ts, "backlog sample %d stored", ts)
	}
	t.Logf("after %d snapshots down: the newest snapshot first, %d older ones behind it; Mimir holds %d samples of web-1's kube_pod_info",
		mimirOutage, len(backlog), len(got))
}

// TestMimirPerTenantLimits meets Mimir's default per-tenant limits head on:
// kube_pod_labels of a pod with 40 labels (every label allowlisted) is over
// max_label_names_per_series (30), and kube_pod_annotations of a pod with
// an annotation of 2,100 bytes is over max_label_value_length (2,048).
// Mimir refuses both with 400 and stores every other series of the batch;
// the agent counts as bad_request only the refused series.
func TestMimirPerTenantLimits(t *testing.T) {
	needEnv(t)
	m := startMimir(t, testenv.MimirOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns, tenant = "mimir-limits", "limits"
	createNamespace(t, client, ns)
	t.Cleanup(func() { deleteNamespace(t, client, ns) })
	many := map[string]string{}
	for i := range 40 {
		many[fmt.Sprintf("l%02d", i)] = "v"
	}
	for _, p := range []*v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "many-labels", Labels: many}},
		{ObjectMeta: metav1.ObjectMeta{Name: "long-annotation", Labels: map[string]string{"app": "x"},
			Annotations: map[string]string{"note": strings.Repeat("x", 2100)}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "plain", Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"note": "short"}}},
	} {
		p.Spec.Containers = []v1.Container{{Name: "app", Image: "nginx:1.27"}}
		_, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	cfg := newConfig("").noSelfMetrics()
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	cfg.ShutdownTimeout = 10 * time.Second
	cfg.ExternalLabels = map[string]string{"cluster": "mimir-limits"}
	cfg.RemoteWrite = []*remoteWrite{matrixEndpoint("mimir", m.WriteURL(), protoV1, mimirTenant(tenant))}
	cfg.set("metric_labels_allowlist", map[string][]string{"pods": {"*"}})
	cfg.set("metric_annotations_allowlist", map[string][]string{"pods": {"note"}})
	a := startAgent(t, agentOptions{config: cfg})
	ep := map[string]string{"endpoint": "mimir"}
	badRequest := map[string]string{"endpoint": "mimir", "reason": "bad_request"}

	stored := func(q string) (int, error) {
		res, err := m.Query(ctx, tenant, q)
		return len(res), err
	}
	sel := fmt.Sprintf(`namespace=%q`, ns)
	eventually(t, 30*time.Second, "every series within the limits stored", func() error {
		for q, want := range map[string]int{
			`kube_pod_info{` + sel + `}`:                                3,
			`kube_pod_status_phase{` + sel + `,phase="Pending"}`:        3,
			`kube_pod_labels{` + sel + `,pod!="many-labels"}`:           2,
			`kube_pod_annotations{` + sel + `,pod!="long-annotation"}`:  2,
			`kube_pod_annotations{` + sel + `,annotation_note="short"}`: 1,
		} {
			n, err := stored(q)
			if err != nil {
				return err
			}
			if n != want {
				return fmt.Errorf("%d series for %s, want %d", n, q, want)
			}
		}
		if a.metric(t, "kube_state_push_remote_samples_dropped_total", badRequest) == 0 {
			return fmt.Errorf("no refused series counted yet")
		}
		return nil
	})
	for _, q := range []string{
		`kube_pod_labels{` + sel + `,pod="many-labels"}`,
		`kube_pod_annotations{` + sel + `,pod="long-annotation"}`,
	} {
		n, err := stored(q)
		require.NoError(t, err)
		require.Zero(t, n, "Mimir refuses %s", q)
	}
	require.NoError(t, a.stop())
	require.Positive(t, a.metric(t, "kube_state_push_remote_requests_total", map[string]string{"endpoint": "mimir", "code": "400"}))
	require.Zero(t, a.metric(t, "kube_state_push_remote_samples_retried_total", ep), "a 400 is not retried")
	for _, r := range []string{"conflict", "client_error", "retries_ended", "too_old"} {
		require.Zero(t, a.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": "mimir", "reason": r}), r)
	}

	// Two series of each snapshot are over the limits; only they are
	// counted as refused.
	dropped := a.metric(t, "kube_state_push_remote_samples_dropped_total", badRequest)
	snapshots := a.metric(t, "kube_state_push_snapshot_total", nil)
	t.Logf("%g samples dropped as bad_request over %g snapshots", dropped, snapshots)
	require.LessOrEqual(t, dropped, 2*snapshots, "only the series over the limits are counted as refused")
}
