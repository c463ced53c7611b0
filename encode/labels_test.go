package encode

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
)

// appendLabel writes what prompb marshals, for names and values either side
// of a one-byte length and empty ones (which proto3 leaves out).
func TestAppendLabelMatchesPrompb(t *testing.T) {
	lengths := []int{0, 1, 5, 62, 63, 64, 120, 124, 125, 126, 127, 128, 129, 300, 16383, 16384, 70000}
	for _, nl := range lengths {
		for _, vl := range lengths {
			l := Label{Name: strings.Repeat("n", nl), Value: strings.Repeat("v", vl)}
			pl := prompb.Label{Name: l.Name, Value: l.Value}
			msg, err := pl.Marshal()
			require.NoError(t, err)
			want := appendVarint([]byte{tagTimeSeriesLabels}, uint64(len(msg)))
			want = append(want, msg...)
			got := appendLabel([]byte("prefix"), l)
			require.Equal(t, "prefix", string(got[:6]))
			require.Equal(t, want, got[6:], "name %d bytes, value %d bytes", nl, vl)
		}
	}
}

// A series' hash is that of a Digest written name, 0xff, value, 0xff for
// each label in name order: the hash a disk buffer written by an earlier
// version carries, and the one queues shard by.
func TestAppendToHashIsDigestOfLabels(t *testing.T) {
	var b LabelsBuilder
	b.SetExternal([]Label{{Name: "cluster", Value: "edge-1"}})
	long := strings.Repeat("x", 200)
	for _, kv := range [][]string{
		{MetricName, "kube_pod_info", "namespace", "ns", "pod", "p"},
		{"pod", long, MetricName, "m", "container", "c", "uid", "0b7e5f0c-aaaa-bbbb-cccc-000000000001"},
		{MetricName, "m", "cluster", "own"}, // its own cluster label wins over the external one
	} {
		b.Reset()
		var ls []Label
		for i := 0; i < len(kv); i += 2 {
			b.Add(kv[i], kv[i+1])
			ls = append(ls, Label{Name: kv[i], Value: kv[i+1]})
		}
		if !hasLabel(ls, "cluster") {
			ls = append(ls, Label{Name: "cluster", Value: "edge-1"})
		}
		var set SeriesSet
		b.AppendTo(&set, 1)

		sortLabels(ls)
		var d xxhash.Digest
		d.Reset()
		for _, l := range ls {
			_, _ = d.WriteString(l.Name)
			_, _ = d.Write([]byte{0xff})
			_, _ = d.WriteString(l.Value)
			_, _ = d.Write([]byte{0xff})
		}
		require.Equal(t, d.Sum64(), set.Refs[0].Hash, "%v", kv)
	}
}

func hasLabel(ls []Label, name string) bool {
	for _, l := range ls {
		if l.Name == name {
			return true
		}
	}
	return false
}

func sortLabels(ls []Label) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].Name < ls[j-1].Name; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

// sortEntries orders as the library's stable sort does, repeated names in
// the order added, on lists either side of its insertion sort's bound.
func TestSortEntriesIsStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"__name__", "a", "container", "namespace", "pod", "uid", "zz"}
	for n := range 40 {
		for range 50 {
			ls := make([]entry, n)
			for i := range ls {
				ls[i] = entry{Label: Label{Name: names[rng.IntN(len(names))], Value: strconv.Itoa(i)}}
			}
			want := slices.Clone(ls)
			slices.SortStableFunc(want, func(x, y entry) int { return strings.Compare(x.Name, y.Name) })
			sortEntries(ls)
			require.Equal(t, want, ls)
		}
	}
}

// FormatLabels puts the family name first and quotes the values; a
// malformed label is an error, not a guess.
func TestFormatLabels(t *testing.T) {
	var set SeriesSet
	var b LabelsBuilder
	b.Add("pod", `a"b`)
	b.Add(MetricName, "kube_pod_info")
	b.Add("namespace", "ns")
	b.AppendTo(&set, 1)
	got, err := FormatLabels(set.Labels(0))
	require.NoError(t, err)
	require.Equal(t, `kube_pod_info{namespace="ns",pod="a\"b"}`, got)

	_, err = FormatLabels([]byte{0x42, 0x01})
	require.Error(t, err)
}
