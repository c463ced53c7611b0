package queue

import (
	"context"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/kube-state-push/kube-state-push/encode"
)

// keepingAppender keeps what it is given, decoded.
type keepingAppender struct {
	// items are the items of every Append, in order.
	items []Item
}

// flush implements appender: nothing to send.
func (*keepingAppender) flush() {}

func (a *keepingAppender) appendItems(_ context.Context, items []Item) int {
	a.items = append(a.items, items...)
	return len(items)
}

// series returns the recorded series as `name{a="x",b="y"} value`, in order.
func (a *keepingAppender) series(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, it := range a.items {
		out = append(out, validSeriesString(t, it.Labels)+" "+strconv.FormatFloat(it.Value, 'g', -1, 64))
	}
	return out
}

// validSeriesString formats encoded labels as seriesString does, requiring
// them to be a valid Remote-Write label set: names sorted and unique, values
// not empty.
func validSeriesString(t *testing.T, b []byte) string {
	t.Helper()
	ls, err := encode.DecodeLabels(b)
	require.NoError(t, err)
	for i, l := range ls {
		require.NotEmpty(t, l.Value, "label %s", l.Name)
		if i > 0 {
			require.Less(t, ls[i-1].Name, l.Name, "sorted and unique")
		}
	}
	return seriesString(t, b)
}

// testSeries renders series as the snapshotter hands them to an endpoint,
// each given as name, then label pairs.
func testSeries(ts int64, series ...[]string) []Item {
	var set encode.SeriesSet
	var b encode.LabelsBuilder
	for i, s := range series {
		b.Reset()
		b.Add(encode.MetricName, s[0])
		for j := 1; j+1 < len(s); j += 2 {
			b.Add(s[j], s[j+1])
		}
		b.AppendTo(&set, float64(i+1))
	}
	items := make([]Item, set.Len())
	for i, r := range set.Refs {
		items[i] = Item{Sample: encode.Sample{Labels: set.Labels(i), Value: r.Value, Timestamp: ts}, Hash: r.Hash}
	}
	return items
}

// testRelabeler loads write_relabel_configs from YAML, validated as the
// configuration loader does, in front of next.
func testRelabeler(t testing.TB, next appender, rules string) *relabeler {
	t.Helper()
	cfg := DefaultConfig
	require.NoError(t, yaml.Unmarshal([]byte("url: http://receiver/api/v1/write\nwrite_relabel_configs:\n"+indent(rules, "  ")), &cfg))
	cfg.Name = "rules"
	require.NoError(t, cfg.Validate())
	return newRelabeler(next, cfg.WriteRelabelConfigs, slog.New(slog.DiscardHandler))
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// hashOf is the label hash the renderer gives a label set.
func hashOf(t *testing.T, b []byte) uint64 {
	t.Helper()
	ls, err := encode.DecodeLabels(b)
	require.NoError(t, err)
	var lb encode.LabelsBuilder
	for _, l := range ls {
		lb.Add(l.Name, l.Value)
	}
	var set encode.SeriesSet
	lb.AppendTo(&set, 0)
	return set.Refs[0].Hash
}

func TestRelabelRules(t *testing.T) {
	in := func() []Item {
		return testSeries(1000,
			[]string{"kube_pod_info", "namespace", "default", "pod", "web-1", "uid", "u1", "node", "n1"},
			[]string{"kube_pod_container_info", "namespace", "default", "pod", "web-1", "container", "app", "uid", "u1"},
			[]string{"kube_node_info", "node", "n1", "kernel_version", "6.1", "k8s_version", "1.31"},
		)
	}
	for _, tc := range []struct {
		name, rules string
		want        []string
	}{{
		name:  "drop a family",
		rules: "- source_labels: [__name__]\n  regex: kube_pod_container_.*\n  action: drop",
		want: []string{
			`kube_pod_info{namespace="default",node="n1",pod="web-1",uid="u1"} 1`,
			`kube_node_info{k8s_version="1.31",kernel_version="6.1",node="n1"} 3`,
		},
	}, {
		name:  "keep only some families",
		rules: "- source_labels: [__name__]\n  regex: kube_node_.*\n  action: keep",
		want:  []string{`kube_node_info{k8s_version="1.31",kernel_version="6.1",node="n1"} 3`},
	}, {
		name:  "labeldrop",
		rules: "- action: labeldrop\n  regex: uid|kernel_version",
		want: []string{
			`kube_pod_info{namespace="default",node="n1",pod="web-1"} 1`,
			`kube_pod_container_info{container="app",namespace="default",pod="web-1"} 2`,
			`kube_node_info{k8s_version="1.31",node="n1"} 3`,
		},
	}, {
		name: "replace renames a label and adds one, kept sorted",
		rules: "- source_labels: [node]\n  target_label: host\n" +
			"- action: labeldrop\n  regex: node|uid\n" +
			"- target_label: aaa\n  replacement: first",
		want: []string{
			`kube_pod_info{aaa="first",host="n1",namespace="default",pod="web-1"} 1`,
			`kube_pod_container_info{aaa="first",container="app",namespace="default",pod="web-1"} 2`,
			`kube_node_info{aaa="first",host="n1",k8s_version="1.31",kernel_version="6.1"} 3`,
		},
	}, {
		name:  "an empty replacement deletes the label",
		rules: "- source_labels: [namespace]\n  regex: default\n  target_label: namespace\n  replacement: ''",
		want: []string{
			`kube_pod_info{node="n1",pod="web-1",uid="u1"} 1`,
			`kube_pod_container_info{container="app",pod="web-1",uid="u1"} 2`,
			`kube_node_info{k8s_version="1.31",kernel_version="6.1",node="n1"} 3`,
		},
	}, {
		name:  "a series left without a name is dropped",
		rules: "- action: labeldrop\n  regex: __name__\n- source_labels: [node]\n  regex: n1\n  target_label: __name__\n  replacement: renamed",
		want: []string{
			`renamed{namespace="default",node="n1",pod="web-1",uid="u1"} 1`,
			`renamed{k8s_version="1.31",kernel_version="6.1",node="n1"} 3`,
		},
	}, {
		name:  "a label name invalid in the legacy scheme drops the series",
		rules: "- action: labelmap\n  regex: k(8s)_version\n  replacement: $1",
		want: []string{
			`kube_pod_info{namespace="default",node="n1",pod="web-1",uid="u1"} 1`,
			`kube_pod_container_info{container="app",namespace="default",pod="web-1",uid="u1"} 2`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &keepingAppender{}
			r := testRelabeler(t, rec, tc.rules)
			n := r.appendItems(context.Background(), in())
			require.Equal(t, len(tc.want), n, "the endpoint's count")
			require.Equal(t, tc.want, rec.series(t))
			for _, it := range rec.items {
				require.Equal(t, hashOf(t, it.Labels), it.Hash, "the hash of the relabeled labels, which shards by them")
				require.EqualValues(t, 1000, it.Timestamp)
			}
		})
	}
}

// A series relabeling leaves as it was is passed on as is: its bytes and
// hash, no copy.
func TestRelabelUnchangedSeries(t *testing.T) {
	rec := &keepingAppender{}
	r := testRelabeler(t, rec, "- source_labels: [__name__]\n  regex: kube_other\n  action: drop")
	in := testSeries(1, []string{"kube_pod_info", "pod", "a"})
	r.appendItems(context.Background(), in)
	require.Len(t, rec.items, 1)
	require.True(t, sameSlice(in[0].Labels, rec.items[0].Labels))
	require.Equal(t, in[0].Hash, rec.items[0].Hash)
}

// The second snapshot of the same series relabels nothing: the cached
// result is reused, also for a new set of the same labels (an object
// rendered again), which the cache then follows.
func TestRelabelCache(t *testing.T) {
	ctx := context.Background()
	rec := &keepingAppender{}
	r := testRelabeler(t, rec, "- action: labeldrop\n  regex: uid")
	first := testSeries(1, []string{"kube_pod_info", "pod", "a", "uid", "1"}, []string{"kube_pod_info", "pod", "b", "uid", "2"})
	r.appendItems(ctx, first)
	require.Len(t, r.cache, 2)
	out1 := slices.Clone(rec.items)

	// The same label bytes: the same relabeled bytes, not a new copy.
	rec.items = nil
	second := slices.Clone(first)
	for i := range second {
		second[i].Timestamp = 2
	}
	r.appendItems(ctx, second)
	for i := range out1 {
		require.True(t, sameSlice(out1[i].Labels, rec.items[i].Labels), "series %d: cached", i)
	}

	// Equal labels in another buffer (the object was rendered again).
	rec.items = nil
	third := testSeries(3, []string{"kube_pod_info", "pod", "a", "uid", "1"}, []string{"kube_pod_info", "pod", "b", "uid", "2"})
	r.appendItems(ctx, third)
	for i := range out1 {
		require.True(t, sameSlice(out1[i].Labels, rec.items[i].Labels), "series %d: cached", i)
		require.True(t, sameSlice(r.cache[third[i].Hash].orig, third[i].Labels), "series %d: follows the new set", i)
	}
	require.Equal(t, []string{`kube_pod_info{pod="a"} 1`, `kube_pod_info{pod="b"} 2`}, rec.series(t))

	// A staleness marker of a series is relabeled as the series was.
	rec.items = nil
	stale := testSeries(4, []string{"kube_pod_info", "pod", "b", "uid", "2"})
	stale[0].Value = encode.StaleNaN
	r.appendItems(ctx, stale)
	require.Len(t, rec.items, 1)
	require.True(t, sameSlice(out1[1].Labels, rec.items[0].Labels))
	require.Equal(t, math.Float64bits(encode.StaleNaN), math.Float64bits(rec.items[0].Value))
}

// Series not seen for a few snapshots leave the cache; series seen stay.
func TestRelabelEviction(t *testing.T) {
	ctx := context.Background()
	r := testRelabeler(t, discard{}, "- action: labeldrop\n  regex: uid")
	gone := testSeries(1, []string{"kube_pod_info", "pod", "gone"})[0]
	kept := testSeries(1, []string{"kube_pod_info", "pod", "kept"})[0]
	r.appendItems(ctx, []Item{gone, kept})
	require.Len(t, r.cache, 2)
	for ts := int64(2); ts <= 2*relabelKeepTicks+1; ts++ {
		kept.Timestamp = ts
		r.appendItems(ctx, []Item{kept})
	}
	require.Len(t, r.cache, 1)
	require.Contains(t, r.cache, kept.Hash)
}

// After a spike of series ends, the cache map is rebuilt once fewer than a
// quarter of the peak's entries are left, so its buckets go; the series
// still running keep their cached relabeling through it. Below
// relabelRebuildMin, or while a quarter is left, the map stays.
func TestRelabelCacheRebuild(t *testing.T) {
	ctx := context.Background()
	// spike returns n series pod-0..pod-n-1 at timestamp 1.
	spike := func(n int) []Item {
		series := make([][]string, n)
		for i := range series {
			series[i] = []string{"kube_pod_info", "pod", "pod-" + strconv.Itoa(i), "uid", strconv.Itoa(i)}
		}
		return testSeries(1, series...)
	}
	mapID := func(r *relabeler) uintptr { return reflect.ValueOf(r.cache).Pointer() }
	// run appends the spike, then keeps the first kept series for enough
	// snapshots that the rest are evicted, and returns the map before and
	// after.
	run := func(t *testing.T, r *relabeler, in []Item, kept int) (before, after uintptr) {
		t.Helper()
		r.appendItems(ctx, in)
		require.Len(t, r.cache, len(in))
		before = mapID(r)
		for ts := int64(2); ts <= 2*relabelKeepTicks+1; ts++ {
			for i := range in[:kept] {
				in[i].Timestamp = ts
			}
			r.appendItems(ctx, in[:kept])
		}
		require.Len(t, r.cache, kept)
		return before, mapID(r)
	}

	t.Run("rebuilt after a spike", func(t *testing.T) {
		rec := &keepingAppender{}
		r := testRelabeler(t, rec, "- action: labeldrop\n  regex: uid")
		in := spike(4 * relabelRebuildMin)
		const kept = 10
		r.appendItems(ctx, in[:kept]) // relabeled before the spike
		entries := make([]*relabeled, kept)
		for i := range entries {
			entries[i] = r.cache[in[i].Hash]
		}
		out := slices.Clone(rec.items)

		before, after := run(t, r, in, kept)
		require.NotEqual(t, before, after, "a fresh map")
		require.Equal(t, kept, r.peak, "the peak starts again from the live entries")
		for i, e := range entries {
			require.Same(t, e, r.cache[in[i].Hash], "series %d: its entry moved, not relabeled again", i)
		}

		// After the rebuild the kept series are still served from the
		// cache: the same relabeled bytes as before the spike.
		rec.items = nil
		for i := range in[:kept] {
			in[i].Timestamp = 100
		}
		r.appendItems(ctx, in[:kept])
		require.Len(t, rec.items, kept)
		for i := range out {
			require.True(t, sameSlice(out[i].Labels, rec.items[i].Labels), "series %d: cached", i)
			require.Equal(t, out[i].Hash, rec.items[i].Hash)
		}
		require.Equal(t, `kube_pod_info{pod="pod-0"} 1`, rec.series(t)[0])
	})

	t.Run("kept below the minimum", func(t *testing.T) {
		r := testRelabeler(t, discard{}, "- action: labeldrop\n  regex: uid")
		before, after := run(t, r, spike(relabelRebuildMin-1), 1)
		require.Equal(t, before, after)
	})

	t.Run("kept while a quarter is left", func(t *testing.T) {
		r := testRelabeler(t, discard{}, "- action: labeldrop\n  regex: uid")
		before, after := run(t, r, spike(4*relabelRebuildMin), relabelRebuildMin)
		require.Equal(t, before, after)
		require.Equal(t, 4*relabelRebuildMin, r.peak)
	})
}

// Two series whose hashes collide are each relabeled as themselves.
func TestRelabelHashCollision(t *testing.T) {
	rec := &keepingAppender{}
	r := testRelabeler(t, rec, "- action: labeldrop\n  regex: uid")
	in := testSeries(1, []string{"kube_pod_info", "pod", "a", "uid", "1"}, []string{"kube_pod_info", "pod", "b", "uid", "2"})
	in[1].Hash = in[0].Hash // forced
	for range 3 {
		r.appendItems(context.Background(), in)
	}
	want := []string{`kube_pod_info{pod="a"} 1`, `kube_pod_info{pod="b"} 2`}
	require.Equal(t, slices.Concat(want, want, want), rec.series(t))
}

// A steady-state snapshot through the relabeler allocates nothing: every
// series is relabeled once, then served from the cache.
func TestRelabelSteadyStateAllocs(t *testing.T) {
	ctx := context.Background()
	items := clusterSeries(1_000, 100)
	require.Greater(t, len(items), 30_000, "enough series that a per-series allocation shows")

	r := testRelabeler(t, discard{}, benchRules)
	run := relabelTick(ctx, r, items)
	run() // relabels every series once
	allocs := testing.AllocsPerRun(2*relabelKeepTicks, run)
	t.Logf("%.0f allocations per snapshot of %d series", allocs, len(items))
	require.Zero(t, allocs)
}

// relabelTick returns a function that hands r every item once, in chunks as
// the feed does, each time with the next timestamp.
func relabelTick(ctx context.Context, r *relabeler, items []Item) func() {
	ts := int64(0)
	return func() {
		ts++
		for i := 0; i < len(items); i += chunkSize {
			chunk := items[i:min(i+chunkSize, len(items))]
			for j := range chunk {
				chunk[j].Timestamp = ts
			}
			r.appendItems(ctx, chunk)
		}
	}
}

// benchRules are typical write_relabel_configs: drop some families, drop a
// label, add one.
const benchRules = `
- source_labels: [__name__]
  regex: kube_pod_container_status_last_terminated_.*|kube_node_status_condition
  action: drop
- action: labeldrop
  regex: uid
- target_label: via
  replacement: relabeled
`

// BenchmarkRelabel10kPods is the series of 10k pods and 1k nodes through
// write_relabel_configs, in chunks as the feed hands them over, in the
// steady state.
func BenchmarkRelabel10kPods(b *testing.B) {
	r := testRelabeler(b, discard{}, benchRules)
	items := clusterSeries(10_000, 1_000)
	ctx := context.Background()
	run := relabelTick(ctx, r, items)
	run() // relabels every series once
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		run()
	}
	reportNsPerSample(b, len(items))
	b.ReportMetric(float64(len(items)), "samples/op")
	b.ReportMetric(float64(len(r.cache)), "cached-series")
}

// clusterSeries are series shaped like kube-state-metrics' of the given
// pods and nodes: about 32 a pod, 12 a node.
func clusterSeries(pods, nodes int) []Item {
	var series [][]string
	for i := range pods {
		ns, pod, uid := "ns"+strconv.Itoa(i%50), "pod-"+strconv.Itoa(i), "uid-"+strconv.Itoa(i)
		node := "node-" + strconv.Itoa(i%max(1, nodes))
		series = append(series, []string{"kube_pod_info", "namespace", ns, "pod", pod, "uid", uid, "node", node, "host_ip", "10.0.0.1", "pod_ip", "10.1.0.1"})
		for _, phase := range []string{"Pending", "Running", "Succeeded", "Failed", "Unknown"} {
			series = append(series, []string{"kube_pod_status_phase", "namespace", ns, "pod", pod, "uid", uid, "phase", phase})
		}
		for _, cond := range []string{"true", "false", "unknown"} {
			series = append(series, []string{"kube_pod_status_ready", "namespace", ns, "pod", pod, "uid", uid, "condition", cond})
			series = append(series, []string{"kube_pod_status_scheduled", "namespace", ns, "pod", pod, "uid", uid, "condition", cond})
		}
		for _, reason := range []string{"OOMKilled", "Error", "Completed", "ContainerCannotRun", "DeadlineExceeded", "Evicted"} {
			series = append(series, []string{"kube_pod_container_status_last_terminated_reason", "namespace", ns, "pod", pod, "uid", uid, "container", "app", "reason", reason})
		}
		for _, name := range []string{"kube_pod_container_info", "kube_pod_container_status_restarts_total", "kube_pod_container_status_ready",
			"kube_pod_container_status_running", "kube_pod_container_status_waiting", "kube_pod_container_status_terminated",
			"kube_pod_created", "kube_pod_start_time", "kube_pod_owner", "kube_pod_restart_policy", "kube_pod_labels",
			"kube_pod_annotations", "kube_pod_status_qos_class", "kube_pod_container_resource_requests", "kube_pod_container_resource_limits",
		} {
			series = append(series, []string{name, "namespace", ns, "pod", pod, "uid", uid, "container", "app"})
		}
	}
	for i := range nodes {
		node := "node-" + strconv.Itoa(i)
		series = append(series, []string{"kube_node_info", "node", node, "kernel_version", "6.1.0", "os_image", "Debian"})
		for _, cond := range []string{"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"} {
			for _, status := range []string{"true", "false", "unknown"} {
				series = append(series, []string{"kube_node_status_condition", "node", node, "condition", cond, "status", status})
			}
		}
	}
	return testSeries(1, series...)
}

// seriesString formats encoded labels as `name{a="x",b="y"}`.
func seriesString(t testing.TB, b []byte) string {
	t.Helper()
	s, err := encode.FormatLabels(b)
	require.NoError(t, err)
	return s
}

// discard is an appender that drops everything.
type discard struct{}

// flush implements appender: nothing to send.
func (discard) flush() {}

func (discard) appendItems(_ context.Context, items []Item) int { return len(items) }

// reportNsPerSample reports the benchmark's time per op over samples as
// ns/sample.
func reportNsPerSample(b *testing.B, samples int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(samples), "ns/sample")
}
