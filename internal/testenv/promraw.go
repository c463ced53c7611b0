package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/common/model"
)

// RawSamples returns every sample Prometheus holds for the series matching
// selector (e.g. `{namespace="ns"}`) in the window before now, as
// ExportedSeries: an instant query for the range vector selector[window],
// which returns the stored samples themselves, without lookback or
// step alignment. Staleness markers are not returned (Prometheus leaves them
// out of range vectors).
func (p *Prometheus) RawSamples(ctx context.Context, selector string, window time.Duration) ([]ExportedSeries, error) {
	return rawSamples(ctx, p.URL, nil, selector, window)
}

// rawSamples is RawSamples against the query API at base, with header
// added to the request.
func rawSamples(ctx context.Context, base string, header http.Header, selector string, window time.Duration) ([]ExportedSeries, error) {
	q := selector + "[" + model.Duration(window).String() + "]"
	var result []struct {
		Metric map[string]string    `json:"metric"`
		Values [][2]json.RawMessage `json:"values"`
	}
	if err := apiQuery(ctx, base, q, time.Time{}, header, "matrix", &result); err != nil {
		return nil, err
	}
	out := make([]ExportedSeries, 0, len(result))
	for _, r := range result {
		s := ExportedSeries{Metric: r.Metric, Values: make([]float64, len(r.Values)), Timestamps: make([]int64, len(r.Values))}
		for i, pair := range r.Values {
			var secs float64
			if err := json.Unmarshal(pair[0], &secs); err != nil {
				return nil, fmt.Errorf("querying %q at %s: timestamp %s: %w", q, base, pair[0], err)
			}
			var v jsonFloat
			if err := v.UnmarshalJSON(pair[1]); err != nil {
				return nil, fmt.Errorf("querying %q at %s: %w", q, base, err)
			}
			s.Timestamps[i] = int64(math.Round(secs * 1000))
			s.Values[i] = float64(v)
		}
		out = append(out, s)
	}
	return out, nil
}
