package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-state-push/kube-state-push/agent"
	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// Helpers of the fault tests (faults_test.go, outage_test.go,
// apiserver_restart_test.go), and ownAgent, with which every e2e test runs
// its in-process agents.

// ownAgent is an agent run in-process with a registry of its own, so that a
// test reads its counters exactly.
type ownAgent struct {
	agent *agent.Agent
	reg   *prometheus.Registry
	// stop cancels the agent and waits for Run to return (final snapshot
	// queued, queues flushed); later calls return the first result.
	stop func() error
}

// startOwnAgent runs an agent with the configuration cfgText until the test
// ends. ctx is Run's context: it may carry a klog logger (klog.NewContext)
// that client-go's reflectors log to.
func startOwnAgent(t *testing.T, ctx context.Context, cfgText string) *ownAgent {
	t.Helper()
	return runOwnAgent(t, ctx, cfgText, agent.Options{})
}

// runOwnAgent runs an agent in-process with the configuration text cfgText,
// written to a file of its own (the Options' ConfigFile unless set, for
// reloads), until the test ends; its stop ends it sooner. o's Registry is a
// new one unless set; a nil Logger discards the logs.
func runOwnAgent(t *testing.T, ctx context.Context, cfgText string, o agent.Options) *ownAgent {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfgText), 0o600))
	cfg, err := config.LoadFile(path)
	require.NoError(t, err, "config:\n%s", cfgText)
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.ConfigFile == "" {
		o.ConfigFile = path
	}
	a, err := agent.New(cfg, o)
	require.NoError(t, err)
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(time.Minute):
				runErr = fmt.Errorf("the agent did not stop within a minute")
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return &ownAgent{agent: a, reg: o.Registry, stop: stop}
}

// metric returns the sum of the counters or gauges of family name in the
// agent's registry whose labels include every pair of labels (none: all of
// them). A family that is not registered fails the test.
func (o *ownAgent) metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	v, err := metricValue(o.reg, name, labels)
	require.NoError(t, err)
	return v
}

// waitDelivered waits until the agent is ready and has taken n snapshots,
// and the endpoint (labels) has sent samples.
func (o *ownAgent) waitDelivered(t *testing.T, endpoint map[string]string, n int) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("%d snapshots delivered", n), func() error {
		taken := o.metric(t, "kube_state_push_snapshot_total", nil)
		if sent := o.metric(t, "kube_state_push_remote_samples_sent_total", endpoint); !o.agent.Ready() || sent == 0 || taken < float64(n) {
			return fmt.Errorf("%g snapshots, %g samples sent", taken, sent)
		}
		return nil
	})
}

// requireNothingDropped checks that the endpoint dropped no sample for any
// reason.
func (o *ownAgent) requireNothingDropped(t *testing.T, endpoint string) {
	t.Helper()
	require.Zero(t, o.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": endpoint}),
		"samples dropped by %s", endpoint)
}

// metricValue is ownAgent.metric, returning an error instead of failing.
func metricValue(reg *prometheus.Registry, name string, labels map[string]string) (float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, fmt.Errorf("gathering self-metrics: %w", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		sum := 0.0
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			default:
				return 0, fmt.Errorf("%s is neither a counter nor a gauge", name)
			}
		}
		return sum, nil
	}
	return 0, fmt.Errorf("no self-metric %s", name)
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(want)
}

// labelKey is a series' identity: its labels sorted by name, as
// `{a="x", b="y"}` with __name__ among them.
func labelKey(m map[string]string) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", n, m[n])
	}
	b.WriteByte('}')
	return b.String()
}

// promLabelKey is labelKey for a Remote-Write series.
func promLabelKey(ls []prompb.Label) string {
	m := make(map[string]string, len(ls))
	for _, l := range ls {
		m[l.Name] = l.Value
	}
	return labelKey(m)
}

// sampleSet is the timestamps (ms) of the samples of each series, by
// labelKey.
type sampleSet map[string]map[int64]bool

// add records a sample; it reports whether the set already held it.
func (s sampleSet) add(key string, ts int64) (dup bool) {
	if s[key] == nil {
		s[key] = map[int64]bool{}
	}
	dup = s[key][ts]
	s[key][ts] = true
	return dup
}

// total is the number of samples in the set.
func (s sampleSet) total() int {
	n := 0
	for _, ts := range s {
		n += len(ts)
	}
	return n
}

// filter returns the series whose key holds every one of the substrings.
func (s sampleSet) filter(subs ...string) sampleSet {
	out := sampleSet{}
	for k, ts := range s {
		ok := true
		for _, sub := range subs {
			ok = ok && strings.Contains(k, sub)
		}
		if ok {
			out[k] = ts
		}
	}
	return out
}

// sorted returns a series' timestamps in order.
func (s sampleSet) sorted(key string) []int64 {
	out := make([]int64, 0, len(s[key]))
	for ts := range s[key] {
		out = append(out, ts)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// diff describes how got differs from want, series by series, or returns ""
// when they hold the same samples.
func (s sampleSet) diff(got sampleSet) string {
	var lines []string
	for k, want := range s {
		missing, extra := 0, 0
		for ts := range want {
			if !got[k][ts] {
				missing++
			}
		}
		for ts := range got[k] {
			if !want[ts] {
				extra++
			}
		}
		if missing > 0 || extra > 0 {
			lines = append(lines, fmt.Sprintf("%s: %d missing, %d extra (want %d)", k, missing, extra, len(want)))
		}
	}
	for k, ts := range got {
		if _, ok := s[k]; !ok {
			lines = append(lines, fmt.Sprintf("%s: not wanted, %d samples", k, len(ts)))
		}
	}
	sort.Strings(lines)
	if len(lines) > 20 {
		lines = append(lines[:20], fmt.Sprintf("... and %d more", len(lines)-20))
	}
	return strings.Join(lines, "\n")
}

// exportedSet turns stored series into a sampleSet, leaving out staleness
// markers.
func exportedSet(series []testenv.ExportedSeries) sampleSet {
	out := sampleSet{}
	for _, s := range series {
		k := labelKey(s.Metric)
		for i, ts := range s.Timestamps {
			if !encode.IsStaleNaN(s.Values[i]) {
				out.add(k, ts)
			}
		}
	}
	return out
}

// createPods creates a namespace (when ns is not "") and a pod of one
// container per name in it, and returns their UIDs by name.
func createPods(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string, names ...string) map[string]string {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		_, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err, "creating namespace %s", ns)
	}
	uids := map[string]string{}
	for _, n := range names {
		p, err := c.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns, Labels: map[string]string{"app": n}},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "nginx:1.27"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err, "creating pod %s/%s", ns, n)
		uids[n] = string(p.UID)
	}
	return uids
}

// deleteNamespace removes a namespace a test created on the shared control
// plane (no controllers run, so its pods are deleted one by one first).
func deleteNamespace(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	zero := int64(0)
	_ = c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	_ = c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
}
