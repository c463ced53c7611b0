package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFitLineRecoversSlopeAndNoise(t *testing.T) {
	x := []float64{0, 1, 2, 3, 4, 5}
	y := make([]float64, len(x))
	for i := range x {
		y[i] = 10 + 2*x[i]
	}
	f := fitLine(x, y)
	require.InDelta(t, 2, f.slope, 1e-9)
	require.InDelta(t, 10, f.intercept, 1e-9)
	require.InDelta(t, 0, f.resid, 1e-9)

	// Alternating ±1 around a flat line: no slope, residuals about 1.
	for i := range y {
		y[i] = 5 + float64(1-2*(i%2))
	}
	f = fitLine(x, y)
	require.Less(t, math.Abs(f.slope), 0.3)
	require.InDelta(t, 1.1, f.resid, 0.2)

	require.Equal(t, fit{}, fitLine(x[:2], y[:2]), "two points fit nothing")
}

// samplesOf returns n samples a minute apart whose quantity k is f(i).
func samplesOf(n, k int, f func(i int) float64) []soakSample {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]soakSample, n)
	for i := range out {
		out[i].at = t0.Add(time.Duration(i) * time.Minute)
		for q := range out[i].values {
			out[i].values[q] = 100 << 20
		}
		out[i].values[k] = f(i)
	}
	return out
}

func TestTrendsJudgeGrowthAgainstNoiseAndFloors(t *testing.T) {
	const rss, goroutines = 0, 2
	// 1 MiB a minute of RSS: 30 MiB over the second half of an hour,
	// beyond 2 % of 100 MiB and any noise.
	grows := trends(samplesOf(61, rss, func(i int) float64 { return float64(100<<20 + i<<20) }))
	require.False(t, grows[rss].flat, "%+v", grows[rss])
	require.InDelta(t, 60<<20, grows[rss].perHour, 1<<10)
	require.Equal(t, float64(100<<20), grows[rss].start)
	require.Equal(t, float64(130<<20), grows[rss].middle)
	require.Equal(t, float64(160<<20), grows[rss].end)

	// A saw-tooth of ±8 MiB (a garbage collector) is noise.
	saw := trends(samplesOf(61, rss, func(i int) float64 { return float64(100<<20 + (i%4)*(8<<20)) }))
	require.True(t, saw[rss].flat, "%+v", saw[rss])

	// One goroutine more every five minutes: 6 over the half, past the
	// floor of 5, however noisy.
	leak := trends(samplesOf(61, goroutines, func(i int) float64 { return float64(40 + i/5 + 10*(i%2)) }))
	require.False(t, leak[goroutines].flat, "%+v", leak[goroutines])
	steady := trends(samplesOf(61, goroutines, func(i int) float64 { return float64(40 + 3*(i%2)) }))
	require.True(t, steady[goroutines].flat, "%+v", steady[goroutines])
	// The first half does not count: a climb that stops at the middle is
	// a warm-up.
	warm := trends(samplesOf(61, goroutines, func(i int) float64 { return float64(min(i, 30)) }))
	require.True(t, warm[goroutines].flat, "%+v", warm[goroutines])
}

func TestMetricSumsAddsLabelSets(t *testing.T) {
	page := `# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 42
kube_state_push_series{resource="pods"} 100
kube_state_push_series{resource="nodes"} 20
kube_state_push_series_other 7
kube_state_push_remote_buffer_bytes{endpoint="a b"} 1.5e+06
`
	got, err := metricSums(strings.NewReader(page), "go_goroutines", "kube_state_push_series", "kube_state_push_remote_buffer_bytes", "missing")
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"go_goroutines": 42, "kube_state_push_series": 120, "kube_state_push_remote_buffer_bytes": 1.5e6}, got)

	_, err = metricSums(strings.NewReader("go_goroutines x\n"), "go_goroutines")
	require.Error(t, err)
}
