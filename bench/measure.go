package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// samplePeriod is how often /proc is read.
const samplePeriod = 250 * time.Millisecond

// procResult is what was measured of one process.
type procResult struct {
	// name is the process' short name.
	name string
	// cpuWindow and cpuStartup are CPU seconds (user + system) used in the
	// window and in start-up.
	cpuWindow, cpuStartup float64
	// peak is VmHWM at the end of the window: the largest RSS of the
	// process' life.
	peak uint64
	// startupPeak is VmHWM when start-up ended.
	startupPeak uint64
	// steady is the median RSS over the window.
	steady uint64
}

// sideResult is what was measured of one setup.
type sideResult struct {
	// key and title name the setup (see side).
	key, title string
	// procs are its processes.
	procs []procResult
	// cpuWindow and cpuStartup are the processes' CPU seconds, summed.
	cpuWindow, cpuStartup float64
	// peak is the largest RSS: for one process its VmHWM, for several the
	// largest sum of their RSS sampled at the same moment.
	peak uint64
	// startupPeak is peak, up to the end of start-up.
	startupPeak uint64
	// steady is the median over the window of the processes' summed RSS.
	steady uint64
	// startup is from starting the processes to the arrival of the last
	// sample of the first complete snapshot or scrape.
	startup time.Duration
	// window is the measured window's length.
	window time.Duration
	// delivered is what the receiver got during the window.
	delivered counters
	// perInterval is the median number of samples per snapshot or scrape
	// taken in the window; intervals is how many there were.
	perInterval int64
	intervals   int
	// deliveryMedian and deliveryMax are, over those snapshots or scrapes,
	// the time from the sample timestamp to the arrival of its last sample.
	deliveryMedian, deliveryMax time.Duration
	// lags are the lags of the markers written in the window, sorted.
	lags []time.Duration
	// lagMissing counts markers written in the window that never arrived.
	lagMissing int
	// churnUpdates and churnFailures count pod status writes in the window.
	churnUpdates, churnFailures int
	// scrape is what reading the page of state series costs (scrape.go),
	// measured after the window.
	scrape scrapeCost
}

// measureOpts are the measurement's timing.
type measureOpts struct {
	// window is how long the measurement lasts after warm-up.
	window time.Duration
	// interval is the snapshot and scrape interval.
	interval time.Duration
	// ticksPerSecond converts /proc CPU ticks to seconds.
	ticksPerSecond float64
	// logf prints progress.
	logf func(string, ...any)
}

// measureSide starts one setup, waits for its first complete snapshot or
// scrape and one more interval, measures for the window, waits for the
// lag markers written in the window, and stops the setup.
//
// Each run gets a folder of its own: with -first both a setup runs twice,
// and its second run must not start from the first's disk buffer (or, for
// the Prometheus agent, its WAL), which it would replay at start-up.
func measureSide(ctx context.Context, s side, workDir string, env sideEnv, r *receiver, ch *churner, o measureOpts) (*sideResult, error) {
	dir, err := os.MkdirTemp(workDir, s.key+"-")
	if err != nil {
		return nil, fmt.Errorf("%s: creating its folder in %s: %w", s.key, workDir, err)
	}
	r.reset()
	start := time.Now()
	procs, target, err := s.start(dir, env)
	if err != nil {
		return nil, fmt.Errorf("%s: starting: %w", s.key, err)
	}
	defer func() {
		for _, p := range procs {
			p.Stop(30 * time.Second)
		}
	}()
	pids := make([]int, len(procs))
	for i, p := range procs {
		pids[i] = p.Pid()
	}
	samp := newSampler(pids...)
	sampCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go samp.run(sampCtx, samplePeriod)

	// Warm-up: the first complete snapshot, then one more interval.
	o.logf("%s: started, waiting for the first complete snapshot or scrape", s.title)
	warmupLimit := 5*time.Minute + 6*o.interval
	var full timestamp
	err = poll(ctx, procs, warmupLimit, func() bool {
		var ok bool
		full, ok = firstFull(r.timestamps())
		return ok
	})
	if err != nil {
		return nil, fmt.Errorf("%s: waiting for a complete snapshot or scrape: %w (arrived: %s)", s.key, err, describeTimestamps(r.timestamps()))
	}
	startupEnd := full.last
	o.logf("%s: first complete interval (%d samples) delivered %.1fs after start", s.title, full.samples, startupEnd.Sub(start).Seconds())
	if err := poll(ctx, procs, 2*o.interval, func() bool { return time.Since(startupEnd) >= o.interval }); err != nil {
		return nil, fmt.Errorf("%s: warm-up: %w", s.key, err)
	}

	// The window.
	ch.stats()
	before := samp.read()
	c0 := r.totals()
	o.logf("%s: measuring for %s", s.title, o.window)
	if err := poll(ctx, procs, o.window+time.Second, func() bool { return time.Since(before.at) >= o.window }); err != nil {
		return nil, fmt.Errorf("%s: during the window: %w", s.key, err)
	}
	after := samp.read()
	c1 := r.totals()
	updates, failures := ch.stats()
	for i, rd := range after.r {
		if !rd.ok {
			return nil, fmt.Errorf("%s: could not read /proc/%d of %s at the end of the window", s.key, pids[i], procs[i].Name)
		}
	}

	// Drain: markers written near the end of the window arrive up to an
	// interval and a send later.
	drain := 2*o.interval + 30*time.Second
	_ = poll(ctx, procs, drain, func() bool {
		_, missing := r.lags(before.at, after.at)
		return missing == 0
	})
	stopSampling()
	o.logf("%s: reading %s %d times", s.title, target.url, scrapes)
	scrape, err := measureScrape(ctx, target, pids[target.proc], o.ticksPerSecond)
	if err != nil {
		return nil, fmt.Errorf("%s: measuring a scrape: %w", s.key, err)
	}

	res := &sideResult{
		scrape: scrape,
		key:    s.key, title: s.title,
		startup: startupEnd.Sub(start), window: after.at.Sub(before.at),
		delivered: diffCounters(c1, c0), churnUpdates: updates, churnFailures: failures,
	}
	startupTick, ok := samp.lastBefore(startupEnd)
	if !ok {
		return nil, fmt.Errorf("%s: no /proc reading before the end of start-up", s.key)
	}
	windowTicks := samp.between(before.at, after.at)
	for i, p := range procs {
		pr := procResult{
			name:        p.Name,
			cpuWindow:   float64(after.r[i].cpuTicks-before.r[i].cpuTicks) / o.ticksPerSecond,
			cpuStartup:  float64(startupTick.r[i].cpuTicks) / o.ticksPerSecond,
			peak:        after.r[i].hwm,
			startupPeak: startupTick.r[i].hwm,
			steady:      median(rssOf(windowTicks, i)),
		}
		res.procs = append(res.procs, pr)
		res.cpuWindow += pr.cpuWindow
		res.cpuStartup += pr.cpuStartup
	}
	if len(procs) == 1 {
		res.peak, res.startupPeak, res.steady = res.procs[0].peak, res.procs[0].startupPeak, res.procs[0].steady
	} else {
		res.peak = maxSum(samp.between(start, after.at))
		res.startupPeak = maxSum(samp.between(start, startupEnd))
		var sums []uint64
		for _, t := range windowTicks {
			if s, ok := t.rssSum(); ok {
				sums = append(sums, s)
			}
		}
		res.steady = median(sums)
	}
	res.perInterval, res.intervals, res.deliveryMedian, res.deliveryMax = intervalStats(r.timestamps(), before.at, after.at)
	arrivals, missing := r.lags(before.at, after.at)
	for _, a := range arrivals {
		res.lags = append(res.lags, a.lag)
	}
	slices.Sort(res.lags)
	res.lagMissing = missing
	return res, nil
}

// poll calls done every 250 ms until it returns true; it fails when a
// process exits, ctx ends, or limit passes.
func poll(ctx context.Context, procs []*testenv.Process, limit time.Duration, done func() bool) error {
	deadline := time.Now().Add(limit)
	for {
		if done() {
			return nil
		}
		for _, p := range procs {
			if p.Exited() {
				return fmt.Errorf("%s exited (%w); log %s:\n%s", p.Name, p.Err(), p.Log, p.Tail())
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(samplePeriod):
		}
	}
}

// describeTimestamps summarises what arrived, for an error message.
func describeTimestamps(tss []timestamp) string {
	if len(tss) == 0 {
		return "nothing"
	}
	s := ""
	for i, t := range tss {
		if i == 8 {
			s += " ..."
			break
		}
		s += fmt.Sprintf(" %d samples at %s;", t.samples, time.UnixMilli(t.ms).Format(time.TimeOnly))
	}
	return s
}

// diffCounters returns b - a.
func diffCounters(b, a counters) counters {
	return counters{
		requests: b.requests - a.requests, samples: b.samples - a.samples, stale: b.stale - a.stale,
		wireBytes: b.wireBytes - a.wireBytes, rawBytes: b.rawBytes - a.rawBytes, targetBytes: b.targetBytes - a.targetBytes,
		rejected: b.rejected - a.rejected, zstdRequests: b.zstdRequests - a.zstdRequests,
	}
}

// rssOf returns process i's RSS in each pass where it was read.
func rssOf(ticks []tick, i int) []uint64 {
	var out []uint64
	for _, t := range ticks {
		if t.r[i].ok {
			out = append(out, t.r[i].rss)
		}
	}
	return out
}

// maxSum returns the largest summed RSS among passes where every process
// was read.
func maxSum(ticks []tick) uint64 {
	var m uint64
	for _, t := range ticks {
		if s, ok := t.rssSum(); ok && s > m {
			m = s
		}
	}
	return m
}

// median returns the median of xs (the upper one of an even count), 0 for
// none.
func median[T int64 | uint64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// intervalStats summarises the snapshots or scrapes whose timestamp is in
// [from, to]: the median samples per timestamp, their number, and the
// median and largest time from timestamp to the arrival of the last sample.
func intervalStats(tss []timestamp, from, to time.Time) (perInterval int64, n int, deliveryMedian, deliveryMax time.Duration) {
	var counts []int64
	var delivery []time.Duration
	for _, t := range tss {
		at := time.UnixMilli(t.ms)
		if at.Before(from) || at.After(to) {
			continue
		}
		counts = append(counts, t.samples)
		d := t.last.Sub(at)
		delivery = append(delivery, d)
		deliveryMax = max(deliveryMax, d)
	}
	return median(counts), len(counts), median(delivery), deliveryMax
}
