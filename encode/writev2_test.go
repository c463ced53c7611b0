package encode

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/stretchr/testify/require"
)

// decodeV2 snappy-decodes and unmarshals a Remote-Write 2.0 body with the
// writev2 package's own types.
func decodeV2(t *testing.T, body []byte) writev2.Request {
	t.Helper()
	raw, err := snappy.Decode(nil, body)
	require.NoError(t, err)
	var req writev2.Request
	require.NoError(t, req.Unmarshal(raw))
	return req
}

// v2ToWire resolves each series' label refs against the symbol table, in
// the order they were sent, into the form the 1.0 tests compare.
func v2ToWire(t *testing.T, req writev2.Request) []wireSeries {
	t.Helper()
	out := make([]wireSeries, 0, len(req.Timeseries))
	for _, ts := range req.Timeseries {
		require.Empty(t, ts.Histograms)
		require.Empty(t, ts.Exemplars)
		require.Zero(t, len(ts.LabelsRefs)%2, "refs come in name/value pairs")
		w := wireSeries{}
		for i := 0; i < len(ts.LabelsRefs); i += 2 {
			n, v := ts.LabelsRefs[i], ts.LabelsRefs[i+1]
			require.Less(t, int(n), len(req.Symbols))
			require.Less(t, int(v), len(req.Symbols))
			w.Labels = append(w.Labels, prompb.Label{Name: req.Symbols[n], Value: req.Symbols[v]})
		}
		for _, s := range ts.Samples {
			require.Zero(t, s.StartTimestamp)
			w.Samples = append(w.Samples, wireSample{Bits: math.Float64bits(s.Value), Timestamp: s.Timestamp})
		}
		out = append(out, w)
	}
	return out
}

// testMetadata knows four families, one of each type; kube_unknown is left
// out on purpose.
func testMetadata(name string) (Metadata, bool) {
	switch name {
	case "kube_pod_status_ready":
		return Metadata{Type: TypeGauge, Help: "Describes whether the pod is ready to serve requests."}, true
	case "kube_pod_container_status_restarts_total":
		return Metadata{Type: TypeCounter, Help: "The number of container restarts per container."}, true
	case "kube_pod_info":
		return Metadata{Type: TypeInfo, Help: "Information about pod."}, true
	case "kube_pod_status_phase":
		return Metadata{Type: TypeStateSet, Help: "The pods current phase."}, true
	case "kube_pod_created":
		return Metadata{Type: TypeGauge, Help: "Unix creation timestamp", Unit: "seconds"}, true
	}
	return Metadata{}, false
}

func build(t *testing.T, ts int64, series ...[]string) []Sample {
	t.Helper()
	var b LabelsBuilder
	var set SeriesSet
	for _, kv := range series {
		b.Reset()
		for i := 0; i+1 < len(kv); i += 2 {
			b.Add(kv[i], kv[i+1])
		}
		b.AppendTo(&set, 0)
	}
	out := make([]Sample, set.Len())
	for i := range out {
		out[i] = Sample{Labels: set.Labels(i), Timestamp: ts}
	}
	return out
}

func TestV2EncoderRoundTrip(t *testing.T) {
	// The first batch fills the encoder, so the second also shows that Reset
	// leaves nothing of it behind.
	first := build(t, 1, []string{"__name__", "kube_pod_info", "pod", "old", "stale", "symbol"})
	samples := build(t, 1700000000000,
		// "checkout" is a pod, a container and an app value; "shop" a namespace
		// on several series: each must be one symbol.
		[]string{"__name__", "kube_pod_info", "namespace", "shop", "pod", "checkout", "app", "checkout", "uid", "u1"},
		[]string{"__name__", "kube_pod_status_phase", "namespace", "shop", "pod", "checkout", "phase", "Running"},
		[]string{"__name__", "kube_pod_status_phase", "namespace", "shop", "pod", "checkout", "phase", "Pending"},
		[]string{"__name__", "kube_pod_container_status_restarts_total", "namespace", "shop", "pod", "checkout", "container", "checkout"},
		[]string{"__name__", "kube_pod_status_ready", "namespace", "shop", "pod", "gone", "condition", "true"},
		[]string{"__name__", "kube_pod_status_ready", "namespace", "shop", "pod", "nan", "condition", "pod"}, // value equal to a name
		[]string{"__name__", "kube_pod_created", "namespace", "shop", "pod", "checkout"},
		[]string{"__name__", "kube_unknown", "namespace", "other"},
		[]string{"no_name", "x"},
	)
	values := []float64{1, 1, 0, 3, StaleNaN, math.NaN(), 1.7e9, math.Inf(-1), -0.5}
	for i := range samples {
		samples[i].Value = values[i]
	}
	samples[8].Timestamp = -5 // negative timestamps are valid int64s

	// What Prometheus' own decoder (writev2.TimeSeries.ToMetadata) must read.
	wantMeta := []metadata.Metadata{
		{Type: model.MetricTypeGauge, Help: "Information about pod."},  // info sent as gauge
		{Type: model.MetricTypeGauge, Help: "The pods current phase."}, // stateset sent as gauge
		{Type: model.MetricTypeGauge, Help: "The pods current phase."},
		{Type: model.MetricTypeCounter, Help: "The number of container restarts per container."},
		{Type: model.MetricTypeGauge, Help: "Describes whether the pod is ready to serve requests."},
		{Type: model.MetricTypeGauge, Help: "Describes whether the pod is ready to serve requests."},
		{Type: model.MetricTypeGauge, Help: "Unix creation timestamp", Unit: "seconds"},
		{Type: model.MetricTypeUnknown}, // not known to the lookup
		{Type: model.MetricTypeUnknown}, // no metric name
	}

	e := &V2Encoder{Metadata: testMetadata}
	_ = e.Encode(nil, first)
	req := decodeV2(t, e.Encode(nil, samples))

	t.Run("series equal the 1.0 encoding of the same batch", func(t *testing.T) {
		want := toWire(t, decodeRequest(t, Compress(nil, AppendWriteRequest(nil, samples))).Timeseries)
		require.Equal(t, want, v2ToWire(t, req))
		got := v2ToWire(t, req)
		require.Equal(t, uint64(0x7ff0000000000002), got[4].Samples[0].Bits, "stale marker keeps its bits")
		require.Equal(t, int64(-5), got[8].Samples[0].Timestamp)
	})
	t.Run("symbol table", func(t *testing.T) {
		require.NotEmpty(t, req.Symbols)
		require.Empty(t, req.Symbols[0], "symbols[0] is the empty string")
		distinct := map[string]bool{"": true}
		for _, s := range samples {
			ls, err := DecodeLabels(s.Labels)
			require.NoError(t, err)
			for _, l := range ls {
				distinct[l.Name], distinct[l.Value] = true, true
			}
		}
		for _, m := range wantMeta {
			distinct[m.Help], distinct[m.Unit] = true, true
		}
		seen := map[string]bool{}
		for _, s := range req.Symbols {
			require.False(t, seen[s], "symbol %q appears twice", s)
			seen[s] = true
		}
		require.Equal(t, distinct, seen, "exactly the batch's strings, nothing from the previous request")
	})
	t.Run("metadata", func(t *testing.T) {
		require.Len(t, req.Timeseries, len(wantMeta))
		for i, ts := range req.Timeseries {
			got, err := ts.ToMetadata(req.Symbols)
			require.NoError(t, err)
			require.Equal(t, wantMeta[i], got, "series %d", i)
		}
	})
	t.Run("metadata of interleaved families", func(t *testing.T) {
		req := decodeV2(t, (&V2Encoder{Metadata: podMetadata}).Encode(nil, podFamilySamples(t, 30)))
		for _, ts := range req.Timeseries {
			name := req.Symbols[ts.LabelsRefs[1]] // __name__ sorts first here
			md := podMetadataByName[name]
			got, err := ts.ToMetadata(req.Symbols)
			require.NoError(t, err)
			want := model.MetricTypeGauge
			if md.Type == TypeCounter {
				want = model.MetricTypeCounter
			}
			require.Equal(t, metadata.Metadata{Type: want, Help: md.Help, Unit: md.Unit}, got, name)
		}
	})
	t.Run("no metadata func", func(t *testing.T) {
		req := decodeV2(t, (&V2Encoder{}).Encode(nil, samples))
		for _, ts := range req.Timeseries {
			require.Equal(t, writev2.Metadata{}, ts.Metadata)
		}
	})
}

func TestV2TypeMapping(t *testing.T) {
	for typ, want := range map[MetricType]writev2.Metadata_MetricType{
		TypeGauge:     writev2.Metadata_METRIC_TYPE_GAUGE,
		TypeCounter:   writev2.Metadata_METRIC_TYPE_COUNTER,
		TypeInfo:      writev2.Metadata_METRIC_TYPE_GAUGE,
		TypeStateSet:  writev2.Metadata_METRIC_TYPE_GAUGE,
		MetricType(9): writev2.Metadata_METRIC_TYPE_UNSPECIFIED,
	} {
		require.Equal(t, want, v2Type(typ), "type %d", typ)
	}
}

func TestRequestEncoders(t *testing.T) {
	samples := podSamples(t, 3)
	want := toWire(t, decodeRequest(t, Compress(nil, AppendWriteRequest(nil, samples))).Timeseries)
	tests := []struct {
		name        string
		enc         RequestEncoder
		contentType string
		version     string
		decode      func(t *testing.T, body []byte) []wireSeries
	}{
		{
			name: "v1", enc: &V1Encoder{}, contentType: "application/x-protobuf", version: "0.1.0",
			decode: func(t *testing.T, body []byte) []wireSeries { return toWire(t, decodeRequest(t, body).Timeseries) },
		},
		{
			name: "v2", enc: &V2Encoder{}, contentType: "application/x-protobuf;proto=io.prometheus.write.v2.Request", version: "2.0.0",
			decode: func(t *testing.T, body []byte) []wireSeries { return v2ToWire(t, decodeV2(t, body)) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.contentType, tt.enc.ContentType())
			require.Equal(t, tt.version, tt.enc.Version())
			require.Equal(t, want, tt.decode(t, tt.enc.Encode(nil, samples)))
			require.Empty(t, tt.decode(t, tt.enc.Encode(nil, nil)), "an empty batch is a valid empty request")
		})
	}
}

func TestV2EncoderMalformedLabels(t *testing.T) {
	good := build(t, 0, []string{"__name__", "m"})[0].Labels
	for name, b := range map[string][]byte{
		"unexpected tag":         {0x12, 0x00},
		"truncated label":        good[:len(good)-1],
		"truncated varint":       {tagTimeSeriesLabels, 0x80},
		"unknown field in label": {tagTimeSeriesLabels, 0x02, 0x1a, 0x00},
	} {
		t.Run(name, func(t *testing.T) {
			require.Panics(t, func() { (&V2Encoder{}).Encode(nil, []Sample{{Labels: b}}) })
		})
	}
}

func TestV2EncoderAllocs(t *testing.T) {
	a := podSamples(t, 2000)
	b := podFamilySamples(t, 2000)
	e := &V2Encoder{Metadata: podMetadata}
	var dst []byte
	for range 2 { // warm up: grow every buffer to the larger batch
		dst = e.Encode(dst, a)
		dst = e.Encode(dst, b)
	}
	allocs := testing.AllocsPerRun(10, func() {
		dst = e.Encode(dst, a)
		dst = e.Encode(dst, b)
	})
	require.Zero(t, allocs)
}

// podFamilies are families kube-state-metrics renders for every pod, with
// their extra labels.
var podFamilies = []struct {
	name  string
	extra []string
}{
	{"kube_pod_info", []string{"host_ip", "10.0.3.17", "node", "node-a3", "pod_ip", "10.244.3.41", "created_by_kind", "ReplicaSet"}},
	{"kube_pod_owner", []string{"owner_kind", "ReplicaSet", "owner_name", "checkout-6f9c"}},
	{"kube_pod_status_phase", []string{"phase", "Running"}},
	{"kube_pod_status_ready", []string{"condition", "true"}},
	{"kube_pod_created", nil},
	{"kube_pod_container_info", []string{"container", "checkout", "image", "registry.example.com/shop/checkout:1.42.0"}},
	{"kube_pod_container_status_running", []string{"container", "checkout"}},
	{"kube_pod_container_status_restarts_total", []string{"container", "checkout"}},
	{"kube_pod_container_resource_requests", []string{"container", "checkout", "resource", "cpu", "unit", "core"}},
	{"kube_pod_container_resource_requests", []string{"container", "checkout", "resource", "memory", "unit", "byte"}},
}

// podFamilySamples returns n samples of n/10 pods with ten families each,
// the shape of a real snapshot: each pod's name and uid recur in all of its
// series.
func podFamilySamples(tb testing.TB, n int) []Sample {
	tb.Helper()
	var b LabelsBuilder
	var set SeriesSet
	for i := 0; set.Len() < n; i++ {
		for _, f := range podFamilies {
			if set.Len() == n {
				break
			}
			b.Reset()
			b.Add(MetricName, f.name)
			b.Add("namespace", "shop")
			b.Add("pod", fmt.Sprintf("checkout-6f9c-%05x", i))
			b.Add("uid", fmt.Sprintf("3f2b8c1e-9a4d-4e7b-8c6a-%012x", i))
			for j := 0; j+1 < len(f.extra); j += 2 {
				b.Add(f.extra[j], f.extra[j+1])
			}
			b.AppendTo(&set, 1)
		}
	}
	out := make([]Sample, n)
	for i := range out {
		out[i] = Sample{Labels: set.Labels(i), Value: set.Refs[i].Value, Timestamp: 1700000000000}
	}
	return out
}

var podMetadataByName = map[string]Metadata{
	"kube_pod_info":                            {Type: TypeInfo, Help: "Information about pod."},
	"kube_pod_owner":                           {Type: TypeInfo, Help: "Information about the Pod's owner."},
	"kube_pod_status_phase":                    {Type: TypeStateSet, Help: "The pods current phase."},
	"kube_pod_status_ready":                    {Type: TypeStateSet, Help: "Describes whether the pod is ready to serve requests."},
	"kube_pod_created":                         {Type: TypeGauge, Help: "Unix creation timestamp"},
	"kube_pod_container_info":                  {Type: TypeInfo, Help: "Information about a container in a pod."},
	"kube_pod_container_status_running":        {Type: TypeGauge, Help: "Describes whether the container is currently in running state."},
	"kube_pod_container_status_restarts_total": {Type: TypeCounter, Help: "The number of container restarts per container."},
	"kube_pod_container_resource_requests":     {Type: TypeGauge, Help: "The number of requested request resource by a container."},
}

func podMetadata(name string) (Metadata, bool) {
	m, ok := podMetadataByName[name]
	return m, ok
}

// BenchmarkEncodeV1vsV2 encodes the same batches as 1.0 and 2.0 and reports
// the request size before (raw_B) and after (snappy_B) compression. 1.0
// carries no metadata (it is sent separately); 2.0 carries it in every series.
func BenchmarkEncodeV1vsV2(b *testing.B) {
	batches := []struct {
		name    string
		samples []Sample
	}{
		{"one_family", podSamples(b, benchSamples)},
		{"pod_families", podFamilySamples(b, benchSamples)},
	}
	for _, batch := range batches {
		for _, enc := range []struct {
			name string
			enc  RequestEncoder
		}{
			{"v1", &V1Encoder{}},
			{"v2", &V2Encoder{Metadata: podMetadata}},
		} {
			b.Run(batch.name+"/"+enc.name, func(b *testing.B) {
				dst := enc.enc.Encode(nil, batch.samples)
				raw, err := snappy.DecodedLen(dst)
				require.NoError(b, err)
				b.ReportAllocs()
				for b.Loop() {
					dst = enc.enc.Encode(dst, batch.samples)
				}
				reportPerSample(b, len(batch.samples))
				b.ReportMetric(float64(raw), "raw_B")
				b.ReportMetric(float64(len(dst)), "snappy_B")
			})
		}
	}
}

// TestV2EncoderReuseMatchesFresh encodes compacted sets (interned and
// shared references) with one encoder, request after request, and with a
// fresh encoder each time: the refs an encoder keeps between requests must
// never leak into the next request's symbols, also when its request
// counter wraps.
func TestV2EncoderReuseMatchesFresh(t *testing.T) {
	var c Compactor
	var batches [][]Sample
	for _, pods := range [][]string{{"a", "b"}, {"web-7d4b9c8f6d-x2k9p"}, {"a", strings.Repeat("long-", 40)}} {
		var batch []Sample
		for _, pod := range pods {
			set := c.Compact(podLikeSet(t, pod, false))
			for i := range set.Refs {
				batch = append(batch, Sample{Labels: set.Labels(i), Value: set.Refs[i].Value, Timestamp: 1})
			}
		}
		batches = append(batches, batch)
	}
	reused := &V2Encoder{Metadata: podMetadata}
	for round := range 3 {
		if round == 2 {
			reused.gen = math.MaxUint32 // the next request wraps the counter
		}
		for i, batch := range batches {
			fresh := (&V2Encoder{Metadata: podMetadata}).Encode(nil, batch)
			require.Equal(t, fresh, reused.Encode(nil, batch), "round %d, batch %d", round, i)
		}
	}
}

// TestV2BytesAreGogos checks the hand-written marshalling against the
// generated one: the encoder's request, decoded and marshalled again by
// writev2.Request.Marshal, gives the same bytes. The samples cover proto3's
// zero values (0, -0, a zero timestamp), NaN and negative timestamps,
// families with and without metadata or a unit, and over 128 symbols so
// that refs take several bytes.
func TestV2BytesAreGogos(t *testing.T) {
	meta := func(name string) (Metadata, bool) {
		switch {
		case strings.HasSuffix(name, "_seconds"):
			return Metadata{Type: TypeCounter, Help: "Seconds.", Unit: "seconds"}, true
		case strings.HasSuffix(name, "_info"):
			return Metadata{Type: TypeInfo}, true
		case strings.HasSuffix(name, "_ready"):
			return Metadata{Type: TypeGauge, Help: "Ready."}, true
		}
		return Metadata{}, false
	}
	values := []float64{0, math.Copysign(0, -1), 1, -2.5, math.NaN(), math.Float64frombits(0x7ff0000000000002), math.Inf(1)}
	stamps := []int64{0, 1, -5, 1_700_000_000_000, math.MaxInt64, math.MinInt64}
	families := []string{"kube_a_seconds", "kube_b_info", "kube_c_ready", "kube_d"}
	var b LabelsBuilder
	var set SeriesSet
	for i := range 300 {
		b.Reset()
		b.Add(MetricName, families[i%len(families)])
		b.Add("pod", fmt.Sprintf("pod-%d", i/3))
		if i%5 != 0 {
			b.Add("uid", fmt.Sprintf("uid-%d", i))
		}
		b.AppendTo(&set, values[i%len(values)])
	}
	samples := make([]Sample, set.Len())
	for i := range samples {
		samples[i] = Sample{Labels: set.Labels(i), Value: set.Refs[i].Value, Timestamp: stamps[i%len(stamps)]}
	}
	for _, md := range []MetadataFunc{nil, meta} {
		body := (&V2Encoder{Metadata: md}).Encode(nil, samples)
		raw, err := snappy.Decode(nil, body)
		require.NoError(t, err)
		req := decodeV2(t, body)
		require.Greater(t, len(req.Symbols), 128)
		require.Len(t, req.Timeseries, len(samples))
		again, err := req.Marshal()
		require.NoError(t, err)
		require.Equal(t, again, raw)
	}
}
