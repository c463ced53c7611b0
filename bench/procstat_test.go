package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	// A command name with a space and a parenthesis, as a process may set.
	line := []byte("4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 1234 0 0 0 1507 253 0 0 20 0 12 0 98765 1234567 890 18446744073709551615\n")
	ut, st, err := parseStat(line)
	require.NoError(t, err)
	require.Equal(t, uint64(1507), ut)
	require.Equal(t, uint64(253), st)

	for name, bad := range map[string]string{
		"no parenthesis": "4242 prog S 1 2 3",
		"too short":      "4242 (prog) S 1 2 3 4 5 6 7 8 9 10",
		"not a number":   "4242 (prog) S 1 4242 4242 0 -1 4194560 1234 0 0 0 x 253 0",
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := parseStat([]byte(bad))
			require.Error(t, err)
		})
	}
}

func TestParseStatus(t *testing.T) {
	text := "Name:\tkube-state-push\nVmPeak:\t 1300000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t12\n"
	rss, hwm, err := parseStatus([]byte(text))
	require.NoError(t, err)
	require.Equal(t, uint64(100<<20), rss)
	require.Equal(t, uint64(200<<20), hwm)

	_, _, err = parseStatus([]byte("Name:\tkthreadd\nThreads:\t1\n"))
	require.ErrorContains(t, err, "VmRSS or VmHWM missing")
	_, _, err = parseStatus([]byte("VmHWM:\t12 MB\nVmRSS:\t1 kB\n"))
	require.ErrorContains(t, err, "VmHWM")
}

// The sampler reads this very process: its CPU time only grows, and its
// RSS is positive and below its high-water mark.
func TestSamplerReadsOwnProcess(t *testing.T) {
	s := newSampler(os.Getpid())
	first := s.read()
	require.True(t, first.r[0].ok)
	deadline := time.Now().Add(10 * time.Second)
	var last tick
	for {
		// Burn CPU until the kernel has counted at least one tick.
		x := 0
		for i := range 10_000_000 {
			x += i
		}
		_ = x
		last = s.read()
		if last.r[0].cpuTicks > first.r[0].cpuTicks || time.Now().After(deadline) {
			break
		}
	}
	require.Greater(t, last.r[0].cpuTicks, first.r[0].cpuTicks)
	require.Positive(t, last.r[0].rss)
	require.GreaterOrEqual(t, last.r[0].hwm, last.r[0].rss)
	require.Len(t, s.between(first.at, last.at), len(s.ticks))
	got, ok := s.lastBefore(last.at)
	require.True(t, ok)
	require.Equal(t, last.at, got.at)
	_, ok = s.lastBefore(first.at.Add(-time.Second))
	require.False(t, ok)

	gone := newSampler(1 << 30).read()
	require.False(t, gone.r[0].ok, "a process that does not exist reads as not ok")
	_, ok = gone.rssSum()
	require.False(t, ok)
}

func TestStats(t *testing.T) {
	require.Equal(t, int64(0), median([]int64(nil)))
	require.Equal(t, int64(3), median([]int64{5, 1, 3}))
	require.Equal(t, int64(4), median([]int64{4, 1, 3, 9}), "the upper middle of an even count")

	now := time.Now()
	ticks := []tick{
		{at: now, r: []reading{{rss: 10, ok: true}, {rss: 5, ok: true}}},
		{at: now.Add(time.Second), r: []reading{{rss: 30, ok: true}, {ok: false}}},
		{at: now.Add(2 * time.Second), r: []reading{{rss: 20, ok: true}, {rss: 7, ok: true}}},
	}
	require.Equal(t, uint64(27), maxSum(ticks), "a pass missing a process does not count")
	require.Equal(t, []uint64{10, 30, 20}, rssOf(ticks, 0))
	require.Equal(t, []uint64{5, 7}, rssOf(ticks, 1))
}
