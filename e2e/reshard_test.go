package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kube-state-push/kube-state-push/agent"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// reshardTolerance is how much longer than one snapshot_interval a moved
// series may go without a sample. The replica that loses an object stops
// sending it when it sees the new replica count; the one that gains it
// sends it once its new list of the pods is stored, at the next check of
// that list (firstSnapshotPoll: 50ms at 1s). Both see the change within
// the API server's watch latency of each other. What is left is that list
// (tens of milliseconds for 60 pods here) and the scheduling of three
// race-detector agents on two shared cores.
const reshardTolerance = 400 * time.Millisecond

// Three auto-sharded agents named ksp-0, ksp-1 and ksp-2 push the pods of
// one namespace while their StatefulSet scales 2 → 3 → 2, without a
// restart. Each agent also sends to a capture receiver of its own, which
// tells who sent what. Once a change has settled every pod's series come
// from exactly the agent that owns it (watch.OwnedBy) at each of its
// snapshots, and from no other; across the changes no series goes without
// a sample for longer than one interval (plus reshardTolerance), none is
// sent twice at one timestamp with different values, and none gets a
// staleness marker, at the capture receivers as at VictoriaMetrics.
func TestReshardInPlace(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	vm := startVM(t)
	client, err := env.cp.Client()
	require.NoError(t, err)

	const ns, set, interval = "reshard", "ksp", time.Second
	names := make([]string, 60)
	for i := range names {
		names[i] = fmt.Sprintf("pod-%02d", i)
	}
	uids := createPods(ctx, t, client, ns, names...)
	defer deleteNamespace(t, client, ns)
	createStatefulSet(t, ctx, client, ns, set, 2)

	captures := make([]*testenv.Capture, 3)
	agents := make([]*testAgent, 3)
	for i := range agents {
		captures[i] = testenv.NewCapture()
		defer captures[i].Close()
		cfg := captureConfig(captures[i].URL())
		cfg.SnapshotInterval = interval
		cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
		cfg.RemoteWrite = []*remoteWrite{newEndpoint("capture", captures[i].URL()), newEndpoint("vm", vm.WriteURL())}
		cfg.set("auto_sharding", true)
		// The three share their external labels: their self-metrics stay
		// apart by shard_ordinal.
		cfg.PushSelfMetrics = ptr.To(true)
		agents[i] = startAgent(t, agentOptions{ctx: ctx, config: cfg, options: agent.Options{
			PodName: fmt.Sprintf("%s-%d", set, i), PodNamespace: ns,
		}})
	}
	for _, a := range agents {
		a.waitReady(t)
	}

	// Phases: the replicas from a time on.
	type phase struct {
		from     time.Time
		replicas int
	}
	phases := []phase{{time.Now(), 2}}
	time.Sleep(4 * interval)
	for _, n := range []int{3, 2} {
		phases = append(phases, phase{time.Now(), n})
		scaleStatefulSet(t, ctx, client, ns, set, n)
		time.Sleep(8 * interval)
		for i, a := range agents {
			require.Equal(t, float64(n), a.metric(t, "kube_state_push_total_shards", nil), "agent %d's shard count", i)
			require.Equal(t, float64(i), a.metric(t, "kube_state_push_shard_ordinal", map[string]string{"shard_ordinal": strconv.Itoa(i)}), "agent %d's ordinal", i)
		}
	}
	end := time.Now()
	for _, a := range agents {
		require.NoError(t, a.stop())
	}

	// settle is how long after a change its snapshots are checked: the
	// change reaches every agent, which lists its pods again, within it.
	const settle = 2 * interval
	phaseAt := func(ts int64) (p phase, settled bool) {
		at := time.UnixMilli(ts)
		for i := len(phases) - 1; i >= 0; i-- {
			if !at.Before(phases[i].from) {
				settled := i == 0 || at.After(phases[i].from.Add(settle))
				return phases[i], settled && at.Before(end)
			}
		}
		return phases[0], false // before the first phase: ready, not yet timed
	}

	// Every sample of the namespace's pod series, by agent.
	type sample struct {
		ts    int64
		value float64
		agent int
	}
	samples := map[string][]sample{}
	podOf := regexp.MustCompile(`pod="([^"]+)"`)
	inNS := regexp.MustCompile(`^kube_pod_[a-z_]+\{.*namespace="` + ns + `"`)
	stale, checked := 0, 0
	for i, c := range captures {
		for _, ts := range c.Timestamps() {
			got := map[string]bool{} // pods in this snapshot
			for key, v := range c.Series(ts) {
				if !inNS.MatchString(key) {
					continue
				}
				if math.IsNaN(v) {
					stale++
					continue
				}
				samples[key] = append(samples[key], sample{ts, v, i})
				m := podOf.FindStringSubmatch(key)
				require.NotNil(t, m, key)
				got[m[1]] = true
			}
			p, settled := phaseAt(ts)
			if !settled {
				continue
			}
			checked++
			for _, name := range names {
				owns := watch.OwnedBy(types.UID(uids[name]), i, p.replicas)
				require.Equal(t, owns, got[name], "agent %d at %s (%d replicas): pod %s", i, time.UnixMilli(ts).Format(time.StampMilli), p.replicas, name)
			}
		}
	}
	require.Positive(t, checked)
	require.Zero(t, stale, "no staleness marker: no pod ended")

	// Gaps and duplicates, per series, over every agent's samples.
	var longest, steady, handover time.Duration
	var longestKey string
	dupSame, dupDiff, interleaved, moved := 0, 0, 0, 0
	for key, ss := range samples {
		slices.SortFunc(ss, func(a, b sample) int { return int(a.ts - b.ts) })
		switches := 0
		for j := 1; j < len(ss); j++ {
			prev, cur := ss[j-1], ss[j]
			if cur.ts == prev.ts {
				if cur.value == prev.value {
					dupSame++
				} else {
					dupDiff++
				}
				continue
			}
			gap := time.Duration(cur.ts-prev.ts) * time.Millisecond
			if cur.agent != prev.agent {
				switches++
				handover = max(handover, gap)
			}
			if cur.agent == prev.agent && gap > steady {
				steady = gap
			}
			if gap > longest {
				longest, longestKey = gap, key
			}
		}
		// A series that moves changes agent once per change at most; more
		// means two agents sent it in turns.
		if switches > len(phases)-1 {
			interleaved++
		}
		if switches > 0 {
			moved++
		}
	}
	t.Logf("%d series of %d pods; %d snapshots checked for ownership", len(samples), len(names), checked)
	t.Logf("%d series moved between agents; longest gap at a handover: %v", moved, handover)
	t.Logf("longest gap between two samples of a series: %v (%s); longest from one agent: %v", longest, longestKey, steady)
	t.Logf("series pushed twice at one timestamp: %d with the same value, %d with different values; series sent by two agents in turns: %d", dupSame, dupDiff, interleaved)
	require.LessOrEqual(t, longest, interval+reshardTolerance, "a moved series misses at most the snapshot between its two owners")
	require.Zero(t, dupDiff, "no series twice at one timestamp with different values")
	require.Zero(t, interleaved, "no series sent by two agents in turns")
	require.Positive(t, moved, "scaling moved series between agents")

	// At VictoriaMetrics, as one receiver of all three: the same gaps, and
	// no staleness marker.
	exported, err := vm.Export(ctx, fmt.Sprintf(`{__name__=~"kube_pod_.*",namespace=%q}`, ns))
	require.NoError(t, err)
	require.Len(t, exported, len(samples))
	var vmLongest time.Duration
	for _, s := range exported {
		for j, v := range s.Values {
			require.False(t, math.IsNaN(v), "a staleness marker at VictoriaMetrics: %v", s.Metric)
			if j > 0 {
				vmLongest = max(vmLongest, time.Duration(s.Timestamps[j]-s.Timestamps[j-1])*time.Millisecond)
			}
		}
	}
	t.Logf("VictoriaMetrics: %d series, longest gap %v", len(exported), vmLongest)
	require.LessOrEqual(t, vmLongest, interval+reshardTolerance)

	self, err := vm.Export(ctx, `kube_state_push_snapshot_total`)
	require.NoError(t, err)
	ordinals := map[string]int{}
	for _, s := range self {
		ordinals[s.Metric["shard_ordinal"]]++
	}
	require.Equal(t, map[string]int{"0": 1, "1": 1, "2": 1}, ordinals, "each agent's snapshot count, apart by shard_ordinal")
}

// createStatefulSet creates a StatefulSet of replicas pods named set; no
// controller runs, so it stays an object the agents read.
func createStatefulSet(t *testing.T, ctx context.Context, c kubernetes.Interface, ns, set string, replicas int32) {
	t.Helper()
	labels := map[string]string{"app": set}
	_, err := c.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: set},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "agent", Image: "kube-state-push"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// scaleStatefulSet sets the replicas through the scale subresource, as
// kubectl scale does.
func scaleStatefulSet(t *testing.T, ctx context.Context, c kubernetes.Interface, ns, set string, replicas int) {
	t.Helper()
	_, err := c.AppsV1().StatefulSets(ns).UpdateScale(ctx, set, &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: ns},
		Spec:       autoscalingv1.ScaleSpec{Replicas: int32(replicas)},
	}, metav1.UpdateOptions{})
	require.NoError(t, err, "scaling StatefulSet %s/%s to %d", ns, set, replicas)
}

// The sharded overlay's Role is enough for auto-sharding to read its
// StatefulSet and follow its replicas, and no more: listing the
// namespace's StatefulSets is forbidden.
func TestReshardRBAC(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := env.cp.Client()
	require.NoError(t, err)
	createNamespace(t, admin, rbacNamespace)
	const ns, set = "reshard-rbac", "kube-state-push" // the Role's resourceNames
	createNamespace(t, admin, ns)
	defer deleteNamespace(t, admin, ns)
	createStatefulSet(t, ctx, admin, ns, set, 2)

	data, err := os.ReadFile("../deploy/sharded/role.yaml")
	require.NoError(t, err)
	var role rbacv1.Role
	require.NoError(t, yaml.UnmarshalStrict(data, &role))
	// Bound cluster-wide for serviceAccountKubeconfig: the rules name the
	// one StatefulSet either way.
	kubeconfig := serviceAccountKubeconfig(t, admin, "ksp-sharded", "sharded",
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, Rules: role.Rules})
	rc, err := watch.RESTConfig(kubeconfig, false)
	require.NoError(t, err)
	c, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)

	shard, total, err := watch.ShardFromStatefulSet(ctx, c, ns, set+"-1")
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, []int{shard, total})
	got := make(chan int, 10)
	require.NoError(t, watch.WatchReplicas(ctx, c, ns, set+"-1", func(n int) { got <- n }, func(err error) { t.Error(err) }))
	next := func() int {
		select {
		case n := <-got:
			return n
		case <-time.After(20 * time.Second):
			t.Fatal("the replica count never came: list or watch refused?")
			return 0
		}
	}
	require.Equal(t, 2, next())
	scaleStatefulSet(t, ctx, admin, ns, set, 3)
	require.Equal(t, 3, next())

	_, err = c.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing every StatefulSet: %v", err)
}
