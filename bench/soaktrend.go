package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// quantity is one thing the soak samples and judges.
type quantity struct {
	// name is its row in the table.
	name string
	// format renders a value.
	format func(float64) string
	// floor is the growth over the second half always taken as flat;
	// share is the same as a fraction of the half's mean. Noise (three
	// standard deviations of the residuals) may allow more.
	floor, share float64
	// counted is true for goroutines and descriptors: growth is judged
	// against floor alone, never against the noise.
	counted bool
}

// The quantities, in the order of soakSample's values.
var quantities = []quantity{
	{name: "RSS", format: mibOf, floor: 4 << 20, share: 0.02},
	{name: "heap in use", format: mibOf, floor: 4 << 20, share: 0.02},
	{name: "goroutines", format: whole, floor: 5, counted: true},
	{name: "open file descriptors", format: whole, floor: 3, counted: true},
	{name: "series in the map", format: whole, share: 0.01},
	{name: "disk buffer bytes", format: mibOf, floor: 1 << 20, share: 0.05},
}

// soakSample is one reading of the agent: one value per quantity.
type soakSample struct {
	at     time.Time
	values [6]float64
}

func mibOf(v float64) string { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }
func whole(v float64) string { return strconv.FormatFloat(math.Round(v), 'f', -1, 64) }

// fit is a least-squares line through (x, y): y = intercept + slope·x.
// resid is the standard deviation of the residuals.
type fit struct {
	slope, intercept, resid float64
}

// fitLine fits a line through the points; fewer than three give a zero
// fit.
func fitLine(x, y []float64) fit {
	n := float64(len(x))
	if len(x) < 3 || len(x) != len(y) {
		return fit{}
	}
	var sx, sy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if sxx == 0 {
		return fit{intercept: my}
	}
	f := fit{slope: sxy / sxx}
	f.intercept = my - f.slope*mx
	var ss float64
	for i := range x {
		r := y[i] - (f.intercept + f.slope*x[i])
		ss += r * r
	}
	// n-2 degrees of freedom: two parameters were fitted.
	f.resid = math.Sqrt(ss / (n - 2))
	return f
}

// trend is one quantity's row: its values at the start, the middle and
// the end, its slope over the second half and the verdict.
type trend struct {
	q                  quantity
	start, middle, end float64
	// perHour is the fitted slope, per hour; growth the fitted change over
	// the second half; allowed what counts as flat.
	perHour, growth, allowed float64
	flat                     bool
}

// trends judges every quantity over samples: the least-squares slope over
// the samples of the second half (from the run's middle on) times the
// half's length is the growth; it is flat when it is at most the allowed
// growth: the quantity's floor, its share of the half's mean, or three
// standard deviations of the residuals, whichever is largest (for
// goroutines and descriptors, the floor alone).
func trends(samples []soakSample) []trend {
	if len(samples) == 0 {
		return nil
	}
	t0 := samples[0].at
	half := samples[len(samples)-1].at.Sub(t0) / 2
	mid := t0.Add(half)
	var second []soakSample
	middle := samples[0]
	for _, s := range samples {
		if (s.at.Sub(mid)).Abs() < (middle.at.Sub(mid)).Abs() {
			middle = s
		}
		if !s.at.Before(mid) {
			second = append(second, s)
		}
	}
	out := make([]trend, len(quantities))
	for k, q := range quantities {
		x := make([]float64, len(second))
		y := make([]float64, len(second))
		var sum float64
		for i, s := range second {
			x[i] = s.at.Sub(t0).Hours()
			y[i] = s.values[k]
			sum += y[i]
		}
		f := fitLine(x, y)
		tr := trend{q: q, start: samples[0].values[k], middle: middle.values[k], end: samples[len(samples)-1].values[k], perHour: f.slope}
		tr.growth = f.slope * half.Hours()
		tr.allowed = q.floor
		if !q.counted {
			if len(y) > 0 {
				tr.allowed = max(tr.allowed, q.share*sum/float64(len(y)))
			}
			tr.allowed = max(tr.allowed, 3*f.resid)
		}
		tr.flat = tr.growth <= tr.allowed
		out[k] = tr
	}
	return out
}

// metricSums adds up the values of the named metrics, over all their
// label sets, from a text exposition page (no timestamps, as client_golang
// writes it). A metric missing from the page is missing from the map.
func metricSums(r io.Reader, names ...string) (map[string]float64, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		if !want[name] {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("line without a value: %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("value of %q: %w", line, err)
		}
		out[name] += v
	}
	return out, sc.Err()
}

// countFDs counts the open file descriptors of a process.
func countFDs(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, err
	}
	return len(ents), nil
}
