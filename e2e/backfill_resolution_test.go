package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-state-push/kube-state-push/internal/faultproxy"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// A compressed day offline: TestBackfillResolution's receivers are down
// for thinOutage at a 1 s snapshot interval, and the thinned endpoint's
// backfill_resolution (and the lookback its queries use) is thinStep, so
// that the outage spans many steps.
const (
	thinOutage = 80 * time.Second
	thinStep   = 5 * time.Second
	// thinPods are the pods in churn besides the sample cluster's.
	thinPods = 200
)

// backfill_resolution against VictoriaMetrics: one agent, two endpoints
// with disk buffers, each to a VictoriaMetrics of its own behind a proxy;
// one replays its backlog in full, the other with backfill_resolution.
// Both receivers are down (503) while 200 pods churn: pods created,
// deleted, restarted, turned ready and not ready. Once they are back and
// both backlogs are delivered, every instant query of the cluster
// dashboard, at every half step over the outage with a lookback of one
// step, answers the same at both. The replayed bytes and samples of each
// endpoint are logged.
func TestBackfillResolution(t *testing.T) {
	needEnv(t)
	needBinary(t, "victoria-metrics")
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns, cluster = "thinning", "thinning"
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, "thinning")
	require.NoError(t, err)
	t.Cleanup(func() {
		cleanupNodes(t, client, sc.Nodes)
		deleteNamespace(t, client, ns)
	})
	ch := &churn{c: client, ns: ns, nodes: sc.Nodes, rng: rand.New(rand.NewPCG(41, 5))}
	for range thinPods {
		ch.create(ctx, t)
	}

	vmFull, vmThin := startVM(t), startVM(t)
	proxyFull, proxyThin := startProxy(t, vmFull.WriteURL()), startProxy(t, vmThin.WriteURL())
	dir := t.TempDir()
	cfg := newConfig("").noSelfMetrics()
	cfg.Resources, cfg.Namespaces = []string{"pods", "nodes", "namespaces"}, []string{ns}
	cfg.ExternalLabels = map[string]string{"cluster": cluster}
	// The cluster dashboard's families only: the race detector makes the
	// agent slow, and the backlog in full has to be delivered in time.
	cfg.set("metric_allowlist", []string{
		"kube_node_info", "kube_node_spec_taint", "kube_node_status_(allocatable|capacity|condition)",
		"kube_pod_info", "kube_pod_status_phase", "kube_pod_container_info", "kube_pod_container_resource_(requests|limits)",
		"kube_pod_container_status_(running|restarts_total|waiting_reason|terminated_reason)",
	})
	full := newEndpoint("full", proxyFull.URL())
	full.DiskBuffer = &diskBuffer{Directory: filepath.Join(dir, "full")}
	full.MetadataConfig = &metadataConfig{Send: false}
	thin := newEndpoint("thin", proxyThin.URL())
	thin.DiskBuffer = &diskBuffer{Directory: filepath.Join(dir, "thin")}
	thin.MetadataConfig = &metadataConfig{Send: false}
	thin.Extra = map[string]any{"backfill_resolution": thinStep.String(), "backfill_lookback_delta": thinStep.String()}
	for _, e := range []*remoteWrite{full, thin} {
		// A few shards send larger batches, cheaper to a local receiver.
		e.QueueConfig.MaxShards = 4
	}
	cfg.RemoteWrite = []*remoteWrite{full, thin}
	a := startAgent(t, agentOptions{ctx: ctx, config: cfg})
	snapshots := func() float64 { return a.metric(t, "kube_state_push_snapshot_total", nil) }
	endpoints := []string{"full", "thin"}
	for _, e := range endpoints {
		a.waitDelivered(t, map[string]string{"endpoint": e}, 3)
	}
	metric := func(name, endpoint string) float64 {
		return a.metric(t, "kube_state_push_remote_"+name, map[string]string{"endpoint": endpoint})
	}

	down := time.Now()
	for _, p := range []*faultproxy.Proxy{proxyFull, proxyThin} {
		p.SetRules(faultproxy.Always(faultproxy.Respond(http.StatusServiceUnavailable)))
	}
	atDown := map[string][2]float64{}
	for _, e := range endpoints {
		atDown[e] = [2]float64{metric("sent_bytes_total", e), metric("samples_sent_total", e)}
	}
	ops := ch.run(ctx, t, thinOutage)
	for _, p := range []*faultproxy.Proxy{proxyFull, proxyThin} {
		p.SetRules() // forward everything again
	}
	up := time.Now()
	atUp := snapshots()
	eventually(t, 4*time.Minute, "both backlogs delivered", func() error {
		for _, e := range endpoints {
			if q := metric("queue_length", e); q > 0 || snapshots() < atUp+3 {
				return fmt.Errorf("%s: %g samples queued", e, q)
			}
		}
		return nil
	})
	drained := time.Since(up)
	require.NoError(t, a.stop())
	for _, e := range endpoints {
		a.requireNothingDropped(t, e)
	}
	bytes := map[string]float64{}
	samples := map[string]float64{}
	for _, e := range endpoints {
		bytes[e] = metric("sent_bytes_total", e) - atDown[e][0]
		samples[e] = metric("samples_sent_total", e) - atDown[e][1]
	}
	thinned := metric("samples_thinned_total", "thin")
	require.Zero(t, metric("samples_thinned_total", "full"))
	require.Positive(t, thinned, "unchanged samples left out")
	// Over the whole run, not since the outage: a snapshot one endpoint
	// delivered just before its receiver went down and the other only in
	// its backlog would otherwise count on one side alone.
	require.Equal(t, metric("samples_sent_total", "full"), metric("samples_sent_total", "thin")+thinned,
		"the thinned endpoint sent every sample but those it counted as left out")
	// What each receiver got of the backlog alone: the requests forwarded
	// after the recovery whose samples are all older than it (a shard's
	// batch ends with each frame, so few mix both).
	backlog := func(p *faultproxy.Proxy) (bytes, samples, mixed int) {
		for _, rec := range p.Records() {
			if rec.Outcome != faultproxy.Forwarded || rec.Status/100 != 2 || rec.Write == nil {
				continue
			}
			old, n := 0, 0
			for _, ts := range rec.Write.Timeseries {
				for _, smp := range ts.Samples {
					n++
					if smp.Timestamp < up.UnixMilli() && smp.Timestamp >= down.UnixMilli() {
						old++
					}
				}
			}
			switch old {
			case 0:
			case n:
				bytes += rec.BodyBytes
				samples += n
			default:
				mixed++
			}
		}
		return bytes, samples, mixed
	}
	fullBytes, fullSamples, fullMixed := backlog(proxyFull)
	thinBytes, thinSamples, thinMixed := backlog(proxyThin)
	require.Positive(t, fullBytes)
	require.Less(t, thinBytes, fullBytes/3, "the thinned backlog costs less than a third of the bytes")

	require.NoError(t, vmFull.ForceFlush(ctx))
	require.NoError(t, vmThin.ForceFlush(ctx))
	exprs := dashboardExprs(t, map[string]string{
		"cluster": cluster, "node": "thinning-.*", "namespace": ns,
		"__rate_interval": (6 * thinStep).String(), "__range": (12 * thinStep).String(),
	})
	var compared, answered, rangeDiffer, rangeCompared, times int
	withAnswer := map[string]bool{} // the queries answered at some time
	for at := down.Add(thinStep / 2); at.Before(up); at = at.Add(thinStep / 2) {
		times++
		for _, q := range exprs {
			want, err := vmFull.QueryLookback(ctx, q, at, thinStep)
			require.NoError(t, err)
			got, err := vmThin.QueryLookback(ctx, q, at, thinStep)
			require.NoError(t, err)
			if strings.Contains(q, "[") {
				// A range function: backfill_resolution changes what it
				// sees (docs/configuration.md#backfill_resolution).
				rangeCompared++
				if !slices.Equal(vectorKey(want), vectorKey(got)) {
					rangeDiffer++
				}
				continue
			}
			require.Equal(t, vectorKey(want), vectorKey(got), "%s at +%s", q, at.Sub(down).Round(time.Millisecond))
			compared++
			if len(want) > 0 {
				answered++
				withAnswer[q] = true
			}
		}
	}
	// The namespace has pods and nodes, none of the workloads, services
	// or volumes the dashboard also shows.
	require.GreaterOrEqual(t, len(withAnswer), 20, "the pod and node queries have answers")
	t.Logf("outage %s (%d churn operations, %d pods at the end), backlogs delivered %s after the recovery; "+
		"the backlog's requests at the receivers: full %d bytes, %d samples; thinned (backfill_resolution %s) %d bytes (%.1f%%), %d samples (%.1f%%); %d and %d requests mixed the backlog with new frames; "+
		"sent from the outage to the end (sent_bytes_total, samples_sent_total): full %.0f bytes, %.0f samples; thinned %.0f bytes (%.1f%%), %.0f samples, %.0f left out; "+
		"%d instant queries (%d of them with an answer at some time) equal at %d times over the outage, %d answers not empty; range functions: %d of %d answers differ; test ran %s",
		up.Sub(down).Round(time.Second), ops, ch.live(), drained.Round(100*time.Millisecond),
		fullBytes, fullSamples, thinStep, thinBytes, 100*float64(thinBytes)/float64(fullBytes), thinSamples, 100*float64(thinSamples)/float64(fullSamples), fullMixed, thinMixed,
		bytes["full"], samples["full"], bytes["thin"], 100*bytes["thin"]/bytes["full"], samples["thin"], thinned,
		compared/max(1, times), len(withAnswer), times, answered, rangeDiffer, rangeCompared, time.Since(started).Round(time.Second))
}

// churn creates, deletes and changes pods of a namespace.
type churn struct {
	c     kubernetes.Interface
	ns    string
	nodes []string
	rng   *rand.Rand
	// pods are the names of the pods created and not deleted.
	pods []string
	// n numbers the pods created.
	n int
}

// live is the number of pods created and not deleted.
func (ch *churn) live() int { return len(ch.pods) }

// create creates a running, ready pod of two containers.
func (ch *churn) create(ctx context.Context, t *testing.T) {
	t.Helper()
	p := testenv.BenchPod(ch.n)
	ch.n++
	p.Namespace, p.UID, p.CreationTimestamp = ch.ns, "", metav1.Time{}
	p.Name = fmt.Sprintf("churn-%04d", ch.n)
	p.OwnerReferences = nil
	p.Spec.PriorityClassName = ""    // no PriorityClass exists
	p.Spec.Containers[1].Ports = nil // one port per pod: no warning
	p.Spec.NodeName = ch.nodes[ch.n%len(ch.nodes)]
	status := p.Status
	created, err := ch.c.CoreV1().Pods(ch.ns).Create(ctx, p, metav1.CreateOptions{})
	require.NoError(t, err)
	created.Status = status
	_, err = ch.c.CoreV1().Pods(ch.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	ch.pods = append(ch.pods, p.Name)
}

// change restarts a pod's first container and turns it ready or not
// ready, or its pod to Failed.
func (ch *churn) change(ctx context.Context, t *testing.T) {
	t.Helper()
	name := ch.pods[ch.rng.IntN(len(ch.pods))]
	p, err := ch.c.CoreV1().Pods(ch.ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	cs := &p.Status.ContainerStatuses[0]
	switch ch.rng.IntN(3) {
	case 0: // a restart into CrashLoopBackOff
		cs.RestartCount++
		cs.Ready = false
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	case 1: // running and ready again
		cs.Ready = true
		cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}}
	default:
		p.Status.Phase = v1.PodFailed
		cs.Ready = false
		cs.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}
	}
	ready := v1.ConditionFalse
	if cs.Ready {
		ready = v1.ConditionTrue
	}
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == v1.PodReady || c.Type == v1.ContainersReady {
			c.Status = ready
		}
	}
	_, err = ch.c.CoreV1().Pods(ch.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// remove deletes a pod at random.
func (ch *churn) remove(ctx context.Context, t *testing.T) {
	t.Helper()
	i := ch.rng.IntN(len(ch.pods))
	zero := int64(0)
	require.NoError(t, ch.c.CoreV1().Pods(ch.ns).Delete(ctx, ch.pods[i], metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	ch.pods = slices.Delete(ch.pods, i, i+1)
}

// run churns for d, four operations a second (a create, a delete or two
// changes in turn), and returns how many it made.
func (ch *churn) run(ctx context.Context, t *testing.T, d time.Duration) int {
	t.Helper()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	n := int(d / (250 * time.Millisecond))
	for i := range n {
		<-tick.C
		switch i % 4 {
		case 0:
			ch.create(ctx, t)
		case 1:
			ch.remove(ctx, t)
		default:
			ch.change(ctx, t)
		}
	}
	return n
}
