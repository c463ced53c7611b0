package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// reading is what /proc says about one process at one moment.
type reading struct {
	// cpuTicks is utime + stime, in clock ticks (every thread, not children).
	cpuTicks uint64
	// rss is VmRSS in bytes.
	rss uint64
	// hwm is VmHWM, the peak RSS since the process started, in bytes.
	hwm uint64
	// ok is false when /proc could not be read (the process had exited).
	ok bool
}

// parseStat returns utime and stime (fields 14 and 15, in clock ticks) from
// the text of /proc/<pid>/stat. The second field, the command name, is in
// parentheses and may itself hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(b []byte) (utime, stime uint64, err error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, 0, fmt.Errorf("no ')' closing the command name")
	}
	// After ")": state (field 3), ppid (4), ..., utime (14), stime (15).
	fields := strings.Fields(string(b[end+1:]))
	const utimeAt = 14 - 3
	if len(fields) <= utimeAt+1 {
		return 0, 0, fmt.Errorf("%d fields after the command name, want at least %d", len(fields), utimeAt+2)
	}
	if utime, err = strconv.ParseUint(fields[utimeAt], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("utime: %w", err)
	}
	if stime, err = strconv.ParseUint(fields[utimeAt+1], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("stime: %w", err)
	}
	return utime, stime, nil
}

// parseStatus returns VmRSS and VmHWM, in bytes, from the text of
// /proc/<pid>/status (where they are given in kB).
func parseStatus(b []byte) (rss, hwm uint64, err error) {
	var haveRSS, haveHWM bool
	for line := range strings.SplitSeq(string(b), "\n") {
		name, rest, found := strings.Cut(line, ":")
		if !found || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("%s: want \"<number> kB\", got %q", name, strings.TrimSpace(rest))
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", name, err)
		}
		if name == "VmRSS" {
			rss, haveRSS = kb*1024, true
		} else {
			hwm, haveHWM = kb*1024, true
		}
	}
	if !haveRSS || !haveHWM {
		return 0, 0, fmt.Errorf("VmRSS or VmHWM missing (a kernel thread or a zombie?)")
	}
	return rss, hwm, nil
}

// readProc reads /proc/<pid>/stat and /proc/<pid>/status.
func readProc(pid int) (reading, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return reading{}, err
	}
	ut, st, err := parseStat(stat)
	if err != nil {
		return reading{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return reading{}, err
	}
	rss, hwm, err := parseStatus(status)
	if err != nil {
		return reading{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return reading{cpuTicks: ut + st, rss: rss, hwm: hwm, ok: true}, nil
}

// clockTicks returns the kernel's clock ticks per second (sysconf
// _SC_CLK_TCK) from getconf, or 100, its value on every common Linux
// architecture, when getconf is missing.
func clockTicks() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		return 100
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil || n <= 0 {
		return 100
	}
	return n
}

// tick is one pass of the sampler over every watched process.
type tick struct {
	// at is when the pass started.
	at time.Time
	// r holds one reading per process, in the order of sampler.pids.
	r []reading
}

// sampler reads /proc for a fixed set of processes every period.
type sampler struct {
	pids []int
	// mu guards ticks.
	mu    sync.Mutex
	ticks []tick
}

// newSampler returns a sampler of the given processes.
func newSampler(pids ...int) *sampler { return &sampler{pids: pids} }

// read takes one pass now, records it, and returns it.
func (s *sampler) read() tick {
	t := tick{at: time.Now(), r: make([]reading, len(s.pids))}
	for i, pid := range s.pids {
		r, err := readProc(pid)
		if err == nil {
			t.r[i] = r
		}
	}
	s.mu.Lock()
	s.ticks = append(s.ticks, t)
	s.mu.Unlock()
	return t
}

// run reads every period until ctx ends.
func (s *sampler) run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	s.read()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.read()
		}
	}
}

// between returns the passes taken in [from, to].
func (s *sampler) between(from, to time.Time) []tick {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tick
	for _, t := range s.ticks {
		if !t.at.Before(from) && !t.at.After(to) {
			out = append(out, t)
		}
	}
	return out
}

// lastBefore returns the last pass taken at or before t, and whether there
// is one.
func (s *sampler) lastBefore(t time.Time) (tick, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.ticks) - 1; i >= 0; i-- {
		if !s.ticks[i].at.After(t) {
			return s.ticks[i], true
		}
	}
	return tick{}, false
}

// rssSum is the sum of the processes' RSS in one pass, and whether every
// process could be read.
func (t tick) rssSum() (uint64, bool) {
	var sum uint64
	for _, r := range t.r {
		if !r.ok {
			return 0, false
		}
		sum += r.rss
	}
	return sum, true
}
