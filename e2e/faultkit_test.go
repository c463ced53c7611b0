package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/agent"
	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// Helpers of the fault tests (faults_test.go, outage_test.go,
// apiserver_restart_test.go), and the harness's in-process agent.

// runInProcess runs the agent in the test's process on its configuration
// file until stop. Its registry is a new one unless the options give one;
// its logs go to a.logs unless they give a logger.
func (a *testAgent) runInProcess(t *testing.T) {
	t.Helper()
	cfg, err := config.LoadFile(a.configPath)
	if err != nil {
		text, _ := os.ReadFile(a.configPath)
		require.NoError(t, err, "config:\n%s", text)
	}
	o := a.opts.options
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.ConfigFile == "" {
		o.ConfigFile = a.configPath
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(a.logs, nil))
	}
	ag, err := agent.New(cfg, o)
	require.NoError(t, err)
	actx, cancel := context.WithCancel(a.context())
	done := make(chan error, 1)
	go func() { done <- ag.Run(actx) }()
	var once sync.Once
	var runErr error
	a.agent, a.reg = ag, o.Registry
	a.stopFn = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(time.Minute):
				runErr = fmt.Errorf("the agent did not stop within a minute")
			}
		})
		return runErr
	}
}

// labelKey is a series' identity: its labels sorted by name, as
// `{a="x", b="y"}` with __name__ among them.
func labelKey(m map[string]string) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", n, m[n])
	}
	b.WriteByte('}')
	return b.String()
}

// promLabelKey is labelKey for a Remote-Write series.
func promLabelKey(ls []prompb.Label) string {
	m := make(map[string]string, len(ls))
	for _, l := range ls {
		m[l.Name] = l.Value
	}
	return labelKey(m)
}

// sampleSet is the timestamps (ms) of the samples of each series, by
// labelKey.
type sampleSet map[string]map[int64]bool

// add records a sample; it reports whether the set already held it.
func (s sampleSet) add(key string, ts int64) (dup bool) {
	if s[key] == nil {
		s[key] = map[int64]bool{}
	}
	dup = s[key][ts]
	s[key][ts] = true
	return dup
}

// total is the number of samples in the set.
func (s sampleSet) total() int {
	n := 0
	for _, ts := range s {
		n += len(ts)
	}
	return n
}

// filter returns the series whose key holds every one of the substrings.
func (s sampleSet) filter(subs ...string) sampleSet {
	out := sampleSet{}
	for k, ts := range s {
		ok := true
		for _, sub := range subs {
			ok = ok && strings.Contains(k, sub)
		}
		if ok {
			out[k] = ts
		}
	}
	return out
}

// sorted returns a series' timestamps in order.
func (s sampleSet) sorted(key string) []int64 {
	out := make([]int64, 0, len(s[key]))
	for ts := range s[key] {
		out = append(out, ts)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// diff describes how got differs from want, series by series, or returns ""
// when they hold the same samples.
func (s sampleSet) diff(got sampleSet) string {
	var lines []string
	for k, want := range s {
		missing, extra := 0, 0
		for ts := range want {
			if !got[k][ts] {
				missing++
			}
		}
		for ts := range got[k] {
			if !want[ts] {
				extra++
			}
		}
		if missing > 0 || extra > 0 {
			lines = append(lines, fmt.Sprintf("%s: %d missing, %d extra (want %d)", k, missing, extra, len(want)))
		}
	}
	for k, ts := range got {
		if _, ok := s[k]; !ok {
			lines = append(lines, fmt.Sprintf("%s: not wanted, %d samples", k, len(ts)))
		}
	}
	sort.Strings(lines)
	if len(lines) > 20 {
		lines = append(lines[:20], fmt.Sprintf("... and %d more", len(lines)-20))
	}
	return strings.Join(lines, "\n")
}

// exportedSet turns stored series into a sampleSet, leaving out staleness
// markers.
func exportedSet(series []testenv.ExportedSeries) sampleSet {
	out := sampleSet{}
	for _, s := range series {
		k := labelKey(s.Metric)
		for i, ts := range s.Timestamps {
			if !encode.IsStaleNaN(s.Values[i]) {
				out.add(k, ts)
			}
		}
	}
	return out
}
