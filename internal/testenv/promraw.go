package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
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
	q := selector + "[" + model.Duration(window).String() + "]"
	u := p.URL + "/api/v1/query?query=" + url.QueryEscape(q)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("querying %q at %s: %w", q, p.URL, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("querying %q at %s: %w", q, p.URL, err)
	}
	defer drainClose(resp.Body)
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string    `json:"metric"`
				Values [][2]json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("querying %q at %s: decoding answer (status %d): %w", q, p.URL, resp.StatusCode, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("querying %q at %s: status %d: %s", q, p.URL, resp.StatusCode, body.Error)
	}
	if body.Data.ResultType != "matrix" {
		return nil, fmt.Errorf("querying %q at %s: result is a %s, not a matrix", q, p.URL, body.Data.ResultType)
	}
	out := make([]ExportedSeries, 0, len(body.Data.Result))
	for _, r := range body.Data.Result {
		s := ExportedSeries{Metric: r.Metric, Values: make([]float64, len(r.Values)), Timestamps: make([]int64, len(r.Values))}
		for i, pair := range r.Values {
			var secs float64
			if err := json.Unmarshal(pair[0], &secs); err != nil {
				return nil, fmt.Errorf("querying %q at %s: timestamp %s: %w", q, p.URL, pair[0], err)
			}
			var v jsonFloat
			if err := v.UnmarshalJSON(pair[1]); err != nil {
				return nil, fmt.Errorf("querying %q at %s: %w", q, p.URL, err)
			}
			s.Timestamps[i] = int64(math.Round(secs * 1000))
			s.Values[i] = float64(v)
		}
		out = append(out, s)
	}
	return out, nil
}
