package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"
)

// VictoriaMetrics is a single-node VictoriaMetrics: a Remote-Write 1.0
// receiver that keeps out-of-order and duplicate samples and does not speak
// Remote-Write 2.0 (it answers 204 to a 2.0 request and stores nothing).
type VictoriaMetrics struct {
	// URL is the server's base URL; remote write goes to WriteURL.
	URL string
	// Proc is the running process; Restart replaces it.
	Proc *Process

	// dir holds the log and the data folder; Restart reuses both.
	dir string
	// bin and args start the process again on Restart, on the same port.
	bin  string
	args []string
}

// StartVictoriaMetrics starts VictoriaMetrics in dir, on a free port of
// 127.0.0.1, and waits until it is healthy. Queries see samples at once
// (-search.latencyOffset=0s, no result cache); call ForceFlush (Export does)
// before reading what was just written.
func StartVictoriaMetrics(ctx context.Context, dir string) (*VictoriaMetrics, error) {
	bin, err := Binary("victoria-metrics")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	v := &VictoriaMetrics{
		URL: "http://127.0.0.1:" + strconv.Itoa(port),
		dir: dir,
		bin: bin,
		args: []string{
			"-storageDataPath=" + filepath.Join(dir, "victoria-metrics-data"),
			"-httpListenAddr=127.0.0.1:" + strconv.Itoa(port),
			"-search.latencyOffset=0s",
			"-search.disableCache",
			"-retentionPeriod=100y",
			"-loggerLevel=WARN",
		},
	}
	if err := v.start(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

// start runs the process and waits until /health answers.
func (v *VictoriaMetrics) start(ctx context.Context) error {
	p, err := Start(v.dir, "victoria-metrics", v.bin, v.args...)
	if err != nil {
		return err
	}
	if err := p.waitReady(ctx, httpOK(http.DefaultClient, v.URL+"/health", nil)); err != nil {
		p.Kill()
		return err
	}
	v.Proc = p
	return nil
}

// WriteURL is the Remote-Write receiver's URL.
func (v *VictoriaMetrics) WriteURL() string { return v.URL + "/api/v1/write" }

// Stop stops the server gracefully (it flushes what it holds to disk).
func (v *VictoriaMetrics) Stop() { v.Proc.Stop(10 * time.Second) }

// Restart starts a stopped server again on the same port with the same data
// folder, so a sender configured with WriteURL reaches it again and what was
// stored before is still there. A server still running is stopped first.
// The log of the new run replaces the old one.
func (v *VictoriaMetrics) Restart(ctx context.Context) error {
	v.Stop()
	if err := v.start(ctx); err != nil {
		return fmt.Errorf("restarting victoria-metrics on %s: %w", v.URL, err)
	}
	return nil
}

// ForceFlush makes samples received so far visible to queries and exports.
func (v *VictoriaMetrics) ForceFlush(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.URL+"/internal/force_flush", nil)
	if err != nil {
		return fmt.Errorf("flushing victoria-metrics: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("flushing victoria-metrics: %w", err)
	}
	defer drainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("flushing victoria-metrics: status %d: %s", resp.StatusCode, b)
	}
	return nil
}

// ExportedSeries is one series as /api/v1/export returns it: every stored
// sample, in timestamp order, without the lookback and deduplication that
// queries apply.
type ExportedSeries struct {
	// Metric is the series' labels (with __name__).
	Metric map[string]string
	// Values are the raw sample values; a staleness marker is a NaN.
	Values []float64
	// Timestamps are the samples' times in milliseconds, one per value.
	Timestamps []int64
}

// Export flushes and returns every series matching the series selector
// match (e.g. `{namespace="ns"}`), with all their samples, up to an hour
// ahead of now.
func (v *VictoriaMetrics) Export(ctx context.Context, match string) ([]ExportedSeries, error) {
	if err := v.ForceFlush(ctx); err != nil {
		return nil, err
	}
	// An explicit end: with the default (now), samples acknowledged less
	// than a second before were missing from the export here, even after a
	// flush.
	end := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	u := v.URL + "/api/v1/export?match[]=" + url.QueryEscape(match) + "&end=" + end
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("exporting %s from victoria-metrics: %w", match, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("exporting %s from victoria-metrics: %w", match, err)
	}
	defer drainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("exporting %s from victoria-metrics: status %d: %s", match, resp.StatusCode, b)
	}
	return decodeExport(resp.Body, match)
}

// decodeExport parses /api/v1/export's JSON lines, one series per line.
func decodeExport(r io.Reader, match string) ([]ExportedSeries, error) {
	var out []ExportedSeries
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var s struct {
			Metric     map[string]string `json:"metric"`
			Values     []jsonFloat       `json:"values"`
			Timestamps []int64           `json:"timestamps"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("exporting %s from victoria-metrics: line %d: %w", match, line, err)
		}
		if len(s.Values) != len(s.Timestamps) {
			return nil, fmt.Errorf("exporting %s from victoria-metrics: line %d: %d values but %d timestamps", match, line, len(s.Values), len(s.Timestamps))
		}
		e := ExportedSeries{Metric: s.Metric, Values: make([]float64, len(s.Values)), Timestamps: s.Timestamps}
		for i, x := range s.Values {
			e.Values[i] = float64(x)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("exporting %s from victoria-metrics: %w", match, err)
	}
	return out, nil
}

// Query flushes and runs an instant query, returning its vector result.
func (v *VictoriaMetrics) Query(ctx context.Context, q string) ([]Sample, error) {
	if err := v.ForceFlush(ctx); err != nil {
		return nil, err
	}
	return queryVector(ctx, v.URL, q, nil)
}

// QueryLookback runs an instant query at time at whose lookback is
// lookback: VictoriaMetrics' step parameter of an instant query (5m by
// default), which plays the part of Prometheus' lookback delta. Call
// ForceFlush first to see what was just written.
func (v *VictoriaMetrics) QueryLookback(ctx context.Context, q string, at time.Time, lookback time.Duration) ([]Sample, error) {
	return queryVectorParams(ctx, v.URL, q, at, url.Values{"step": {strconv.FormatInt(lookback.Milliseconds(), 10) + "ms"}}, nil)
}
