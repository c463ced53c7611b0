package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// apiQuery runs an instant query against a Prometheus-compatible query API
// at base (Prometheus, VictoriaMetrics, Thanos query), checks that it
// succeeded with a result of type want ("vector", "matrix"), and decodes the
// result into result. header is added to the request (a tenant, for
// example). A zero at evaluates the query at the receiver's now.
func apiQuery(ctx context.Context, base, q string, at time.Time, header http.Header, want string, result any) error {
	return apiQueryParams(ctx, base, q, at, nil, header, want, result)
}

// apiQueryParams is apiQuery with more parameters of the query API.
func apiQueryParams(ctx context.Context, base, q string, at time.Time, params url.Values, header http.Header, want string, result any) error {
	u := base + "/api/v1/query?query=" + url.QueryEscape(q)
	if !at.IsZero() {
		u += "&time=" + strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
	}
	if len(params) > 0 {
		u += "&" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("querying %q at %s: %w", q, base, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("querying %q at %s: %w", q, base, err)
	}
	defer drainClose(resp.Body)
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("querying %q at %s: decoding answer (status %d): %w", q, base, resp.StatusCode, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("querying %q at %s: status %d: %s", q, base, resp.StatusCode, body.Error)
	}
	if body.Data.ResultType != want {
		return fmt.Errorf("querying %q at %s: result is a %s, not a %s", q, base, body.Data.ResultType, want)
	}
	if err := json.Unmarshal(body.Data.Result, result); err != nil {
		return fmt.Errorf("querying %q at %s: decoding the %s: %w", q, base, want, err)
	}
	return nil
}

// queryVector runs an instant query at base (see apiQuery) and returns its
// vector result.
func queryVector(ctx context.Context, base, q string, header http.Header) ([]Sample, error) {
	return queryVectorAt(ctx, base, q, time.Time{}, header)
}

// queryVectorAt is queryVector evaluated at time at.
func queryVectorAt(ctx context.Context, base, q string, at time.Time, header http.Header) ([]Sample, error) {
	return queryVectorParams(ctx, base, q, at, nil, header)
}

// queryVectorParams is queryVectorAt with more parameters of the query
// API.
func queryVectorParams(ctx context.Context, base, q string, at time.Time, params url.Values, header http.Header) ([]Sample, error) {
	var result []struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	if err := apiQueryParams(ctx, base, q, at, params, header, "vector", &result); err != nil {
		return nil, err
	}
	out := make([]Sample, 0, len(result))
	for _, r := range result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("querying %q at %s: value %q: %w", q, base, s, err)
		}
		out = append(out, Sample{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// drainClose reads what is left of a response body, up to a bound, and
// closes it, so the connection can be reused.
func drainClose(b io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(b, 1<<20))
	_ = b.Close()
}

// jsonFloat decodes a sample value as the query and export APIs write it: a
// JSON number, or a string for a number or the special values ("NaN",
// "Inf", "+Inf", "-Inf", "Infinity"), or null for a value that was not a
// number (VictoriaMetrics writes a staleness marker that way).
type jsonFloat float64

// UnmarshalJSON implements json.Unmarshaler.
func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	s := string(b)
	switch {
	case s == "null":
		*f = jsonFloat(math.NaN())
		return nil
	case len(s) >= 2 && s[0] == '"':
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("decoding sample value %s: %w", b, err)
		}
	}
	switch s {
	case "Infinity", "+Infinity":
		*f = jsonFloat(math.Inf(1))
		return nil
	case "-Infinity":
		*f = jsonFloat(math.Inf(-1))
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("decoding sample value %s: %w", b, err)
	}
	*f = jsonFloat(v)
	return nil
}
