package agent

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
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
	// enc encodes each batch into body, as a shard's 1.0 encoder does.
	enc  encode.V1Encoder
	body []byte
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
	a.body = a.enc.Encode(a.body, a.batch)
	a.samples += len(a.batch)
	a.bytes += len(a.body)
	clear(a.batch)
	a.batch = a.batch[:0]
}

// discard is an appender that drops everything.
type discard struct{}

// Flush implements appender: nothing to send.
func (discard) Flush() {}

func (discard) Append(_ context.Context, items []queue.Item) int { return len(items) }

// benchPod and benchNode are the benchmarks' realistic objects.
var (
	benchPod  = testenv.BenchPod
	benchNode = testenv.BenchNode
)

// benchMap returns a synced series map of n objects of the resource.
func benchMap(tb testing.TB, m *metrics, resource string, n int, obj func(int) any) *seriesMap {
	tb.Helper()
	return benchMapWith(tb, m, resource, watch.RenderOptions{}, n, obj)
}

// benchMapWith is benchMap rendering with opts.
func benchMapWith(tb testing.TB, m *metrics, resource string, opts watch.RenderOptions, n int, obj func(int) any) *seriesMap {
	tb.Helper()
	r, ok := watch.Lookup(resource)
	require.True(tb, ok)
	sm := newSeriesMap(resource, r.NewRenderer(opts), slog.New(slog.DiscardHandler), m.forResource(resource))
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

// BenchmarkSeriesLabelsFromObject reports what series_labels_from_object
// {pods: [app, team]} costs a pod series: in the series map and on the
// wire (its TimeSeries in a 1.0 request, before compression), against the
// same pods without it. Exposition trailers are counted apart: the text
// layouts are learnt once per process, by the first configuration.
func BenchmarkSeriesLabelsFromObject(b *testing.B) {
	const n = 2_000
	measure := func(opts watch.RenderOptions) (mapBytes, trailers, wireBytes, snappyBytes, series int) {
		m := newMetrics(prometheus.NewRegistry())
		sm := benchMapWith(b, m, "pods", opts, n, func(i int) any { return benchPod(i) })
		mapBytes, series = seriesBytes(sm)
		sm.mu.Lock()
		defer sm.mu.Unlock()
		var samples []encode.Sample
		for _, set := range sm.objects {
			for i := range set.Refs {
				trailers += len(set.Trailer(i))
				samples = append(samples, encode.Sample{Labels: set.Labels(i), Value: set.Refs[i].Value, Timestamp: 1_700_000_000_000})
				wireBytes += encode.SeriesSize(&samples[len(samples)-1])
			}
		}
		// Compressed as the default batches are: 10,000 series a request.
		for len(samples) > 0 {
			k := min(len(samples), 10_000)
			raw := encode.AppendWriteRequest(nil, samples[:k])
			snappyBytes += len(encode.Compress(make([]byte, encode.MaxCompressedLen(len(raw))), raw))
			samples = samples[k:]
		}
		return mapBytes - trailers, trailers, wireBytes, snappyBytes, series
	}
	opts := watch.RenderOptions{Families: watch.FamilyOptions{SeriesLabels: []string{"app", "team"}}}
	var withMap, withTrailers, withWire, withSnappy, withSeries int
	for b.Loop() {
		withMap, withTrailers, withWire, withSnappy, withSeries = measure(opts)
	}
	baseMap, _, baseWire, baseSnappy, baseSeries := measure(watch.RenderOptions{})
	require.Equal(b, baseSeries, withSeries, "no extra series")
	b.ReportMetric(float64(withSeries)/n, "series/pod")
	b.ReportMetric(float64(withMap-baseMap)/float64(withSeries), "map-bytes/series")
	b.ReportMetric(float64(withWire-baseWire)/float64(withSeries), "wire-bytes/series")
	b.ReportMetric(float64(baseMap)/float64(withSeries), "map-bytes-without/series")
	b.ReportMetric(float64(baseWire)/float64(withSeries), "wire-bytes-without/series")
	b.ReportMetric(float64(withTrailers)/float64(withSeries), "trailer-bytes/series")
	b.ReportMetric(float64(withSnappy-baseSnappy)/float64(withSeries), "snappy-bytes/series")
	b.ReportMetric(float64(baseSnappy)/float64(withSeries), "snappy-bytes-without/series")
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
