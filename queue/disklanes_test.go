package queue

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// recorder is a receiver that answers each request as answer says and
// records which samples it accepted (2xx).
type recorder struct {
	*httptest.Server
	// answer returns the status of request i; it may block. Nil answers
	// 204.
	answer func(i int, r *http.Request) int

	// mu guards n, accepted and requests.
	mu sync.Mutex
	// n counts requests.
	n int
	// accepted holds the samples of each accepted request, in order.
	accepted [][]gotSample
	// requests holds the samples of every request, in order of arrival.
	requests [][]gotSample
}

func newRecorder(t *testing.T, answer func(i int, r *http.Request) int) *recorder {
	t.Helper()
	rc := &recorder{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		samples, err := decodeBody(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		i := rc.n
		rc.n++
		rc.requests = append(rc.requests, samples)
		rc.mu.Unlock()
		code := http.StatusNoContent
		if rc.answer != nil {
			code = rc.answer(i, r)
		}
		if code/100 == 2 {
			rc.mu.Lock()
			rc.accepted = append(rc.accepted, samples)
			rc.mu.Unlock()
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// count returns the number of requests so far.
func (rc *recorder) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.n
}

// got returns the accepted samples, in order.
func (rc *recorder) got() []gotSample {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []gotSample
	for _, r := range rc.accepted {
		out = append(out, r...)
	}
	return out
}

// waitCount waits until n requests have arrived.
func (rc *recorder) waitCount(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return rc.count() >= n }, 10*time.Second, time.Millisecond, "waiting for %d requests", n)
}

// roundItems returns one sample of each of the series s0..s<n-1> for round
// r: value r, timestamp one second per round.
func roundItems(n, r int) []Item {
	out := make([]Item, n)
	for i := range out {
		out[i] = item(fmt.Sprintf("s%d", i), float64(r), 1_700_000_000_000+int64(r)*1000)
	}
	return out
}

// wideRoundItems is roundItems with long, incompressible series names, so
// that a few rounds fill disk buffer segments.
func wideRoundItems(n, r int) []Item {
	out := make([]Item, n)
	for i := range out {
		name := fmt.Sprintf("s%d-%x", i, sha256.Sum256([]byte(strconv.Itoa(i))))
		out[i] = item(name, float64(r), 1_700_000_000_000+int64(r)*1000)
	}
	return out
}

// perSeries returns each series' values in the order they arrived.
func perSeries(samples []gotSample) map[string][]float64 {
	out := map[string][]float64{}
	for _, s := range samples {
		out[s.series] = append(out[s.series], s.value)
	}
	return out
}

// requireRounds checks that each of n series got exactly rounds from..to-1,
// in order.
func requireRounds(t *testing.T, samples []gotSample, n, from, to int) {
	t.Helper()
	got := perSeries(samples)
	require.Len(t, got, n, "series")
	var want []float64
	for r := from; r < to; r++ {
		want = append(want, float64(r))
	}
	for name, values := range got {
		require.Equal(t, want, values, "series %s", name)
	}
}

// withDisk sets the disk buffer directory, then applies change.
func withDisk(dir string, change func(*Config)) func(*Config) {
	return func(c *Config) {
		c.DiskBuffer.Directory = dir
		if change != nil {
			change(c)
		}
	}
}

// gaugeOf reads one of the endpoint's gauges.
func gaugeOf(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	switch name {
	case "queue_length":
		return testutil.ToFloat64(m.queueLength.WithLabelValues(testEndpoint))
	case "shards":
		return testutil.ToFloat64(m.shards.WithLabelValues(testEndpoint))
	case "shards_desired":
		return testutil.ToFloat64(m.buffer.desired.WithLabelValues(testEndpoint))
	case "buffer_bytes":
		return testutil.ToFloat64(m.buffer.bytes.WithLabelValues(testEndpoint))
	case "buffer_segments":
		return testutil.ToFloat64(m.buffer.segments.WithLabelValues(testEndpoint))
	}
	t.Fatalf("unknown gauge %s", name)
	return 0
}

// requireNoDrops checks that no sample was dropped for any reason.
func requireNoDrops(t *testing.T, m *Metrics) {
	t.Helper()
	for _, r := range reasons {
		require.Zero(t, counter(t, m.samplesDropped, r), "dropped %s", r)
	}
}

// copyTree copies dir, as a killed process leaves it, into a new
// temporary directory.
func copyTree(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	require.NoError(t, err)
	return dst
}

// A receiver outage: Append goes on without blocking, batches whose retries
// end stay in the buffer (none is dropped), and once the receiver is back
// the backlog drains in order while new rounds keep arriving.
func TestDiskBufferOutage(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	srv := newRecorder(t, func(int, *http.Request) int {
		if down.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	e, m := newTestEndpoint(t, srv.URL, withDisk(t.TempDir(), func(c *Config) {
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 2, 2
		c.QueueConfig.MaxSamplesPerSend = 20
		c.QueueConfig.MaxRetryDuration = 20 * time.Millisecond
	}))
	const series = 50
	start := time.Now()
	for r := range 20 {
		require.Equal(t, series, e.Append(t.Context(), roundItems(series, r)))
	}
	require.Less(t, time.Since(start), 2*time.Second, "Append does not wait for the receiver")
	// The outage outlasts max_retry_duration several times over.
	require.Eventually(t, func() bool {
		return time.Since(start) > 10*20*time.Millisecond && srv.count() >= 10
	}, 10*time.Second, time.Millisecond)
	require.Positive(t, counter(t, m.samplesFailed))
	require.Zero(t, counter(t, m.samplesDropped, ReasonRetriesDone), "kept, not dropped")
	require.Equal(t, float64(20*series), gaugeOf(t, m, "queue_length"))
	require.Positive(t, gaugeOf(t, m, "buffer_bytes"))
	require.Positive(t, gaugeOf(t, m, "buffer_segments"))

	down.Store(false)
	for r := 20; r < 30; r++ {
		require.Equal(t, series, e.Append(t.Context(), roundItems(series, r)))
	}
	require.NoError(t, stop(t, e, 10*time.Second))
	requireRounds(t, srv.got(), series, 0, 30)
	require.Equal(t, float64(30*series), counter(t, m.samplesSent))
	requireNoDrops(t, m)
	require.Zero(t, gaugeOf(t, m, "queue_length"))
	require.Zero(t, gaugeOf(t, m, "buffer_bytes"), "closed buffers leave the gauge")
}

// A killed agent (its directory copied while a request is in flight)
// restarts where it stopped: every sample arrives, and only the batch that
// was in flight, several records marked together, is sent again, counted
// as resent. A receiver that refuses that resent batch (400, as Prometheus
// does once it holds newer samples) has it counted apart from bad data.
func TestDiskBufferRestartAfterKill(t *testing.T) {
	dir := t.TempDir()
	hold := make(chan struct{})
	srv1 := newRecorder(t, func(i int, r *http.Request) int {
		if i < 2 {
			return http.StatusNoContent
		}
		select { // the third request never gets an answer
		case <-r.Context().Done():
		case <-hold:
		}
		return http.StatusServiceUnavailable
	})
	t.Cleanup(func() { close(hold) }) // before srv1 closes
	shards := func(c *Config) {
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 1, 1
		c.QueueConfig.MaxSamplesPerSend = 10
	}
	const series, rounds = 4, 10
	// Records of one round (4 samples) each, queued before the lane starts:
	// requests of two records, 8 samples.
	e1, m1, err := buildTestEndpoint(t, srv1.URL, withDisk(dir, shards), func(e *Endpoint) {
		for r := range rounds {
			require.Equal(t, series, e.Append(t.Context(), roundItems(series, r)))
		}
	})
	require.NoError(t, err)
	srv1.waitCount(t, 3)
	killed := copyTree(t, dir)
	require.NoError(t, stop(t, e1, 50*time.Millisecond), "nothing is dropped: it stays on disk")
	requireNoDrops(t, m1)
	requireRounds(t, srv1.got(), series, 0, 4)
	srv1.mu.Lock()
	inFlight := srv1.requests[2]
	srv1.mu.Unlock()
	require.Len(t, inFlight, 8, "rounds 4 and 5 in flight")

	t.Run("accepted", func(t *testing.T) {
		srv2 := newRecorder(t, nil)
		e2, m2 := newTestEndpoint(t, srv2.URL, withDisk(copyTree(t, killed), shards))
		require.NoError(t, stop(t, e2, 10*time.Second))
		require.Equal(t, inFlight, srv2.accepted[0], "first the batch that was in flight, as it was")
		requireRounds(t, srv2.got(), series, 4, rounds)
		require.Equal(t, float64(len(inFlight)), counter(t, m2.buffer.resent), "resent: the batch in flight, no more")
		requireNoDrops(t, m2)
	})
	t.Run("refused as already stored", func(t *testing.T) {
		srv2 := newRecorder(t, func(i int, _ *http.Request) int {
			if i == 0 {
				return http.StatusBadRequest
			}
			return http.StatusNoContent
		})
		e2, m2 := newTestEndpoint(t, srv2.URL, withDisk(copyTree(t, killed), shards))
		require.NoError(t, stop(t, e2, 10*time.Second))
		requireRounds(t, srv2.got(), series, 6, rounds)
		require.Equal(t, float64(len(inFlight)), counter(t, m2.samplesDropped, ReasonResent))
		require.Zero(t, counter(t, m2.samplesDropped, ReasonBadRequest))
		require.Zero(t, counter(t, m2.buffer.resent))
	})
}

// At the size cap the oldest batches go, counted; the batch in flight and
// the newest stay, so each series gets its oldest and newest rounds with
// one gap between, in order.
func TestDiskBufferSizeCap(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	srv := newRecorder(t, func(int, *http.Request) int {
		if down.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	const capBytes = 1 << 20
	e, m := newTestEndpoint(t, srv.URL, withDisk(t.TempDir(), func(c *Config) {
		c.DiskBuffer.MaxBytes = capBytes
		c.QueueConfig.MaxRetryDuration = 20 * time.Millisecond
	}))
	const series = 200
	rounds := 0
	for ; counter(t, m.samplesDropped, ReasonBufferFull) == 0; rounds++ {
		require.Less(t, rounds, 20000, "the cap was never reached")
		require.Equal(t, series, e.Append(t.Context(), wideRoundItems(series, rounds)))
	}
	for end := rounds + 20; rounds < end; rounds++ {
		e.Append(t.Context(), wideRoundItems(series, rounds))
	}
	_, segment := laneSizes(capBytes, 1)
	require.LessOrEqual(t, gaugeOf(t, m, "buffer_bytes"), float64(capBytes))
	dropped := counter(t, m.samplesDropped, ReasonBufferFull)
	require.Equal(t, float64(rounds*series)-dropped, gaugeOf(t, m, "queue_length"))
	t.Logf("%d rounds of %d samples, %d dropped, %.0f bytes on disk in %.0f segments of at most %d",
		rounds, series, int(dropped), gaugeOf(t, m, "buffer_bytes"), gaugeOf(t, m, "buffer_segments"), segment)

	down.Store(false)
	require.NoError(t, stop(t, e, 30*time.Second))
	got := srv.got()
	require.Equal(t, float64(rounds*series), float64(len(got))+dropped, "every sample sent or counted")
	require.Equal(t, float64(len(got)), counter(t, m.samplesSent))
	for name, values := range perSeries(got) {
		require.True(t, slices.IsSorted(values), "series %s in order", name)
		require.Equal(t, 0.0, values[0], "series %s: the batch in flight was kept", name)
		require.Equal(t, float64(rounds-1), values[len(values)-1], "series %s: the newest kept", name)
		gaps := 0
		for i := 1; i < len(values); i++ {
			require.NotEqual(t, values[i-1], values[i], "series %s: no duplicates", name)
			if values[i] != values[i-1]+1 {
				gaps++
			}
		}
		require.Equal(t, 1, gaps, "series %s: one run of the oldest dropped", name)
	}
}

// A corrupt segment is skipped and counted at the next start; what else
// the buffer holds is sent, in order.
func TestDiskBufferCorruptSegment(t *testing.T) {
	dir := t.TempDir()
	change := withDisk(dir, func(c *Config) {
		c.DiskBuffer.MaxBytes = 2 << 20 // segments of 512 KiB
		c.QueueConfig.MaxRetryDuration = 20 * time.Millisecond
	})
	down := newRecorder(t, func(int, *http.Request) int { return http.StatusServiceUnavailable })
	e1, m1 := newTestEndpoint(t, down.URL, change)
	const series = 300
	rounds := 0
	for ; gaugeOf(t, m1, "buffer_segments") < 4; rounds++ {
		require.Less(t, rounds, 20000)
		e1.Append(t.Context(), wideRoundItems(series, rounds))
	}
	require.NoError(t, stop(t, e1, 50*time.Millisecond))
	requireNoDrops(t, m1)

	segs, err := filepath.Glob(filepath.Join(dir, "g*", "lane-000", "*.seg"))
	require.NoError(t, err)
	sort.Strings(segs)
	require.GreaterOrEqual(t, len(segs), 4)
	bad := segs[1]
	data, err := os.ReadFile(bad)
	require.NoError(t, err)
	data[len(data)/2] ^= 0xff
	require.NoError(t, os.WriteFile(bad, data, 0o644))

	srv := newRecorder(t, nil)
	e2, m2 := newTestEndpoint(t, srv.URL, change)
	require.NoError(t, stop(t, e2, 30*time.Second))
	require.Equal(t, 1.0, counter(t, m2.buffer.corrupt))
	requireNoDrops(t, m2)
	require.Zero(t, gaugeOf(t, m2, "queue_length"), "what could not be read was never counted as queued")
	got := perSeries(srv.got())
	require.Len(t, got, series)
	for name, values := range got {
		require.True(t, slices.IsSorted(values), "series %s in order", name)
		require.Less(t, len(values), rounds, "series %s: the corrupt part is gone", name)
		require.Equal(t, float64(rounds-1), values[len(values)-1], "series %s: later segments were read", name)
	}
}

// One directory serves one endpoint at a time.
func TestDiskBufferLock(t *testing.T) {
	dir := t.TempDir()
	srv := newRecorder(t, nil)
	e, _ := newTestEndpoint(t, srv.URL, withDisk(dir, nil))
	_, _, err := buildTestEndpoint(t, srv.URL, withDisk(dir, nil), nil)
	require.ErrorContains(t, err, "is in use by another endpoint or process")
	require.ErrorContains(t, err, `endpoint "test": disk_buffer `+dir)
	require.NoError(t, stop(t, e, 10*time.Second))
	e, _ = newTestEndpoint(t, srv.URL, withDisk(dir, nil))
	require.NoError(t, stop(t, e, 10*time.Second), "free again after Stop")
}

// Restarted with another shard count, the agent first sends what the old
// shards hold, then the new rounds, so every series stays in order; the
// drained generation's directory is removed.
func TestDiskBufferRestartWithOtherShardCount(t *testing.T) {
	dir := t.TempDir()
	down := newRecorder(t, func(int, *http.Request) int { return http.StatusServiceUnavailable })
	const series = 30
	e1, _ := newTestEndpoint(t, down.URL, withDisk(dir, func(c *Config) {
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 3, 3
		c.QueueConfig.MaxRetryDuration = 20 * time.Millisecond
	}))
	for r := range 10 {
		e1.Append(t.Context(), roundItems(series, r))
	}
	require.NoError(t, stop(t, e1, 50*time.Millisecond))
	old, err := filepath.Glob(filepath.Join(dir, "g*-3"))
	require.NoError(t, err)
	require.Len(t, old, 1)

	// Slow answers, so that new rounds are queued while the old shards
	// still drain.
	srv := newRecorder(t, func(int, *http.Request) int {
		time.Sleep(2 * time.Millisecond)
		return http.StatusNoContent
	})
	e2, m2 := newTestEndpoint(t, srv.URL, withDisk(dir, func(c *Config) {
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 1, 2
		c.QueueConfig.MaxSamplesPerSend = 5
	}))
	require.Equal(t, 2.0, gaugeOf(t, m2, "shards"), "3 shards are not allowed any more: the nearest count")
	for r := 10; r < 20; r++ {
		require.Equal(t, series, e2.Append(t.Context(), roundItems(series, r)))
	}
	require.NoError(t, stop(t, e2, 30*time.Second))
	requireRounds(t, srv.got(), series, 0, 20)
	requireNoDrops(t, m2)
	_, err = os.Stat(old[0])
	require.ErrorIs(t, err, os.ErrNotExist, "the drained generation is removed")
	kept, err := filepath.Glob(filepath.Join(dir, "g*-2"))
	require.NoError(t, err)
	require.Len(t, kept, 1, "the current generation stays for the next start")
}

// A reload hands a disk buffer over: the old endpoint stops, a new one of
// the same name opens the directory, and both share one Metrics. The
// backlog is in queue_length once, not once per endpoint that held it.
func TestDiskBufferHandoverQueueLength(t *testing.T) {
	dir := t.TempDir()
	m := NewMetrics(prometheus.NewRegistry())
	open := func(url string, change func(*Config)) *Endpoint {
		t.Helper()
		cfg := DefaultConfig
		cfg.URL, cfg.Name = url, testEndpoint
		cfg.QueueConfig.MinBackoff, cfg.QueueConfig.MaxBackoff = time.Millisecond, 10*time.Millisecond
		withDisk(dir, change)(&cfg)
		require.NoError(t, cfg.Validate())
		e, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Metrics: m, UserAgent: testUserAgent})
		require.NoError(t, err)
		return e
	}
	const n = 20
	down := newRecorder(t, func(int, *http.Request) int { return http.StatusServiceUnavailable })
	e1 := open(down.URL, func(c *Config) { c.QueueConfig.MaxRetryDuration = 20 * time.Millisecond })
	e1.Start()
	require.Equal(t, n, e1.Append(t.Context(), roundItems(n, 0)))
	require.Equal(t, float64(n), gaugeOf(t, m, "queue_length"))
	require.NoError(t, stop(t, e1, 50*time.Millisecond))
	require.Zero(t, gaugeOf(t, m, "queue_length"), "the stopped endpoint holds nothing")

	// Opened and closed without starting (a reload that failed later on).
	e2 := open(down.URL, nil)
	require.Equal(t, float64(n), gaugeOf(t, m, "queue_length"))
	e2.Close()
	require.Zero(t, gaugeOf(t, m, "queue_length"))

	srv := newRecorder(t, nil)
	e3 := open(srv.URL, nil)
	require.Equal(t, float64(n), gaugeOf(t, m, "queue_length"), "the backlog, once")
	e3.Start()
	require.Equal(t, n, e3.Append(t.Context(), roundItems(n, 1)))
	require.NoError(t, stop(t, e3, 10*time.Second))
	requireRounds(t, srv.got(), n, 0, 2)
	require.Zero(t, gaugeOf(t, m, "queue_length"))
}

// The disk buffer's directories are 0700 and its files 0600: they hold
// the cluster's labels and annotations.
func TestDiskBufferModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "buffer", "central") // created by New
	srv := newRecorder(t, func(int, *http.Request) int { return http.StatusServiceUnavailable })
	e, _ := newTestEndpoint(t, srv.URL, withDisk(dir, func(c *Config) {
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 2, 2
	}))
	require.Equal(t, 10, e.Append(t.Context(), roundItems(10, 0)))
	require.Equal(t, 10, e.Append(t.Context(), roundItems(10, 1)))
	srv.waitCount(t, 1) // a batch in flight: its records marked in the checkpoint
	require.NoError(t, stop(t, e, 50*time.Millisecond))

	var dirs, files int
	err := filepath.WalkDir(filepath.Dir(dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs++
			require.Equal(t, fs.FileMode(0o700), info.Mode().Perm(), "directory %s", path)
		} else {
			files++
			require.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), "file %s", path)
		}
		return nil
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, dirs, 5, "buffer, central, generation, two lanes")
	require.GreaterOrEqual(t, files, 3, "lock and segments")
	checkpoints, err := filepath.Glob(filepath.Join(dir, "g*", "lane-*", "checkpoint"))
	require.NoError(t, err)
	require.NotEmpty(t, checkpoints)
}
