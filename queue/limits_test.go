package queue

import (
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// limitedRelabeler is a relabeler with limits and no rules, counting into
// fresh counters.
func limitedRelabeler(l SeriesLimits) (*relabeler, *keepingAppender, map[string]prometheus.Counter, prometheus.Counter) {
	next := &keepingAppender{}
	r := newRelabeler(next, nil, slog.New(slog.DiscardHandler))
	r.limits = l
	r.dropped = map[string]prometheus.Counter{}
	for _, reason := range reasons {
		r.dropped[reason] = prometheus.NewCounter(prometheus.CounterOpts{Name: "dropped"})
	}
	r.truncated = prometheus.NewCounter(prometheus.CounterOpts{Name: "truncated"})
	return r, next, r.dropped, r.truncated
}

// A series past a limit is dropped before it is sent, counted by reason,
// at every snapshot; the others pass unchanged.
func TestSeriesLimitsDrop(t *testing.T) {
	long := strings.Repeat("x", 65)
	r, next, dropped, truncated := limitedRelabeler(SeriesLimits{
		MaxLabelNamesPerSeries: 3, MaxLabelNameLength: 10, MaxLabelValueLength: 64,
	})
	series := [][]string{
		{"ok", "a", "1", "b", "2"},
		{"too_many", "a", "1", "b", "2", "c", "3"},
		{"long_name", "a_very_long_name", "1"},
		{"long_value", "a", long},
		{strings.Repeat("n", 65)}, // a metric name is a value too
		{"fits", "a", long[:64]},
	}
	for tick := range 2 {
		r.appendItems(t.Context(), testSeries(int64(1000*(tick+1)), series...))
	}
	require.Equal(t, []string{
		`ok{a="1",b="2"} 1`, `fits{a="` + long[:64] + `"} 6`,
		`ok{a="1",b="2"} 1`, `fits{a="` + long[:64] + `"} 6`,
	}, next.series(t))
	require.Equal(t, 2.0, testutil.ToFloat64(dropped[ReasonTooManyLabels]), "once a snapshot")
	require.Equal(t, 6.0, testutil.ToFloat64(dropped[ReasonLabelTooLong]))
	require.Zero(t, testutil.ToFloat64(truncated))
}

// With action truncate, a value past the limit is cut to it, on a whole
// character, and ends with a hash of the whole value, so that two values
// with one prefix stay two series; a too long metric name is still dropped.
func TestSeriesLimitsTruncate(t *testing.T) {
	const limit = 40
	prefix := strings.Repeat("é", 20) // 40 bytes
	r, next, dropped, truncated := limitedRelabeler(SeriesLimits{MaxLabelValueLength: limit, Action: LimitActionTruncate})
	r.appendItems(t.Context(), testSeries(1000,
		[]string{"m", "note", prefix + "one"},
		[]string{"m", "note", prefix + "two"},
		[]string{strings.Repeat("n", limit+1)},
		[]string{"m", "note", "short"},
	))
	require.Len(t, next.items, 3)
	var values []string
	for _, it := range next.items {
		ls, err := encode.DecodeLabels(it.Labels)
		require.NoError(t, err)
		for _, l := range ls {
			if l.Name == "note" {
				values = append(values, l.Value)
			}
		}
	}
	require.Len(t, values, 3)
	for _, v := range values[:2] {
		require.LessOrEqual(t, len(v), limit)
		require.True(t, utf8.ValidString(v), "cut on a whole character: %q", v)
		require.True(t, strings.HasPrefix(v, prefix[:limit-truncatedSuffixLen-1]), v)
		require.Regexp(t, `~[0-9a-f]{16}$`, v)
	}
	require.NotEqual(t, values[0], values[1], "two series stay two")
	require.NotEqual(t, next.items[0].Hash, next.items[1].Hash)
	require.Equal(t, "short", values[2])
	require.Equal(t, 2.0, testutil.ToFloat64(truncated))
	require.Equal(t, 1.0, testutil.ToFloat64(dropped[ReasonLabelTooLong]), "the metric name")
}

func TestSeriesLimitsConfig(t *testing.T) {
	c, err := decodeEntry(t, `url: http://r/api/v1/write
series_limits:
  max_label_names_per_series: 30
  max_label_name_length: 1024
  max_label_value_length: 2048
  action: truncate
`)
	require.NoError(t, err)
	require.Equal(t, SeriesLimits{MaxLabelNamesPerSeries: 30, MaxLabelNameLength: 1024, MaxLabelValueLength: 2048, Action: LimitActionTruncate}, c.SeriesLimits)
	require.False(t, DefaultConfig.SeriesLimits.enabled(), "off by default")

	for text, want := range map[string]string{
		"max_label_value_length: -1":                    "series_limits.max_label_value_length: must not be negative (0 means no limit), not -1",
		"action: cut":                                   `series_limits.action: must be "drop" or "truncate", not "cut"`,
		"max_label_value_length: 8\n  action: truncate": "series_limits.max_label_value_length: must be more than 17 to truncate, not 8",
	} {
		_, err := decodeEntry(t, "url: http://r/api/v1/write\nseries_limits:\n  "+text+"\n")
		require.ErrorContains(t, err, want)
	}
}

// An endpoint with series_limits drops what is past them before its shards,
// counted in samples_dropped_total, and sends the rest.
func TestSeriesLimitsEndpoint(t *testing.T) {
	srv := newTestServer(t, nil)
	e, m, err := buildTestEndpoint(t, srv.URL, func(c *Config) { c.SeriesLimits.MaxLabelValueLength = 8 }, nil)
	require.NoError(t, err)
	e.feed.start() // the shards run; the feed hands them what is offered
	fr := &Frame{}
	var set encode.SeriesSet
	var b encode.LabelsBuilder
	for _, s := range []string{"s0", "s1-too-long", "s2"} {
		b.Reset()
		b.Add(encode.MetricName, "m")
		b.Add("series", s)
		b.AppendTo(&set, 1)
	}
	fr.Timestamp = 1000
	fr.Objects = append(fr.Objects, encode.Object{Set: &set})
	e.Offer(fr)
	require.NoError(t, stop(t, e, 10*time.Second))
	var got []string
	for _, r := range srv.requests(t) {
		for _, s := range r.samples {
			got = append(got, s.series)
		}
	}
	require.ElementsMatch(t, []string{"s0", "s2"}, got)
	require.Equal(t, 1.0, counter(t, m.samplesDropped, ReasonLabelTooLong))
	require.Equal(t, 2.0, counter(t, m.samplesSent))
}
