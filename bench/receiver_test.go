package main

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
)

// series builds a time series with __name__ first and the given pairs.
func series(name string, v float64, ts int64, pairs ...string) prompb.TimeSeries {
	ls := []prompb.Label{{Name: "__name__", Value: name}}
	for i := 0; i+1 < len(pairs); i += 2 {
		ls = append(ls, prompb.Label{Name: pairs[i], Value: pairs[i+1]})
	}
	return prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Value: v, Timestamp: ts}}}
}

// encode marshals and snappy-compresses a write request.
func encode(t *testing.T, ts ...prompb.TimeSeries) []byte {
	t.Helper()
	raw, err := (&prompb.WriteRequest{Timeseries: ts}).Marshal()
	require.NoError(t, err)
	return snappy.Encode(nil, raw)
}

// post sends body to the receiver's handler and returns the status.
func post(t *testing.T, r *receiver, body []byte) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	return rec.Code
}

func TestReceiverCounts(t *testing.T) {
	r := newReceiver("")
	clock := time.Unix(1000, 0)
	r.now = func() time.Time { return clock }

	written := time.Unix(990, 0)
	r.expect("ns", "web-1", 1001, written)
	r.expect("ns", "web-2", 1002, written)

	b1 := encode(t,
		series("kube_pod_info", 1, 5000, "namespace", "ns", "pod", "web-1"),
		series(markerFamily, 1001, 5000, "container", "sidecar", "namespace", "ns", "pod", "web-1"),
		series(markerFamily, 7, 5000, "container", markerContainer, "namespace", "ns", "pod", "web-2"),
		series("kube_pod_info", math.Float64frombits(value.StaleNaN), 5000, "namespace", "ns", "pod", "gone"),
	)
	require.Equal(t, http.StatusNoContent, post(t, r, b1))

	clock = clock.Add(3 * time.Second)
	b2 := encode(t,
		series(markerFamily, 1001, 5000, "container", markerContainer, "namespace", "ns", "pod", "web-1"),
		series("kube_node_info", 1, 6000, "instance", "127.0.0.1:8080", "job", "kube-state-metrics", "node", "n"),
	)
	require.Equal(t, http.StatusNoContent, post(t, r, b2))

	// Refused: not snappy; snappy but not a write request.
	require.Equal(t, http.StatusBadRequest, post(t, r, []byte("plain")))
	require.Equal(t, http.StatusBadRequest, post(t, r, snappy.Encode(nil, []byte{0xff, 0xff, 0xff})))

	c := r.totals()
	require.Equal(t, int64(2), c.requests)
	require.Equal(t, int64(6), c.samples)
	require.Equal(t, int64(1), c.stale)
	require.Equal(t, int64(len(b1)+len(b2)), c.wireBytes)
	raw1, err := snappy.DecodedLen(b1)
	require.NoError(t, err)
	raw2, err := snappy.DecodedLen(b2)
	require.NoError(t, err)
	require.Equal(t, int64(raw1+raw2), c.rawBytes)
	// Each label field: tag, length, then name and value with their own
	// tags and lengths.
	require.Equal(t, int64((2+2+len("instance")+2+len("127.0.0.1:8080"))+(2+2+len("job")+2+len("kube-state-metrics"))), c.targetBytes)
	require.Equal(t, int64(2), c.rejected)

	tss := r.timestamps()
	require.Len(t, tss, 2)
	require.Equal(t, int64(5000), tss[0].ms)
	require.Equal(t, int64(5), tss[0].samples)
	require.Equal(t, time.Unix(1000, 0), tss[0].first)
	require.Equal(t, time.Unix(1003, 0), tss[0].last)
	require.Equal(t, int64(6000), tss[1].ms)
	require.Equal(t, int64(1), tss[1].samples)

	// web-1's marker arrived only on the app container, 13 s after it was
	// written; web-2's value did not match, so it is still missing.
	got, missing := r.lags(written, written)
	require.Equal(t, []arrival{{written: written, lag: 13 * time.Second}}, got)
	require.Equal(t, 1, missing)
	got, missing = r.lags(written.Add(time.Second), clock)
	require.Empty(t, got)
	require.Zero(t, missing, "markers written outside the range are left out")

	r.expect("ns", "web-2", 1003, written)
	r.cancel("ns", "web-2")
	_, missing = r.lags(written, written)
	require.Zero(t, missing)

	r.reset()
	require.Equal(t, counters{}, r.totals())
	require.Empty(t, r.timestamps())
}

func TestReceiverForwards(t *testing.T) {
	var gotBody []byte
	var gotHeader http.Header
	status := http.StatusNoContent
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		gotBody, _ = io.ReadAll(req.Body)
		gotHeader = req.Header.Clone()
		w.WriteHeader(status)
	}))
	defer upstream.Close()

	r := newReceiver(upstream.URL + "/api/v1/write")
	body := encode(t, series("up", 1, 1, "job", "x"))
	require.Equal(t, http.StatusNoContent, post(t, r, body))
	require.Equal(t, body, gotBody, "the body is passed on unchanged")
	require.Equal(t, "snappy", gotHeader.Get("Content-Encoding"))
	require.Equal(t, "application/x-protobuf", gotHeader.Get("Content-Type"))
	require.Equal(t, int64(1), r.totals().samples)

	status = http.StatusServiceUnavailable
	require.Equal(t, http.StatusServiceUnavailable, post(t, r, body), "the real receiver's refusal is passed back, so the sender retries")
	require.Equal(t, int64(1), r.totals().samples, "refused samples are not counted as delivered")
	require.Equal(t, int64(1), r.totals().rejected)

	upstream.Close()
	require.Equal(t, http.StatusBadGateway, post(t, r, body))
}

func TestReceiverServes(t *testing.T) {
	r := newReceiver("")
	url, stop, err := r.serve()
	require.NoError(t, err)
	defer stop()
	resp, err := http.Post(url, "application/x-protobuf", bytes.NewReader(encode(t, series("up", 1, 1))))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, int64(1), r.totals().samples)
}

func TestFirstFull(t *testing.T) {
	at := func(ms, n int64) timestamp { return timestamp{ms: ms, tsStats: tsStats{samples: n}} }
	for _, tc := range []struct {
		name string
		tss  []timestamp
		want int64 // ms of the first full one; 0 for none
	}{
		{name: "nothing yet"},
		{name: "the next one may still be arriving", tss: []timestamp{at(1, 100), at(2, 100)}},
		{name: "first one full", tss: []timestamp{at(1, 100), at(2, 100), at(3, 10)}, want: 1},
		{name: "within 1%", tss: []timestamp{at(1, 990), at(2, 1000), at(3, 10)}, want: 1},
		{name: "partial first scrape", tss: []timestamp{at(1, 5), at(2, 100), at(3, 100), at(4, 1)}, want: 2},
		{name: "partial, next not yet known complete", tss: []timestamp{at(1, 5), at(2, 100), at(3, 100)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := firstFull(tc.tss)
			require.Equal(t, tc.want != 0, ok)
			require.Equal(t, tc.want, got.ms)
		})
	}
}

func TestIntervalStats(t *testing.T) {
	base := time.UnixMilli(100_000)
	mk := func(off time.Duration, n int64, delivered time.Duration) timestamp {
		at := base.Add(off)
		return timestamp{ms: at.UnixMilli(), tsStats: tsStats{samples: n, first: at, last: at.Add(delivered)}}
	}
	tss := []timestamp{
		mk(-10*time.Second, 1, time.Second), // before the window
		mk(0, 100, 2*time.Second),
		mk(10*time.Second, 102, 3*time.Second),
		mk(20*time.Second, 98, 7*time.Second),
		mk(40*time.Second, 1, time.Second), // after the window
	}
	per, n, med, mx := intervalStats(tss, base, base.Add(30*time.Second))
	require.Equal(t, int64(100), per)
	require.Equal(t, 3, n)
	require.Equal(t, 3*time.Second, med)
	require.Equal(t, 7*time.Second, mx)
}

// TestReceiverZstd checks VictoriaMetrics' protocol: a zstd body is
// decoded, counted as sent (compressed) and as a zstd request, and passed
// on with its headers.
func TestReceiverZstd(t *testing.T) {
	var gotHeader http.Header
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		gotHeader = req.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer upstream.Close()
	r := newReceiver(upstream.URL + "/api/v1/write")

	raw, err := (&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		series("kube_pod_info", 1, 5000, "namespace", "ns", "pod", "a"),
		series("kube_pod_info", 1, 5000, "namespace", "ns", "pod", "b"),
	}}).Marshal()
	require.NoError(t, err)
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	body := enc.EncodeAll(raw, nil)
	require.NoError(t, enc.Close())

	postZstd := func(b []byte) int {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(b))
		req.Header.Set("Content-Encoding", "zstd")
		req.Header.Set("X-VictoriaMetrics-Remote-Write-Version", "1")
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		return rec.Code
	}
	require.Equal(t, http.StatusNoContent, postZstd(body))
	require.Equal(t, "zstd", gotHeader.Get("Content-Encoding"))
	require.Equal(t, "1", gotHeader.Get("X-VictoriaMetrics-Remote-Write-Version"))
	require.Equal(t, http.StatusNoContent, post(t, r, encode(t, series("up", 1, 5000))))

	c := r.totals()
	require.Equal(t, int64(2), c.requests)
	require.Equal(t, int64(1), c.zstdRequests)
	require.Equal(t, int64(3), c.samples)
	require.Equal(t, int64(len(body)+len(encode(t, series("up", 1, 5000)))), c.wireBytes)

	// A snappy body sent as zstd is refused, as a real receiver refuses it.
	require.Equal(t, http.StatusBadRequest, postZstd(encode(t, series("up", 1, 5000))))
	require.Equal(t, int64(1), r.totals().rejected)
}
