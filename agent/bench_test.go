package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue"
	"github.com/kube-state-push/kube-state-push/watch"
)

// benchBatch is the queue's default max_samples_per_send.
var benchBatch = queue.DefaultQueueConfig.MaxSamplesPerSend

// encodingAppender encodes and compresses what it is given in batches,
// into reused buffers, as a queue shard does before sending.
type encodingAppender struct {
	// batch collects samples until a batch is full.
	batch []encode.Sample
	// raw and compressed are the reused request buffers.
	raw, compressed []byte
	// samples and bytes count what was encoded, compressed bytes.
	samples, bytes int
}

func newEncodingAppender() *encodingAppender {
	return &encodingAppender{batch: make([]encode.Sample, 0, benchBatch)}
}

// Flush implements appender: nothing to send.
func (*encodingAppender) Flush() {}

func (a *encodingAppender) Append(_ context.Context, items []queue.Item) int {
	for i := range items {
		a.batch = append(a.batch, items[i].Sample)
		if len(a.batch) == benchBatch {
			a.send()
		}
	}
	return len(items)
}

// send encodes the pending batch; a shard does so on its batch deadline.
func (a *encodingAppender) send() {
	if len(a.batch) == 0 {
		return
	}
	a.raw = encode.AppendWriteRequest(a.raw[:0], a.batch)
	a.compressed = encode.Compress(a.compressed, a.raw)
	a.samples += len(a.batch)
	a.bytes += len(a.compressed)
	clear(a.batch)
	a.batch = a.batch[:0]
}

// discard is an appender that drops everything.
type discard struct{}

// Flush implements appender: nothing to send.
func (discard) Flush() {}

func (discard) Append(_ context.Context, items []queue.Item) int { return len(items) }

// benchPod is a realistic Deployment pod: two containers with requests and
// limits, running and ready, with conditions, an owner and IPs. Names and
// UIDs are unique per i, spread over 100 namespaces and 1,000 nodes.
func benchPod(i int) *v1.Pod {
	ns := fmt.Sprintf("team-%02d", i%100)
	app := fmt.Sprintf("service-%03d", i/100%1000)
	hash := fmt.Sprintf("%010x", uint64(i)*2654435761%(1<<40))
	name := fmt.Sprintf("%s-%s-%05x", app, hash[:10], i)
	uid := fmt.Sprintf("3f2b8c1e-%04x-4e7b-8c6a-%012x", i%0xffff, i)
	created := metav1.NewTime(time.Unix(1_699_000_000+int64(i), 0))
	started := metav1.NewTime(created.Add(3 * time.Second))
	ip := fmt.Sprintf("10.%d.%d.%d", 64+i/65536%64, i/256%256, i%256)
	node := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i%1000/250, i%1000)
	ctr := func(name, image, cpu, mem, cpuLim, memLim string) v1.Container {
		return v1.Container{
			Name:  name,
			Image: image,
			Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
			Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuLim), v1.ResourceMemory: resource.MustParse(memLim)},
			},
		}
	}
	status := func(name, image, id string, restarts int32) v1.ContainerStatus {
		return v1.ContainerStatus{
			Name:         name,
			Image:        image,
			ImageID:      image + "@sha256:" + fmt.Sprintf("%064x", len(name)),
			ContainerID:  "containerd://" + fmt.Sprintf("%064x", id),
			Ready:        true,
			Started:      new(true),
			RestartCount: restarts,
			State:        v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}},
		}
	}
	appImage := "123456789012.dkr.ecr.eu-west-1.amazonaws.com/" + app + ":v1.42.7"
	proxyImage := "docker.io/istio/proxyv2:1.22.3"
	cond := func(t v1.PodConditionType) v1.PodCondition {
		return v1.PodCondition{Type: t, Status: v1.ConditionTrue, LastTransitionTime: started}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              name,
			UID:               types.UID(uid),
			CreationTimestamp: created,
			Labels:            map[string]string{"app": app, "pod-template-hash": hash[:10], "team": ns},
			Annotations:       map[string]string{"prometheus.io/scrape": "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + hash[:10],
				UID: types.UID("rs-" + uid), Controller: new(true),
			}},
		},
		Spec: v1.PodSpec{
			NodeName:           node,
			ServiceAccountName: app,
			SchedulerName:      "default-scheduler",
			RestartPolicy:      v1.RestartPolicyAlways,
			PriorityClassName:  "standard",
			Containers: []v1.Container{
				ctr(app, appImage, "250m", "256Mi", "1", "512Mi"),
				ctr("istio-proxy", proxyImage, "100m", "128Mi", "500m", "256Mi"),
			},
			Tolerations: []v1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
			},
		},
		Status: v1.PodStatus{
			Phase:     v1.PodRunning,
			QOSClass:  v1.PodQOSBurstable,
			HostIP:    fmt.Sprintf("10.0.%d.%d", i%1000/250, i%250+1),
			PodIP:     ip,
			PodIPs:    []v1.PodIP{{IP: ip}},
			StartTime: &created,
			Conditions: []v1.PodCondition{
				cond(v1.PodScheduled), cond(v1.PodInitialized), cond(v1.ContainersReady), cond(v1.PodReady),
			},
			ContainerStatuses: []v1.ContainerStatus{
				status(app, appImage, uid+"a", int32(i%3)),
				status("istio-proxy", proxyImage, uid+"b", 0),
			},
		},
	}
}

// benchNode is a realistic, ready cloud node.
func benchNode(i int) *v1.Node {
	name := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i/250, i)
	res := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("8"),
		v1.ResourceMemory:           resource.MustParse("32Gi"),
		v1.ResourcePods:             resource.MustParse("110"),
		v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	cond := func(t v1.NodeConditionType, s v1.ConditionStatus) v1.NodeCondition {
		return v1.NodeCondition{Type: t, Status: s}
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			UID:               types.UID(fmt.Sprintf("9a1c0d2e-0000-4000-8000-%012x", i)),
			CreationTimestamp: metav1.NewTime(time.Unix(1_690_000_000+int64(i), 0)),
			Labels: map[string]string{
				"kubernetes.io/hostname":           name,
				"node.kubernetes.io/instance-type": "m6i.2xlarge",
				"topology.kubernetes.io/zone":      fmt.Sprintf("eu-west-1%c", 'a'+i%3),
			},
		},
		Spec: v1.NodeSpec{
			PodCIDR:    fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256),
			PodCIDRs:   []string{fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256)},
			ProviderID: fmt.Sprintf("aws:///eu-west-1a/i-%017x", i),
		},
		Status: v1.NodeStatus{
			Capacity:    res,
			Allocatable: res,
			Conditions: []v1.NodeCondition{
				cond(v1.NodeReady, v1.ConditionTrue),
				cond(v1.NodeMemoryPressure, v1.ConditionFalse),
				cond(v1.NodeDiskPressure, v1.ConditionFalse),
				cond(v1.NodePIDPressure, v1.ConditionFalse),
			},
			Addresses: []v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)},
				{Type: v1.NodeHostName, Address: name},
			},
			NodeInfo: v1.NodeSystemInfo{
				KernelVersion:           "6.1.109-118.189.amzn2023.x86_64",
				OSImage:                 "Amazon Linux 2023.5.20240916",
				ContainerRuntimeVersion: "containerd://1.7.20",
				KubeletVersion:          "v1.31.0-eks-a737599",
				SystemUUID:              fmt.Sprintf("ec2%05x-0000-0000-0000-000000000000", i),
			},
		},
	}
}

// benchMap returns a synced series map of n objects of the resource.
func benchMap(tb testing.TB, m *metrics, resource string, n int, obj func(int) any) *seriesMap {
	tb.Helper()
	r, ok := watch.Lookup(resource)
	require.True(tb, ok)
	sm := newSeriesMap(resource, r.NewRenderer(watch.RenderOptions{}), slog.New(slog.DiscardHandler), m.forResource(resource))
	list := make([]any, n)
	for i := range list {
		list[i] = obj(i)
	}
	require.NoError(tb, sm.Replace(list, "1"))
	require.Zero(tb, testutil.ToFloat64(m.renderErrors.WithLabelValues(resource)), "no render errors")
	return sm
}

// benchSnapshotter is the cluster of the benchmarks: pods and their nodes.
func benchSnapshotter(tb testing.TB, pods, nodes int, e appender) *snapshotter {
	tb.Helper()
	m := newMetrics(prometheus.NewRegistry())
	return &snapshotter{
		maps: []*seriesMap{
			benchMap(tb, m, "pods", pods, func(i int) any { return benchPod(i) }),
			benchMap(tb, m, "nodes", nodes, func(i int) any { return benchNode(i) }),
		},
		sinks:   syncSinks(e),
		metrics: m,
	}
}

// reportNsPerSample reports the benchmark's time per op over samples as
// ns/sample.
func reportNsPerSample(b *testing.B, samples int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(samples), "ns/sample")
}

// BenchmarkSnapshot10kPods is one snapshot tick of 10,000 pods and 1,000
// nodes, encoded and compressed as the queue would.
func BenchmarkSnapshot10kPods(b *testing.B) {
	enc := newEncodingAppender()
	s := benchSnapshotter(b, 10_000, 1_000, enc)
	ts := time.Unix(1_700_000_000, 0)
	samples := s.tick(ts) // warm the reused buffers
	enc.send()
	enc.bytes = 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.tick(ts)
		enc.send()
	}
	reportNsPerSample(b, samples)
	b.ReportMetric(float64(samples), "samples/op")
	b.ReportMetric(float64(enc.bytes)/float64(b.N), "compressed-bytes/op")
}

// BenchmarkSnapshotOnly is the snapshot tick alone, queued nowhere.
func BenchmarkSnapshotOnly(b *testing.B) {
	s := benchSnapshotter(b, 10_000, 1_000, discard{})
	ts := time.Unix(1_700_000_000, 0)
	samples := s.tick(ts)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.tick(ts)
	}
	reportNsPerSample(b, samples)
	b.ReportMetric(float64(samples), "samples/op")
}

// BenchmarkRenderPod is the cost of one pod event: rendering the pod.
func BenchmarkRenderPod(b *testing.B) {
	r, _ := watch.Lookup("pods")
	rr := r.NewRenderer(watch.RenderOptions{})
	p := benchPod(42)
	_, set, err := rr.Render(p)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		_, set, _ = rr.Render(p)
	}
	b.ReportMetric(float64(set.Len()), "series/op")
}

// seriesBytes is the memory a series map holds for its sets' data: label
// bytes and refs (set headers and the map itself not counted).
func seriesBytes(sm *seriesMap) (bytes, series int) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	for _, set := range sm.objects {
		bytes += len(set.Buf) + len(set.Refs)*int(unsafe.Sizeof(encode.Ref{}))
		series += set.Len()
	}
	return bytes, series
}

// BenchmarkSeriesMapMemory reports the series map's memory per pod.
func BenchmarkSeriesMapMemory(b *testing.B) {
	const n = 10_000
	m := newMetrics(prometheus.NewRegistry())
	sm := benchMap(b, m, "pods", n, func(i int) any { return benchPod(i) })
	var bytes, series int
	for b.Loop() {
		bytes, series = seriesBytes(sm)
	}
	b.ReportMetric(float64(bytes)/n, "bytes/pod")
	b.ReportMetric(float64(series)/n, "series/pod")
	b.ReportMetric(float64(bytes)/float64(series), "bytes/series")
	b.ReportMetric(float64(textBytes(b, sm))/n, "ksm-text-bytes/pod")
}

// textBytes is the size of the same series as exposition text lines
// (`name{label="value",...} value` and a newline), which is what
// kube-state-metrics keeps per object (metrics_store.go): the yardstick for
// the series map's own bytes.
func textBytes(tb testing.TB, sm *seriesMap) int {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	n := 0
	for _, set := range sm.objects {
		for i := range set.Refs {
			ls, err := encode.DecodeLabels(set.Labels(i))
			if err != nil {
				tb.Fatal(err)
			}
			var b strings.Builder
			first := true
			for _, l := range ls {
				if l.Name == encode.MetricName {
					b.WriteString(l.Value)
					b.WriteByte('{')
					continue
				}
				if !first {
					b.WriteByte(',')
				}
				first = false
				b.WriteString(l.Name + "=" + strconv.Quote(l.Value))
			}
			b.WriteString("} " + strconv.FormatFloat(set.Refs[i].Value, 'g', -1, 64) + "\n")
			n += b.Len()
		}
	}
	return n
}

func TestSnapshotAllocsPerSeries(t *testing.T) {
	enc := newEncodingAppender()
	s := benchSnapshotter(t, 1_000, 100, enc)
	ts := time.Unix(1_700_000_000, 0)
	samples := s.tick(ts) // warm-up: the reused buffers grow here
	enc.send()
	require.Greater(t, samples, 30_000, "enough series that a per-series allocation shows")

	allocs := testing.AllocsPerRun(10, func() {
		s.tick(ts)
		enc.send()
	})
	t.Logf("%.0f allocations per tick of %d samples", allocs, samples)
	require.Less(t, allocs, 50.0, "a tick allocates a small constant, not per series")
}
