package encode

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// series builds a one-series set from labels (name, value pairs, __name__
// included), in the order a LabelsBuilder sorts them.
func oneSeries(t *testing.T, value float64, ext []Label, kv ...string) *SeriesSet {
	t.Helper()
	var b LabelsBuilder
	b.SetExternal(ext)
	for i := 0; i+1 < len(kv); i += 2 {
		b.Add(kv[i], kv[i+1])
	}
	set := &SeriesSet{}
	b.AppendTo(set, value)
	return set
}

func TestAppendSeriesFollowsTheLayout(t *testing.T) {
	l := &Layout{Keys: []string{"namespace", "pod", "uid", "host_ip", "node"}}
	set := oneSeries(t, 1, nil, MetricName, "kube_pod_info", "namespace", "ns", "pod", "p", "uid", "u", "host_ip", "", "node", "n1")
	var w TextWriter
	got := w.AppendSeries(nil, "kube_pod_info", l, set.Labels(0), set.Trailer(0), nil, 1)
	// Label order from the layout, not the encoded (sorted) order; the
	// empty host_ip is written although the encoded labels lack it.
	require.Equal(t, `kube_pod_info{namespace="ns",pod="p",uid="u",host_ip="",node="n1"} 1`+"\n", string(got))
}

func TestAppendSeriesGeneratedLabelsAndExternal(t *testing.T) {
	ext := []Label{{Name: "cluster", Value: "edge-1"}}
	l := &Layout{Keys: []string{"namespace", "pod"}, Generated: true}
	set := oneSeries(t, 1, ext, MetricName, "kube_pod_labels", "namespace", "ns", "pod", "p", "label_b", "2", "label_a", "1")
	var w TextWriter
	got := w.AppendSeries(nil, "kube_pod_labels", l, set.Labels(0), nil, ext, 1)
	// Generated labels in name order; the external label is not written.
	require.Equal(t, `kube_pod_labels{namespace="ns",pod="p",label_a="1",label_b="2"} 1`+"\n", string(got))
}

func TestAppendSeriesWritesTheTrailerAsGiven(t *testing.T) {
	l := &Layout{Keys: []string{"namespace", "job_name"}}
	set := oneSeries(t, 0, nil, MetricName, "kube_job_status_failed", "namespace", "ns", "job_name", "j", "reason", "BackoffLimitExceeded")
	set.AppendTrailer("namespace", "ns")
	set.AppendTrailer("job_name", "j")
	set.AppendTrailer("reason", "BackoffLimitExceeded")
	set.AppendTrailer("extra", "")
	require.NotNil(t, set.Trailer(0))
	var w TextWriter
	got := w.AppendSeries(nil, "kube_job_status_failed", l, set.Labels(0), set.Trailer(0), nil, 0)
	require.Equal(t, `kube_job_status_failed{namespace="ns",job_name="j",reason="BackoffLimitExceeded",extra=""} 0`+"\n", string(got))
	// The trailer is not part of what Remote-Write sends.
	ls, err := DecodeLabels(set.Labels(0))
	require.NoError(t, err)
	require.Len(t, ls, 4)
}

func TestTrailerBetweenSeries(t *testing.T) {
	var b LabelsBuilder
	set := &SeriesSet{}
	for i, name := range []string{"a", "b", "c"} {
		b.Reset()
		b.Add(MetricName, name)
		b.AppendTo(set, float64(i))
		if name == "b" {
			set.AppendTrailer("x", "")
		}
	}
	require.Nil(t, set.Trailer(0))
	require.NotNil(t, set.Trailer(1))
	require.Nil(t, set.Trailer(2))
	for i, name := range []string{"a", "b", "c"} {
		require.Equal(t, name, string(MetricNameOf(set.Labels(i))))
	}
}

func TestAppendSeriesEscapesAndFormats(t *testing.T) {
	l := &Layout{Keys: []string{"v"}}
	set := oneSeries(t, 0, nil, MetricName, "m", "v", "a\\b\n\"c\"")
	var w TextWriter
	got := w.AppendSeries(nil, "m", l, set.Labels(0), nil, nil, 0.5)
	require.Equal(t, `m{v="a\\b\n\"c\""} 0.5`+"\n", string(got))
	// A series with no labels at all has no braces, as kube-state-metrics writes it.
	none := oneSeries(t, 0, nil, MetricName, "m")
	require.Equal(t, "m 2\n", string(w.AppendSeries(nil, "m", &Layout{}, none.Labels(0), nil, nil, 2)))
}

func TestAppendTextValue(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 1: "1", -1: "-1", 2: "2", 0.1: "0.1", 1e21: "1e+21", 1.125899906842624e+15: "1.125899906842624e+15",
		1.7e9: "1.7e+09", math.Inf(1): "+Inf", math.Inf(-1): "-Inf",
	} {
		require.Equal(t, want, string(AppendTextValue(nil, v)), "%v", v)
	}
	require.Equal(t, "NaN", string(AppendTextValue(nil, math.NaN())))
}

func TestNeedsTrailer(t *testing.T) {
	require.False(t, NeedsTrailer(nil, nil))
	require.False(t, NeedsTrailer([]string{"label_a", "label_b"}, []string{"1", "2"}))
	require.True(t, NeedsTrailer([]string{"label_a", "label_b"}, []string{"1", ""}), "empty value")
	require.True(t, NeedsTrailer([]string{"label_b", "label_a"}, []string{"1", "2"}), "not in name order")
}

func BenchmarkAppendSeries(b *testing.B) {
	l := &Layout{Keys: []string{"namespace", "pod", "uid", "container", "node", "resource", "unit"}}
	var lb LabelsBuilder
	lb.Add(MetricName, "kube_pod_container_resource_requests")
	for _, kv := range [][2]string{{"namespace", "default"}, {"pod", "web-7d4b9c8f6d-x2k9p"}, {"uid", "3f1c2b9e-8a4d-4e1f-9b2c-7d6e5f4a3b2c"}, {"container", "app"}, {"node", "node-0042"}, {"resource", "cpu"}, {"unit", "core"}} {
		lb.Add(kv[0], kv[1])
	}
	set := &SeriesSet{}
	lb.AppendTo(set, 0.25)
	var w TextWriter
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = w.AppendSeries(buf[:0], "kube_pod_container_resource_requests", l, set.Labels(0), nil, nil, 0.25)
	}
	b.SetBytes(int64(len(buf)))
}

// HashLabels gives back the builder's hash from the encoded labels, and
// NextLabel refuses what the builder never writes.
func TestHashLabelsAndNextLabel(t *testing.T) {
	ext := []Label{{Name: "cluster", Value: "edge-1"}}
	set := oneSeries(t, 1, ext, MetricName, "kube_pod_info", "namespace", "ns", "pod", "p")
	h, ok := HashLabels(set.Labels(0))
	require.True(t, ok)
	require.Equal(t, set.Refs[0].Hash, h)
	good := set.Labels(0)
	one := oneSeries(t, 1, nil, MetricName, "m").Labels(0)
	for name, b := range map[string][]byte{
		"unexpected tag":         {0x12, 0x00},
		"truncated label":        one[:len(one)-1],
		"truncated varint":       {tagTimeSeriesLabels, 0x80},
		"unknown field in label": {tagTimeSeriesLabels, 0x02, 0x1a, 0x00},
	} {
		_, ok := HashLabels(b)
		require.False(t, ok, name)
		_, _, _, ok = NextLabel(b)
		require.False(t, ok, name)
	}
	name, value, rest, ok := NextLabel(good)
	require.True(t, ok)
	require.Equal(t, MetricName, string(name))
	require.Equal(t, "kube_pod_info", string(value))
	require.NotEmpty(t, rest)
}
