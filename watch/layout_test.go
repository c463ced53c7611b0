package watch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// text writes set's series as the text format would, with the layouts the
// emitter learnt.
func text(set *encode.SeriesSet) []string {
	var w encode.TextWriter
	var out []string
	for i := range set.Refs {
		name := string(encode.MetricNameOf(set.Labels(i)))
		out = append(out, string(w.AppendSeries(nil, name, LayoutOf(name), set.Labels(i), set.Trailer(i), nil, set.Refs[i].Value)))
	}
	return out
}

func TestLayoutIsTheFirstSeriesAndOthersCarryTheirOwn(t *testing.T) {
	set := &encode.SeriesSet{}
	e := &Emitter{out: set}
	e.startFamily(0, "test_layout_job_status_failed", 0)
	e.Identity("namespace", "ns", "job_name", "j1")
	e.Emit(0)
	e.Emit(1, "reason", "BackoffLimitExceeded")
	set2 := &encode.SeriesSet{}
	e.out = set2
	e.Identity("namespace", "ns", "job_name", "j2")
	e.Emit(0)
	l := LayoutOf("test_layout_job_status_failed")
	require.Equal(t, []string{"namespace", "job_name"}, l.Keys, "the first series' names, in emission order")
	require.Nil(t, set.Trailer(0))
	require.NotNil(t, set.Trailer(1), "a series with other names carries its own")
	require.Nil(t, set2.Trailer(0))
	require.Equal(t, []string{
		`test_layout_job_status_failed{namespace="ns",job_name="j1"} 0` + "\n",
		`test_layout_job_status_failed{namespace="ns",job_name="j1",reason="BackoffLimitExceeded"} 1` + "\n",
		`test_layout_job_status_failed{namespace="ns",job_name="j2"} 0` + "\n",
	}, append(text(set), text(set2)...))
}

func TestLayoutKeepsEmptyLabelsInOrder(t *testing.T) {
	set := &encode.SeriesSet{}
	e := &Emitter{out: set}
	e.startFamily(0, "test_layout_owner", 0)
	e.Identity("namespace", "ns", "pod", "p")
	e.Emit(1, "owner_kind", "", "owner_name", "", "owner_is_controller", "")
	e.Emit(1, "owner_kind", "ReplicaSet", "owner_name", "rs", "owner_is_controller", "true")
	require.Nil(t, set.Trailer(0))
	require.Nil(t, set.Trailer(1))
	require.Equal(t, []string{
		`test_layout_owner{namespace="ns",pod="p",owner_kind="",owner_name="",owner_is_controller=""} 1` + "\n",
		`test_layout_owner{namespace="ns",pod="p",owner_kind="ReplicaSet",owner_name="rs",owner_is_controller="true"} 1` + "\n",
	}, text(set))
	// The pushed series leave the empty labels out.
	ls, err := encode.DecodeLabels(set.Labels(0))
	require.NoError(t, err)
	require.Equal(t, []encode.Label{{Name: "__name__", Value: "test_layout_owner"}, {Name: "namespace", Value: "ns"}, {Name: "pod", Value: "p"}}, ls)
}

func TestLayoutGeneratedLabels(t *testing.T) {
	set := &encode.SeriesSet{}
	e := &Emitter{out: set}
	e.startFamily(0, "test_layout_node_labels", 0)
	e.Identity("node", "n1")
	// Sorted, none empty: the encoded labels give them back.
	e.EmitKV(1, []string{"label_a", "label_b"}, []string{"1", "2"})
	// An empty value (node-role.kubernetes.io/control-plane: "") and a
	// conflict renamed out of name order need a trailer.
	e.EmitKV(1, []string{"label_node_role_kubernetes_io_control_plane", "label_z"}, []string{"", "x"})
	e.EmitKV(1, []string{"label_a_conflict2", "label_a_conflict1"}, []string{"1", "2"})
	require.Nil(t, set.Trailer(0))
	require.NotNil(t, set.Trailer(1))
	require.NotNil(t, set.Trailer(2))
	require.Equal(t, []string{
		`test_layout_node_labels{node="n1",label_a="1",label_b="2"} 1` + "\n",
		`test_layout_node_labels{node="n1",label_node_role_kubernetes_io_control_plane="",label_z="x"} 1` + "\n",
		`test_layout_node_labels{node="n1",label_a_conflict2="1",label_a_conflict1="2"} 1` + "\n",
	}, text(set))
}

func BenchmarkEmitWithLayout(b *testing.B) {
	set := &encode.SeriesSet{}
	e := &Emitter{out: set}
	e.startFamily(0, "bench_layout_container_resource_requests", 0)
	e.Identity("namespace", "default", "pod", "web-7d4b9c8f6d-x2k9p", "uid", "3f1c2b9e-8a4d-4e1f-9b2c-7d6e5f4a3b2c")
	b.ReportAllocs()
	for b.Loop() {
		set.Reset()
		e.Emit(0.25, "container", "app", "node", "node-0042", "resource", "cpu", "unit", "core")
	}
}
