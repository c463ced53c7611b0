package queue

import (
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// oneBatch sends every sample of a test in one batch of one shard.
func oneBatch(n int) func(*Config) {
	return func(c *Config) {
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 1, 1
		c.QueueConfig.MaxSamplesPerSend = n
	}
}

// refusing answers 400 with body, or 409 when conflict, to any request
// holding one of the bad series, and 204 to the others.
func refusing(t *testing.T, code int, body string, bad ...string) *testServer {
	t.Helper()
	isBad := map[string]bool{}
	for _, b := range bad {
		isBad[b] = true
	}
	var srv *testServer
	srv = newTestServer(t, func(i int, w http.ResponseWriter, _ *http.Request) {
		srv.mu.Lock()
		r := srv.reqs[i]
		srv.mu.Unlock()
		for _, s := range r.samples {
			if isBad[s.series] {
				http.Error(w, body, code)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return srv
}

// A batch the receiver refuses for one series, or a few, delivers every
// other series of it: the batch is split until each refused series is
// alone, and only those are dropped, counted by the answer's reason.
func TestRefusedBatchIsolatesTheBadSeries(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		code   int
		body   string
		bad    []string
		reason string
		// maxRequests bounds the requests the batch may cost.
		maxRequests int
		// oldBad gives the bad series a timestamp three hours older.
		oldBad bool
	}{
		{
			name: "one invalid series among 64", n: 64, code: 400, body: "invalid metric name or labels",
			bad: []string{"s37"}, reason: ReasonBadRequest, maxRequests: 1 + 2*6,
		},
		{
			name: "one out-of-order series among 1000", n: 1000, code: 400, body: "out of order sample",
			bad: []string{"s0"}, reason: ReasonBadRequest, maxRequests: 1 + 2*10,
		},
		{
			name: "three series among 100, Thanos' 409", n: 100, code: 409, body: "conflict",
			bad: []string{"s3", "s50", "s99"}, reason: ReasonConflict, maxRequests: 1 + 3*2*7,
		},
		{
			// One node's odd timestamp among a snapshot's samples.
			name: "one too old series among 16", n: 16, code: 400, body: prometheusOutOfBounds,
			bad: []string{"s15"}, reason: ReasonTooOld, maxRequests: 1 + 2*4, oldBad: true,
		},
		{
			name: "a lone sample", n: 1, code: 400, body: "invalid",
			bad: []string{"s0"}, reason: ReasonBadRequest, maxRequests: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := refusing(t, tt.code, tt.body, tt.bad...)
			e, m := newTestEndpoint(t, srv.URL, oneBatch(tt.n))
			in := items(tt.n, 1700000000000)
			if tt.oldBad {
				for i := range in {
					if containsAny([]gotSample{{series: "s" + strconv.Itoa(i)}}, tt.bad) {
						in[i].Timestamp -= 3 * 3600 * 1000
					}
				}
			}
			require.Equal(t, tt.n, e.appendItems(t.Context(), in))
			require.NoError(t, stop(t, e, 10*time.Second))

			reqs := srv.requests(t)
			require.LessOrEqual(t, len(reqs), tt.maxRequests)
			require.Len(t, reqs[0].samples, tt.n, "one batch first")
			// The requests answered 204 are those without a bad series.
			delivered := map[string]int{}
			var order []string
			for _, r := range reqs {
				if containsAny(r.samples, tt.bad) {
					continue
				}
				for _, s := range r.samples {
					delivered[s.series]++
					order = append(order, s.series)
				}
			}
			for i := range tt.n {
				s := "s" + strconv.Itoa(i)
				if containsAny([]gotSample{{series: s}}, tt.bad) {
					require.Zero(t, delivered[s], "%s is refused", s)
				} else {
					require.Equal(t, 1, delivered[s], "%s delivered once", s)
				}
			}
			require.True(t, sortedSeries(order), "the halves go in order: %v", order)

			good := tt.n - len(tt.bad)
			require.Equal(t, float64(good), counter(t, m.samplesSent))
			for _, r := range reasons {
				want := 0.0
				if r == tt.reason {
					want = float64(len(tt.bad))
				}
				require.Equal(t, want, counter(t, m.samplesDropped, r), "dropped %s", r)
			}
			t.Logf("%d samples, %d refused: %d requests", tt.n, len(tt.bad), len(reqs))
		})
	}
}

// A batch whose every sample is refused (all too old, say) costs a bounded
// number of requests, not twice as many as it has samples: once the budget
// is spent, what is still refused is dropped whole, counted.
func TestRefusedBatchBudget(t *testing.T) {
	const n = 512
	srv := newTestServer(t, answers(statusBody(400, "invalid metric name or labels")))
	e, m := newTestEndpoint(t, srv.URL, oneBatch(n))
	require.Equal(t, n, e.appendItems(t.Context(), items(n, 1700000000000)))
	require.NoError(t, stop(t, e, 10*time.Second))

	budget := 2 * bits.Len(uint(n-1)) * splitsPerRefusedSeries
	reqs := srv.requests(t)
	require.Len(t, reqs, 1+budget, "the batch, then its budget")
	require.Less(t, len(reqs), n/4)
	require.Zero(t, counter(t, m.samplesSent))
	require.Equal(t, float64(n), counter(t, m.samplesDropped, ReasonBadRequest), "every sample counted once")
	t.Logf("%d samples all refused: %d requests", n, len(reqs))
}

// A snapshot refused as too old (a receiver whose window has passed it, after
// an outage) is refused for its timestamp, which all its samples share:
// it is dropped whole at once, not split.
func TestRefusedBatchTooOldWhole(t *testing.T) {
	const n = 64
	srv := newTestServer(t, answers(statusBody(400, prometheusOutOfBounds)))
	e, m := newTestEndpoint(t, srv.URL, oneBatch(n))
	require.Equal(t, n, e.appendItems(t.Context(), items(n, 1700000000000)))
	require.NoError(t, stop(t, e, 10*time.Second))
	require.Len(t, srv.requests(t), 1)
	require.Equal(t, float64(n), counter(t, m.samplesDropped, ReasonTooOld))
	require.Zero(t, counter(t, m.samplesSent))
}

// A 2.0 receiver that stores the good series of a refused request and says
// how many (a partial write) is taken at its word: no split, the refused
// samples dropped, the others counted as sent.
func TestRefusedPartialWrite(t *testing.T) {
	srv := newProtoServer(t, func(_, n int, w http.ResponseWriter) {
		w.Header().Set(samplesWritten, strconv.Itoa(n-1))
		http.Error(w, "invalid metric name or labels, got {}", http.StatusBadRequest)
	})
	e, m := newProtoEndpoint(t, srv.URL, ProtoV2, oneBatch(8))
	require.Equal(t, 8, e.appendItems(t.Context(), items(8, 1000)))
	require.NoError(t, stop(t, e, 5*time.Second))

	require.Len(t, srv.requests(t), 1, "not split, not sent again")
	require.Equal(t, 7.0, counter(t, m.samplesSent))
	require.Equal(t, 1.0, counter(t, m.samplesDropped, ReasonBadRequest))
	require.Zero(t, counter(t, m.notWritten))
	require.Zero(t, counter(t, m.fallbacks, FallbackNoWrittenHeader))
}

// keepingReceiver is a fake receiver that, as Mimir does, stores the good
// samples of a request it refuses: a sample of a bad series is refused, an
// older one than the series holds is refused as out of order, an identical
// one accepted again.
type keepingReceiver struct {
	bad string
	// mu guards last.
	mu   sync.Mutex
	last map[string]gotSample
}

func (k *keepingReceiver) answer(samples []gotSample) (int, string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var errs []string
	for _, s := range samples {
		last, ok := k.last[s.series]
		switch {
		case s.series == k.bad:
			errs = append(errs, "received a series with an invalid label (err-mimir-label-invalid)")
		case ok && s.ts < last.ts:
			errs = append(errs, "the sample has been rejected because another sample with a more recent timestamp has already been ingested and out-of-order samples are not allowed (err-mimir-sample-out-of-order)")
		default:
			k.last[s.series] = s
		}
	}
	if len(errs) > 0 {
		return http.StatusBadRequest, strings.Join(errs, "\n")
	}
	return http.StatusNoContent, ""
}

// A receiver that keeps the good samples of a refused request refuses them
// as out of order when a split sends them again after newer ones: those are
// counted as resent, never as bad series; only the bad series' samples are.
func TestRefusedBatchStoredBefore(t *testing.T) {
	k := &keepingReceiver{bad: "s2", last: map[string]gotSample{}}
	var srv *testServer
	srv = newTestServer(t, func(i int, w http.ResponseWriter, _ *http.Request) {
		srv.mu.Lock()
		r := srv.reqs[i]
		srv.mu.Unlock()
		code, body := k.answer(r.samples)
		if code != http.StatusNoContent {
			http.Error(w, body, code)
			return
		}
		w.WriteHeader(code)
	})
	const series = 4
	e, m := newTestEndpoint(t, srv.URL, oneBatch(2*series))
	batch := append(items(series, 1000), items(series, 2000)...)
	require.Equal(t, 2*series, e.appendItems(t.Context(), batch))
	require.NoError(t, stop(t, e, 10*time.Second))

	require.Equal(t, 2.0, counter(t, m.samplesDropped, ReasonBadRequest), "the bad series' two samples")
	require.Equal(t, 3.0, counter(t, m.samplesDropped, ReasonResent), "the older samples of the others, stored at the first try")
	require.Equal(t, 3.0, counter(t, m.samplesSent))
	for _, s := range []string{"s0", "s1", "s3"} {
		require.Equal(t, int64(2000), k.last[s].ts, "%s holds its newest sample", s)
	}
	require.NotContains(t, k.last, "s2")
}

func containsAny(samples []gotSample, series []string) bool {
	for _, s := range samples {
		for _, b := range series {
			if s.series == b {
				return true
			}
		}
	}
	return false
}

// sortedSeries reports whether "s<i>" names come in increasing i.
func sortedSeries(names []string) bool {
	prev := -1
	for _, n := range names {
		i, err := strconv.Atoi(strings.TrimPrefix(n, "s"))
		if err != nil || i <= prev {
			return false
		}
		prev = i
	}
	return true
}
