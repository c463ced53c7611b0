package encode

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// DecodeLabels parses encoded labels (as a LabelsBuilder writes them,
// references followed) back into name/value pairs. It is for tests and
// diagnostics, not the hot path.
func DecodeLabels(b []byte) ([]Label, error) {
	var out []Label
	for len(b) > 0 {
		if t := b[0]; t != tagTimeSeriesLabels && !isRef(t) {
			return nil, fmt.Errorf("decoding labels: unexpected tag %#x", t)
		}
		name, value, rest, ok := NextLabel(b)
		if !ok {
			return nil, fmt.Errorf("decoding labels: truncated or malformed label (tag %#x, %d bytes left)", b[0], len(b))
		}
		out = append(out, Label{Name: string(name), Value: string(value)})
		b = rest
	}
	return out, nil
}

// FormatLabels returns encoded labels as `name{a="x",b="y"}`, the labels
// in their encoded (sorted) order. It is for tests and diagnostics.
func FormatLabels(b []byte) (string, error) {
	ls, err := DecodeLabels(b)
	if err != nil {
		return "", err
	}
	var name string
	parts := make([]string, 0, len(ls))
	for _, l := range ls {
		if l.Name == MetricName {
			name = l.Value
			continue
		}
		parts = append(parts, l.Name+"="+strconv.Quote(l.Value))
	}
	return name + "{" + strings.Join(parts, ",") + "}", nil
}

// DecodeWriteRequest decodes a Remote-Write 1.0 request body: a snappy
// block holding a prometheus.WriteRequest. It is for receivers in tests and
// tools, not the hot path.
func DecodeWriteRequest(body []byte) (*prompb.WriteRequest, error) {
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	var wr prompb.WriteRequest
	if err := wr.Unmarshal(raw); err != nil {
		return nil, fmt.Errorf("protobuf: %w", err)
	}
	return &wr, nil
}
