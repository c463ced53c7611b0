package encode

import (
	"slices"
	"strings"

	"github.com/prometheus/prometheus/prompb"
)

// v1Type maps a family's type to the Remote-Write 1.0 enum, as v2Type does
// for 2.0: info and stateset go as gauge, which is what a Prometheus scraping
// kube-state-metrics' text format would forward.
func v1Type(t MetricType) prompb.MetricMetadata_MetricType {
	switch t {
	case TypeCounter:
		return prompb.MetricMetadata_COUNTER
	case TypeGauge, TypeInfo, TypeStateSet:
		return prompb.MetricMetadata_GAUGE
	default:
		return prompb.MetricMetadata_UNKNOWN
	}
}

// MetadataRequests returns the Remote-Write 1.0 metadata requests for the
// families in md, by metric name: prometheus.WriteRequest messages holding
// only metadata, at most perRequest entries each, in name order, each
// snappy-compressed. Remote-Write 1.0 sends metadata this way, on a schedule
// of its own, as Prometheus does.
func MetadataRequests(md map[string]Metadata, perRequest int) ([][]byte, error) {
	names := make([]string, 0, len(md))
	for name := range md {
		names = append(names, name)
	}
	slices.SortFunc(names, strings.Compare)
	var out [][]byte
	for chunk := range slices.Chunk(names, max(perRequest, 1)) {
		req := prompb.WriteRequest{Metadata: make([]prompb.MetricMetadata, 0, len(chunk))}
		for _, name := range chunk {
			m := md[name]
			req.Metadata = append(req.Metadata, prompb.MetricMetadata{
				Type: v1Type(m.Type), MetricFamilyName: name, Help: m.Help, Unit: m.Unit,
			})
		}
		raw, err := req.Marshal()
		if err != nil {
			return nil, err
		}
		out = append(out, Compress(nil, raw))
	}
	return out, nil
}
