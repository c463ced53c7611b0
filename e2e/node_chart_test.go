package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// snapshotInterval is the agent's default snapshot_interval, which the
// chart and deploy/base keep.
const snapshotInterval = 30 * time.Second

// installChart installs the chart as release in namespace ns with the
// values given (YAML), waits until its Pod is Ready through its own probes
// and returns the Pod's name. The release is uninstalled when the test
// ends.
func installChart(t *testing.T, n *testenv.Node, release, ns, values string) string {
	t.Helper()
	c, err := n.Client()
	require.NoError(t, err)
	f := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(f, []byte(values), 0o600))
	start := time.Now()
	nodeHelm(t, n, "install", release, chartDir, "--namespace", ns, "--create-namespace", "--values", f)
	t.Cleanup(func() {
		if _, err := nodeHelmErr(n, "uninstall", release, "--namespace", ns); err != nil {
			t.Log(err)
		}
		deleteNodeNamespace(n, ns)
	})
	pod := waitPodReady(t, c, n, ns, "app.kubernetes.io/instance="+release, 3*time.Minute)
	t.Logf("helm install %s: Pod %s Ready after %s", release, pod.Name, time.Since(start).Round(100*time.Millisecond))
	return pod.Name
}

// nodeReceiver starts a Prometheus receiver in the node's namespace and
// returns it with the URL Pods push to.
func nodeReceiver(t *testing.T, n *testenv.Node, config string) (*testenv.Prometheus, string) {
	t.Helper()
	if config == "" {
		config = "global:\n  scrape_interval: 1m\n"
	}
	p, url, err := n.StartPrometheus(t.Context(), t.TempDir(), config)
	require.NoError(t, err)
	t.Cleanup(p.Stop)
	return p, url
}

// queryLog runs q until check accepts its answer, within timeout, and logs
// the answer.
func queryLog(t *testing.T, p *testenv.Prometheus, timeout time.Duration, q string, check func([]testenv.Sample) error) []testenv.Sample {
	t.Helper()
	var got []testenv.Sample
	eventually(t, timeout, q, func() error {
		var err error
		if got, err = p.Query(t.Context(), q); err != nil {
			return err
		}
		return check(got)
	})
	var lines []string
	for _, s := range got {
		lines = append(lines, fmt.Sprintf("  %v %g", sortedLabels(s.Metric), s.Value))
	}
	t.Logf("%s:\n%s", q, strings.Join(lines, "\n"))
	return got
}

func sortedLabels(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+strconv.Quote(m[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// nonEmpty accepts an answer with at least one sample, each passing ok.
func nonEmpty(ok func(testenv.Sample) error) func([]testenv.Sample) error {
	return func(s []testenv.Sample) error {
		if len(s) == 0 {
			return fmt.Errorf("no samples yet")
		}
		for _, x := range s {
			if ok != nil {
				if err := ok(x); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

func positive(x testenv.Sample) error {
	if x.Value <= 0 {
		return fmt.Errorf("%v is %g, want > 0", x.Metric, x.Value)
	}
	return nil
}

// TestNodeHelmInstall installs the chart with only the receiver and a
// cluster label set: the agent's Pod is scheduled onto the real node,
// started by containerd from the imported image, Ready through its own
// probes, and within two snapshot intervals the receiver has the cluster it
// runs in: its own Pod Running, the node, and requests by node.
func TestNodeHelmInstall(t *testing.T) {
	n := sharedNode(t)
	started := time.Now()
	prom, url := nodeReceiver(t, n, "")
	const ns, cluster = "ksp-helm", "node-helm"
	pod := installChart(t, n, "ksp", ns, fmt.Sprintf("remoteWrite:\n  - url: %s/api/v1/write\nexternalLabels:\n  cluster: %s\n", url, cluster))
	ready := time.Now()

	within := 2 * snapshotInterval
	queryLog(t, prom, within, fmt.Sprintf(`kube_pod_status_phase{cluster=%q,namespace=%q,pod=%q,phase="Running"} == 1`, cluster, ns, pod), nonEmpty(nil))
	queryLog(t, prom, within, fmt.Sprintf(`kube_node_info{cluster=%q,node=%q}`, cluster, testenv.NodeName), nonEmpty(nil))
	queryLog(t, prom, within, fmt.Sprintf(`sum(kube_pod_container_resource_requests{cluster=%q}) by (node, resource)`, cluster),
		nonEmpty(func(s testenv.Sample) error {
			if s.Metric["node"] != testenv.NodeName {
				return fmt.Errorf("requests on node %q, want %s", s.Metric["node"], testenv.NodeName)
			}
			return positive(s)
		}))
	t.Logf("series at the receiver %s after Ready; test took %s", time.Since(ready).Round(100*time.Millisecond), time.Since(started).Round(100*time.Millisecond))
}

// TestNodeKubeletDirect installs the chart with its kubelet value on
// (direct mode: the agent's token, get on nodes/metrics, the kubelet's
// serving certificate verified with the service account's ca.crt) and asks
// the receiver the dashboard's node-usage queries, answered from the real
// kubelet's cAdvisor: the root container id="/", the root device's
// filesystem, and the agent Pod's own container. The label sets are those
// a real Prometheus stores when it scrapes the same kubelet the way
// kube-prometheus-stack does.
func TestNodeKubeletDirect(t *testing.T) {
	n := sharedNode(t)
	started := time.Now()
	prom, url := nodeReceiver(t, n, "")
	scraper, _ := nodeReceiver(t, n, fmt.Sprintf(`global:
  scrape_interval: 15s
scrape_configs:
  - job_name: kubelet
    honor_labels: true
    scheme: https
    tls_config: {ca_file: %s}
    authorization: {credentials: %s}
    metrics_path: /metrics/cadvisor
    static_configs:
      - targets: ["%s:%d"]
        labels: {endpoint: https-metrics, namespace: kube-system, service: kube-prometheus-stack-kubelet, node: %s}
    relabel_configs:
      - source_labels: [__metrics_path__]
        target_label: metrics_path
`, n.CAFile, n.CP.Token, testenv.NodeIP, testenv.KubeletPort, testenv.NodeName))
	const ns, cluster = "ksp-kubelet", "node-kubelet"
	pod := installChart(t, n, "ksp-kubelet", ns, fmt.Sprintf(`remoteWrite:
  - url: %s/api/v1/write
externalLabels:
  cluster: %s
kubelet:
  enabled: true
`, url, cluster))

	// A rate over [2m] needs two reads of the kubelet: one interval after
	// the first, which comes with the first snapshot.
	within := 3 * snapshotInterval
	onNode := func(s testenv.Sample) error {
		if s.Metric["node"] != testenv.NodeName {
			return fmt.Errorf("node %q, want %s", s.Metric["node"], testenv.NodeName)
		}
		return positive(s)
	}
	c := strconv.Quote(cluster)
	for _, q := range []string{
		`sum(rate(container_cpu_usage_seconds_total{cluster=` + c + `,id="/"}[2m])) by (node)`,
		`sum(container_memory_working_set_bytes{cluster=` + c + `,id="/"}) by (node)`,
		`sum(container_fs_usage_bytes{cluster=` + c + `,device=~"^/dev/.*$",id="/"}) by (node)`,
	} {
		queryLog(t, prom, within, q, nonEmpty(onNode))
	}
	queryLog(t, prom, within, `container_fs_limit_bytes{cluster=`+c+`}`, nonEmpty(positive))
	own := fmt.Sprintf(`cluster=%s,namespace=%q,pod=%q,container!=""`, c, ns, pod)
	for _, q := range []string{
		`sum(rate(container_cpu_usage_seconds_total{` + own + `}[2m])) by (pod, container)`,
		`sum(container_memory_working_set_bytes{` + own + `}) by (pod, container)`,
	} {
		queryLog(t, prom, within, q, nonEmpty(func(s testenv.Sample) error {
			if s.Metric["container"] != "kube-state-push" {
				return fmt.Errorf("container %q, want kube-state-push", s.Metric["container"])
			}
			return positive(s)
		}))
	}

	// The same label sets as the kube-prometheus-stack scrape, for the node
	// total and the agent's own container (other Pods come and go).
	q := fmt.Sprintf(`container_memory_working_set_bytes{node=%q,id="/"} or container_memory_working_set_bytes{namespace=%q,pod=%q,container="kube-state-push"}`,
		testenv.NodeName, ns, pod)
	// The root and the agent's container.
	got := requireSameLabelSets(t, within, q, prom, scraper, 2)
	t.Logf("label sets as Prometheus scrapes them and the agent pushes them:\n%s", strings.Join(got, "\n"))
	t.Logf("test took %s", time.Since(started).Round(100*time.Millisecond))
}

// TestNodeHelmUpgrade changes the chart's remoteWrite with helm upgrade:
// the configuration Secret's checksum rolls the Pod, the new receiver gets
// the series from the new Pod, and the old receiver the old Pod's final
// snapshot, taken as it stops.
func TestNodeHelmUpgrade(t *testing.T) {
	n := sharedNode(t)
	started := time.Now()
	c, err := n.Client()
	require.NoError(t, err)
	first, firstURL := nodeReceiver(t, n, "")
	second, secondURL := nodeReceiver(t, n, "")
	const ns, cluster, release = "ksp-upgrade", "node-upgrade", "ksp-upgrade"
	values := func(url string) string {
		return fmt.Sprintf("remoteWrite:\n  - url: %s/api/v1/write\nexternalLabels:\n  cluster: %s\n", url, cluster)
	}
	old := installChart(t, n, release, ns, values(firstURL))
	within := 2 * snapshotInterval
	phase := func(pod string) string {
		return fmt.Sprintf(`kube_pod_status_phase{cluster=%q,namespace=%q,pod=%q,phase="Running"} == 1`, cluster, ns, pod)
	}
	queryLog(t, first, within, phase(old), nonEmpty(nil))

	f := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(f, []byte(values(secondURL)), 0o600))
	upgraded := time.Now()
	nodeHelm(t, n, "upgrade", release, chartDir, "--namespace", ns, "--values", f)
	var rolled string
	eventually(t, 3*time.Minute, "a new Ready Pod", func() error {
		p := waitPodReady(t, c, n, ns, "app.kubernetes.io/instance="+release, time.Minute)
		if p.Name == old {
			return fmt.Errorf("still the old Pod %s", old)
		}
		rolled = p.Name
		return nil
	})
	t.Logf("helm upgrade: Pod %s replaced by %s, Ready after %s", old, rolled, time.Since(upgraded).Round(100*time.Millisecond))
	queryLog(t, second, within, phase(rolled), nonEmpty(nil))

	// The old Pod, stopped once the new one is Ready (a rolling update:
	// the buffer is an emptyDir, which goes with the Pod), takes a final
	// snapshot and delivers what it holds to its receiver, the old one,
	// before it exits, as docs/delivery.md says of a stop.
	p, err := c.CoreV1().Pods(ns).Get(t.Context(), rolled, metav1.GetOptions{})
	require.NoError(t, err)
	var newReady time.Time
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			newReady = cond.LastTransitionTime.Time
		}
	}
	require.False(t, newReady.IsZero(), "the new Pod's Ready condition")
	final := queryLog(t, first, 10*time.Second, fmt.Sprintf(`timestamp(kube_node_info{cluster=%q,node=%q})`, cluster, testenv.NodeName),
		nonEmpty(func(s testenv.Sample) error {
			if s.Value < float64(newReady.Unix()) {
				return fmt.Errorf("the old receiver's newest sample at %.3f, before the new Pod was Ready at %d", s.Value, newReady.Unix())
			}
			return nil
		}))
	t.Logf("the old Pod's final snapshot at %s reached the old receiver (new Pod Ready at %s)",
		time.UnixMilli(int64(final[0].Value*1000)).UTC().Format(time.StampMilli), newReady.UTC().Format(time.Stamp))
	t.Logf("test took %s", time.Since(started).Round(100*time.Millisecond))
}
