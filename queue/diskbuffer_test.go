package queue

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue/diskbuffer"
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
		samples, err := decodeRequest(r)
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

// roundFrame is the frame of round r of series s0..s<n-1>: one object,
// value r, timestamp one second per round, as the agent's snapshots are.
// With wide, the series are wideRoundItems' and the object is a new one
// each round (a pod replaced by another), so that every frame stores its
// series in full.
func roundFrame(n, r int, wide bool) *encode.Frame {
	items := roundItems(n, r)
	if wide {
		items = wideRoundItems(n, r)
	}
	set := &encode.SeriesSet{}
	for _, it := range items {
		off := uint32(len(set.Buf))
		set.Buf = append(set.Buf, it.Labels...)
		set.Refs = append(set.Refs, encode.Ref{Off: off, Len: uint32(len(it.Labels)), Hash: it.Hash, Value: it.Value})
	}
	key := uint64(1)
	if wide {
		key += uint64(r)
	}
	return &encode.Frame{Timestamp: items[0].Timestamp, Objects: []encode.Object{{Key: key, Set: set}}}
}

// frameItems expands a frame into items, as the agent's feed does.
func frameItems(f *encode.Frame) []Item {
	var out []Item
	for _, o := range f.Objects {
		for i, r := range o.Set.Refs {
			out = append(out, Item{Sample: encode.Sample{Labels: o.Set.Labels(i), Value: r.Value, Timestamp: f.Timestamp}, Hash: r.Hash})
		}
	}
	for _, s := range f.Stale {
		out = append(out, Item{Sample: encode.Sample{Labels: s.Labels, Value: encode.StaleNaN, Timestamp: f.Timestamp}, Hash: s.Hash})
	}
	return out
}

// pushStored hands the shards every frame of e's disk buffer not yet handed
// out, as the agent's feed does: NextFrame, Append, Flush, FramePushed.
func pushStored(t *testing.T, e *Endpoint) {
	t.Helper()
	for {
		f, info, err := e.nextFrame()
		if errors.Is(err, diskbuffer.ErrEmpty) {
			return
		}
		require.NoError(t, err)
		items := frameItems(f)
		require.Equal(t, len(items), e.appendItems(t.Context(), items))
		e.flush()
		e.framePushed(f, info)
	}
}

// writeRounds writes rounds from..to-1 of n series to e's disk buffer and,
// with push, hands them to the shards.
func writeRounds(t *testing.T, e *Endpoint, n, from, to int, push bool) {
	t.Helper()
	for r := from; r < to; r++ {
		require.NoError(t, e.writeFrame(roundFrame(n, r, false)))
		if push {
			pushStored(t, e)
		}
	}
}

// A receiver outage: snapshots are written and handed to the shards without
// waiting for the receiver, batches whose retries end are kept (none is
// dropped), and once the receiver is back the backlog drains in order while
// new rounds keep arriving.
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
	writeRounds(t, e, series, 0, 20, true)
	require.Less(t, time.Since(start), 2*time.Second, "nothing waits for the receiver")
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
	writeRounds(t, e, series, 20, 30, true)
	require.Eventually(t, func() bool { return gaugeOf(t, m, "queue_length") == 0 }, 10*time.Second, time.Millisecond,
		"every frame acknowledged once delivered")
	require.NoError(t, stop(t, e, 10*time.Second))
	requireRounds(t, srv.got(), series, 0, 30)
	require.Equal(t, float64(30*series), counter(t, m.samplesSent))
	requireNoDrops(t, m)
	require.Zero(t, gaugeOf(t, m, "queue_length"))
	require.Zero(t, gaugeOf(t, m, "buffer_bytes"), "a closed buffer leaves the gauge")
}

// A killed agent (its directory copied while a request is in flight)
// restarts where it stopped: every sample arrives, and only the frames that
// were in flight are sent again, counted as resent. A receiver that refuses
// a resent batch (400, as Prometheus does once it holds newer samples) has
// it counted apart from bad data.
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
	// Frames of 4 samples, requests of 10: the first two requests settle
	// rounds 0 to 4 exactly.
	e1, m1, err := buildTestEndpoint(t, srv1.URL, withDisk(dir, shards), func(e *Endpoint) {
		writeRounds(t, e, series, 0, rounds, true)
	})
	require.NoError(t, err)
	srv1.waitCount(t, 3)
	killed := copyTree(t, dir)
	require.NoError(t, stop(t, e1, 50*time.Millisecond), "nothing is dropped: it stays on disk")
	requireNoDrops(t, m1)
	requireRounds(t, srv1.got(), series, 0, 5)

	t.Run("accepted", func(t *testing.T) {
		srv2 := newRecorder(t, nil)
		// New snapshots behind the resent ones, and batches of 7: a batch
		// that would hold both is split, so that only the resent are
		// counted as such.
		// All queued before the shard starts, so that it takes full batches.
		e2, m2, err := buildTestEndpoint(t, srv2.URL, withDisk(copyTree(t, killed), func(c *Config) {
			shards(c)
			c.QueueConfig.MaxSamplesPerSend = 7
		}), func(e *Endpoint) {
			writeRounds(t, e, series, rounds, rounds+3, false)
			pushStored(t, e)
		})
		require.NoError(t, err)
		require.NoError(t, stop(t, e2, 10*time.Second))
		requireRounds(t, srv2.got(), series, 5, rounds+3)
		require.Equal(t, float64(series*(rounds-5)), counter(t, m2.buffer.resent), "resent: the frames in flight, no more")
		requireNoDrops(t, m2)
	})
	t.Run("refused as already stored", func(t *testing.T) {
		// As if the request in flight at the kill had been stored: the
		// receiver holds rounds 5 and 6 and refuses (400, as Prometheus
		// does, the whole request) any request with a sample of them.
		var srv2 *recorder
		srv2 = newRecorder(t, func(i int, _ *http.Request) int {
			srv2.mu.Lock()
			defer srv2.mu.Unlock()
			for _, s := range srv2.requests[i] {
				if s.value == 5 || s.value == 6 {
					return http.StatusBadRequest
				}
			}
			return http.StatusNoContent
		})
		e2, m2 := newTestEndpoint(t, srv2.URL, withDisk(copyTree(t, killed), shards))
		pushStored(t, e2)
		require.NoError(t, stop(t, e2, 10*time.Second))
		requireRounds(t, srv2.got(), series, 7, rounds)
		require.Equal(t, float64(2*series), counter(t, m2.samplesDropped, ReasonResent), "exactly the samples already stored")
		require.Zero(t, counter(t, m2.samplesDropped, ReasonBadRequest))
		require.Equal(t, float64(3*series), counter(t, m2.buffer.resent), "the rest of the snapshots in flight, delivered")
	})
}

// At the size cap the oldest snapshots go whole, counted; the newest stay,
// so each series gets an unbroken run of the newest rounds, in order.
func TestDiskBufferSizeCap(t *testing.T) {
	srv := newRecorder(t, nil)
	const capBytes = 1 << 20
	e, m := newTestEndpoint(t, srv.URL, withDisk(t.TempDir(), func(c *Config) {
		c.DiskBuffer.MaxBytes = capBytes
	}))
	const series, rounds = 500, 100
	for r := range rounds {
		require.NoError(t, e.writeFrame(roundFrame(series, r, true)))
		require.LessOrEqual(t, gaugeOf(t, m, "buffer_bytes"), float64(capBytes))
	}
	dropped := counter(t, m.samplesDropped, ReasonBufferFull)
	require.Positive(t, dropped)
	require.Zero(t, math.Mod(dropped, series), "whole snapshots")
	pushStored(t, e)
	require.NoError(t, stop(t, e, 10*time.Second))
	kept := rounds - int(dropped)/series
	requireRounds(t, srv.got(), series, rounds-kept, rounds)
}

// Two endpoints never share a directory: the second fails to open it until
// the first has stopped.
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

// queue_length counts a backlog once across a reload's handover: the
// endpoint that lets go of the directory takes it out, the next one on it
// counts it again.
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
	writeRounds(t, e1, n, 0, 1, true)
	require.Equal(t, float64(n), gaugeOf(t, m, "queue_length"))
	require.NoError(t, stop(t, e1, 50*time.Millisecond))
	require.Equal(t, n, e1.LeftOnDisk(), "the backlog stays on disk")
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
	pushStored(t, e3)
	writeRounds(t, e3, n, 1, 2, true)
	require.NoError(t, stop(t, e3, 10*time.Second))
	require.Zero(t, e3.LeftOnDisk(), "everything delivered")
	requireRounds(t, srv.got(), n, 0, 2)
	require.Zero(t, gaugeOf(t, m, "queue_length"))
}

// The disk buffer's directories are 0700 and its files 0600: they hold
// the cluster's labels and annotations.
func TestDiskBufferModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "buffer", "central") // created by New
	srv := newRecorder(t, func(int, *http.Request) int { return http.StatusServiceUnavailable })
	e, _ := newTestEndpoint(t, srv.URL, withDisk(dir, nil))
	writeRounds(t, e, 10, 0, 2, true)
	srv.waitCount(t, 1)
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
	require.GreaterOrEqual(t, dirs, 3, "buffer, central, frames")
	require.GreaterOrEqual(t, files, 3, "lock, segment, checkpoint")
}

// failingFS makes every write to a segment fail while failing is set, as a
// full disk does.
type failingFS struct {
	diskbuffer.FS
	failing *atomic.Bool
}

func (f failingFS) OpenFile(name string, flag int, perm os.FileMode) (diskbuffer.File, error) {
	if f.failing.Load() && flag&os.O_CREATE != 0 {
		return nil, syscall.ENOSPC
	}
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return failingFile{File: file, failing: f.failing}, nil
}

type failingFile struct {
	diskbuffer.File
	failing *atomic.Bool
}

func (f failingFile) WriteAt(b []byte, off int64) (int, error) {
	if f.failing.Load() {
		return 0, syscall.ENOSPC
	}
	return f.File.WriteAt(b, off)
}

// A disk that fails (no space: writes and new segments refused) costs the
// snapshots written meanwhile, counted as buffer_error, and nothing else:
// once it works again, later snapshots are written and delivered, and so
// are those written before it failed.
func TestDiskBufferWriteFailureRecovers(t *testing.T) {
	srv := newRecorder(t, nil)
	var failing atomic.Bool
	cfg := DefaultConfig
	cfg.URL, cfg.Name = srv.URL, testEndpoint
	cfg.DiskBuffer.Directory = t.TempDir()
	require.NoError(t, cfg.Validate())
	m := NewMetrics(prometheus.NewRegistry())
	e, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Metrics: m, UserAgent: testUserAgent,
		DiskFS: failingFS{FS: diskbuffer.OSFS, failing: &failing}})
	require.NoError(t, err)
	e.startShards()
	const series = 5
	writeRounds(t, e, series, 0, 3, true)
	failing.Store(true)
	for r := 3; r < 6; r++ {
		require.Error(t, e.writeFrame(roundFrame(series, r, false)))
	}
	require.Equal(t, float64(3*series), counter(t, m.samplesDropped, ReasonBufferError))
	failing.Store(false)
	writeRounds(t, e, series, 6, 9, true)
	require.NoError(t, stop(t, e, 10*time.Second))
	got := perSeries(srv.got())
	for name, values := range got {
		require.Equal(t, []float64{0, 1, 2, 6, 7, 8}, values, "series %s", name)
	}
	require.Len(t, got, series)
}
