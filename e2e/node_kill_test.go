package e2e

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// TestNodeKilledDuringOutage installs the chart with its persistent values
// (persistence.enabled: the disk buffer on a claim, bound here to a
// hostPath volume the test makes, as the one-node cluster has no
// provisioner), stops the receiver, lets the agent buffer a few snapshots,
// and kills its container with SIGKILL through containerd. The kubelet
// starts it again in the same Pod; once the receiver is back, every
// snapshot the agent took before the kill is at the receiver.
func TestNodeKilledDuringOutage(t *testing.T) {
	n := sharedNode(t)
	started := time.Now()
	c, err := n.Client()
	require.NoError(t, err)
	prom, url := nodeReceiver(t, n, "")
	const ns, cluster, release = "ksp-kill", "node-kill", "ksp-kill"
	const class = "ksp-kill-hostpath"
	// A short interval keeps the test short and buffers several snapshots.
	const interval = 5 * time.Second

	// The claim's volume: a folder of the agent's user, which hostPath
	// volumes keep (fsGroup applies to none).
	dir := filepath.Join(t.TempDir(), "buffer")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chown(dir, 65532, 65532))
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: release + "-buffer"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir},
			},
		},
	}
	_, err = c.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})

	podName := installChart(t, n, release, ns, fmt.Sprintf(`remoteWrite:
  - url: %s/api/v1/write
externalLabels:
  cluster: %s
persistence:
  enabled: true
  storageClassName: %s
extraConfig:
  snapshot_interval: %s
`, url, cluster, class, interval))
	steady := fmt.Sprintf(`kube_node_info{cluster=%q,node=%q}`, cluster, testenv.NodeName)
	queryLog(t, prom, 4*interval, steady, nonEmpty(nil))

	pod, err := c.CoreV1().Pods(ns).Get(t.Context(), podName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, pod.Status.ContainerStatuses, 1)
	containerID := pod.Status.ContainerStatuses[0].ContainerID
	restarts := pod.Status.ContainerStatuses[0].RestartCount
	agent := podMetrics(n, pod.Status.PodIP)

	// The outage: every snapshot the agent takes from now on is buffered.
	// Its own /metrics, read from inside the node, gives each snapshot's
	// timestamp.
	prom.Stop()
	down := time.Now()
	taken := map[int64]bool{}
	var buffered float64
	for time.Since(down) < 4*interval+interval/2 {
		m, err := agent(t.Context())
		require.NoError(t, err)
		taken[int64(m["kube_state_push_snapshot_last_timestamp_seconds"]*1000)] = true
		buffered = m["kube_state_push_remote_buffer_bytes"]
		time.Sleep(250 * time.Millisecond)
	}
	m, err := agent(t.Context())
	require.NoError(t, err)
	taken[int64(m["kube_state_push_snapshot_last_timestamp_seconds"]*1000)] = true
	killed := time.Now()
	require.NoError(t, n.KillContainer(t.Context(), containerID))
	var during []int64
	for ts := range taken {
		if ts >= down.UnixMilli() {
			during = append(during, ts)
		}
	}
	slices.Sort(during)
	require.GreaterOrEqual(t, len(during), 4, "snapshots taken during the outage")

	// The same Pod, its container started again.
	eventually(t, 2*time.Minute, "the container restarted in the same Pod and Ready", func() error {
		p, err := c.CoreV1().Pods(ns).Get(t.Context(), podName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		st := p.Status.ContainerStatuses
		if len(st) != 1 || st[0].RestartCount <= restarts || !st[0].Ready {
			return fmt.Errorf("container statuses %v", st)
		}
		if st[0].LastTerminationState.Terminated == nil || st[0].LastTerminationState.Terminated.ExitCode != 137 {
			return fmt.Errorf("last termination %v, want exit code 137 (SIGKILL)", st[0].LastTerminationState.Terminated)
		}
		return nil
	})
	restarted := time.Now()

	require.NoError(t, prom.Restart(t.Context()))
	back := time.Now()
	var missing []int64
	var stored []int64
	eventually(t, time.Minute, "every snapshot taken before the kill at the receiver", func() error {
		raw, err := prom.RawSamples(t.Context(), steady, 10*time.Minute)
		if err != nil {
			return err
		}
		if len(raw) != 1 {
			return fmt.Errorf("%d series for %s, want 1", len(raw), steady)
		}
		stored = raw[0].Timestamps
		missing = missing[:0]
		for _, ts := range slices.Sorted(maps.Keys(taken)) {
			if _, ok := slices.BinarySearch(stored, ts); !ok {
				missing = append(missing, ts)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d of %d snapshots taken before the kill missing: %v", len(missing), len(taken), missing)
		}
		return nil
	})
	delivered := time.Since(back)

	// The series is whole: one sample per interval up to the kill, then
	// the gap while the container was down.
	var gaps []string
	for i := 1; i < len(stored); i++ {
		if d := time.Duration(stored[i]-stored[i-1]) * time.Millisecond; d > interval+interval/2 {
			gaps = append(gaps, fmt.Sprintf("%s after %s", d, time.UnixMilli(stored[i-1]).UTC().Format(time.TimeOnly)))
		}
	}
	t.Logf("receiver down %s: %d snapshots taken (%s .. %s), %.0f bytes in the disk buffer; SIGKILL, container Ready again after %s; receiver back, all delivered after %s; gaps in %s: %v; test took %s",
		killed.Sub(down).Round(100*time.Millisecond), len(during),
		time.UnixMilli(during[0]).UTC().Format(time.TimeOnly), time.UnixMilli(during[len(during)-1]).UTC().Format(time.TimeOnly),
		buffered, restarted.Sub(killed).Round(100*time.Millisecond), delivered.Round(100*time.Millisecond),
		steady, gaps, time.Since(started).Round(100*time.Millisecond))
	require.LessOrEqual(t, len(gaps), 1, "at most the gap of the restart")
	// The buffer was on the claim's volume, not in the container.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "the disk buffer's folder on the hostPath volume")
}

// podMetrics returns a reader of the agent's /metrics on the Pod's address
// inside the node: each family's value by name, summed over its series.
func podMetrics(n *testenv.Node, podIP string) func(context.Context) (map[string]float64, error) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: n.NS.DialContext}}
	url := "http://" + net.JoinHostPort(podIP, "8080") + "/metrics"
	return func(ctx context.Context) (map[string]float64, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		out := map[string]float64{}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			f := strings.Fields(line)
			if len(f) < 2 || strings.HasPrefix(line, "#") {
				continue
			}
			name, _, _ := strings.Cut(f[0], "{")
			if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
				out[name] += v
			}
		}
		return out, sc.Err()
	}
}
