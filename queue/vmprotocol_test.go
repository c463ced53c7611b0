package queue

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// vmRequest is one request as vmServer saw it.
type vmRequest struct {
	// probe is a get_vm_proto_version request; bodyLen its body's length.
	probe   bool
	bodyLen int
	method  string
	// encoding, contentType, promVersion and vmVersion are the headers.
	encoding, contentType, promVersion, vmVersion string
	// series is the "series" label of each sample, decoded by the
	// request's own Content-Encoding and Content-Type.
	series []string
}

// vmServer answers the VictoriaMetrics protocol probe with probe(i) (i
// counts the probes) and writes with write(req), and records every request.
type vmServer struct {
	*httptest.Server
	probe func(i int, w http.ResponseWriter)
	write func(r vmRequest, w http.ResponseWriter)

	mu     sync.Mutex
	reqs   []vmRequest
	probes int
	errs   []error
}

func newVMServer(t *testing.T, probe func(i int, w http.ResponseWriter), write func(r vmRequest, w http.ResponseWriter)) *vmServer {
	s := &vmServer{probe: probe, write: write}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decodeVM(r)
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		if err != nil {
			s.errs = append(s.errs, err)
		}
		i := s.probes
		if req.probe {
			s.probes++
		}
		s.mu.Unlock()
		if req.probe {
			s.probe(i, w)
			return
		}
		s.write(req, w)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *vmServer) requests(t *testing.T) []vmRequest {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Empty(t, s.errs)
	return append([]vmRequest(nil), s.reqs...)
}

// decodeVM decodes a write request compressed with zstd or snappy, as its
// Content-Encoding says, holding a 1.0 or 2.0 request, as its Content-Type
// says.
func decodeVM(r *http.Request) (vmRequest, error) {
	req := vmRequest{
		probe: r.URL.Query().Get(probeQuery) != "", method: r.Method,
		encoding: r.Header.Get("Content-Encoding"), contentType: r.Header.Get("Content-Type"),
		promVersion: r.Header.Get(versionHeader), vmVersion: r.Header.Get(encode.VMVersionHeader),
	}
	b, err := io.ReadAll(r.Body)
	req.bodyLen = len(b)
	if err != nil || req.probe {
		return req, err
	}
	var raw []byte
	if req.encoding == "zstd" {
		d, err := zstd.NewReader(nil)
		if err != nil {
			return req, err
		}
		defer d.Close()
		if raw, err = d.DecodeAll(b, nil); err != nil {
			return req, err
		}
	} else if raw, err = snappy.Decode(nil, b); err != nil {
		return req, err
	}
	if req.contentType == encode.ContentTypeV2 {
		var wr writev2.Request
		if err := wr.Unmarshal(raw); err != nil {
			return req, err
		}
		for _, ts := range wr.Timeseries {
			for i := 0; i+1 < len(ts.LabelsRefs); i += 2 {
				if wr.Symbols[ts.LabelsRefs[i]] == "series" {
					req.series = append(req.series, wr.Symbols[ts.LabelsRefs[i+1]])
				}
			}
		}
		return req, nil
	}
	var wr prompb.WriteRequest
	if err := wr.Unmarshal(raw); err != nil {
		return req, err
	}
	for _, ts := range wr.Timeseries {
		for _, l := range ts.Labels {
			if l.Name == "series" {
				req.series = append(req.series, l.Value)
			}
		}
	}
	return req, nil
}

// answerVersion answers the probe as VictoriaMetrics does.
func answerVersion(_ int, w http.ResponseWriter) { _, _ = io.WriteString(w, "1") }

// noContent answers a write as a 1.0 receiver.
func noContent(_ vmRequest, w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }

func vmGauge(m *Metrics) float64 {
	return testutil.ToFloat64(m.vmProtocol.WithLabelValues(testEndpoint))
}

// requireVM checks that r is a VictoriaMetrics protocol request.
func requireVM(t *testing.T, r vmRequest) {
	t.Helper()
	require.False(t, r.probe)
	require.Equal(t, "zstd", r.encoding)
	require.Equal(t, encode.ContentTypeV1, r.contentType)
	require.Equal(t, "1", r.vmVersion)
	require.Empty(t, r.promVersion)
}

// requireV1 checks that r is a snappy Remote-Write 1.0 request.
func requireV1(t *testing.T, r vmRequest) {
	t.Helper()
	require.False(t, r.probe)
	require.Equal(t, "snappy", r.encoding)
	require.Equal(t, encode.ContentTypeV1, r.contentType)
	require.Equal(t, encode.VersionV1, r.promVersion)
	require.Empty(t, r.vmVersion)
}

// protocol: auto probes once, as vmagent did: an empty POST to the write URL
// with get_vm_proto_version=1 added to its query and the 1.0 headers; "1"
// makes every batch a zstd 1.0 request.
func TestAutoProbeVictoriaMetrics(t *testing.T) {
	srv := newVMServer(t, answerVersion, noContent)
	m := sendTwoAuto(t, srv.URL+"/api/v1/write?extra_label=a%3Db")

	reqs := srv.requests(t)
	require.Len(t, reqs, 3)
	require.True(t, reqs[0].probe)
	require.Equal(t, http.MethodPost, reqs[0].method)
	require.Zero(t, reqs[0].bodyLen)
	require.Equal(t, "snappy", reqs[0].encoding)
	require.Equal(t, encode.VersionV1, reqs[0].promVersion)
	for _, r := range reqs[1:] {
		requireVM(t, r)
		require.ElementsMatch(t, []string{"s0", "s1", "s2"}, r.series)
	}
	require.Equal(t, 6.0, counter(t, m.samplesSent))
	require.Equal(t, 1.0, vmGauge(m))
	require.Equal(t, 1.0, testutil.ToFloat64(m.protocol.WithLabelValues(testEndpoint)))
}

// The probe keeps the URL's own query.
func TestProbeURL(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.RawQuery)
		_, _ = io.WriteString(w, "1")
	}))
	defer srv.Close()
	for _, u := range []string{srv.URL + "/w", srv.URL + "/w?a=b"} {
		s, _ := newTestSender(t, u, nil)
		vm, err := s.probeVM(t.Context(), time.Second)
		require.NoError(t, err)
		require.True(t, vm)
	}
	require.Equal(t, []string{"get_vm_proto_version=1", "a=b&get_vm_proto_version=1"}, got)
}

// Answers that are not "1" with 200 are a no; a 5xx, 429 or no answer is
// asked again later.
func TestProbeAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		vm     bool
		err    bool
	}{
		{"VictoriaMetrics", 200, "1", true, false},
		{"a later version", 200, "2", true, false},
		{"version 0", 200, "0", false, false},
		{"not a number", 200, "ok", false, false},
		{"1 with a newline", 200, "1\n", false, false}, // vmagent parses the body as it is
		{"204", 204, "", false, false},
		{"Prometheus: 400", 400, "snappy: corrupt input", false, false},
		{"404", 404, "1", false, false},
		{"503", 503, "", false, true},
		{"429", 429, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			s, _ := newTestSender(t, srv.URL, nil)
			vm, err := s.probeVM(t.Context(), time.Second)
			require.Equal(t, tc.err, err != nil, "err %v", err)
			require.Equal(t, tc.vm, vm)
		})
	}
	s, _ := newTestSender(t, "http://127.0.0.1:1/", nil)
	_, err := s.probeVM(t.Context(), time.Second)
	require.Error(t, err, "connection refused")
}

// A receiver that does not answer the probe with "1" gets Remote-Write 2.0,
// which falls back to 1.0 where not accepted; it never sees a zstd body.
func TestAutoProbeNotVictoriaMetrics(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(r vmRequest, w http.ResponseWriter)
		want  string
	}{
		{"2.0 receiver", func(r vmRequest, w http.ResponseWriter) { answerWritten(w, len(r.series)) }, encode.ContentTypeV2},
		{"1.0 receiver", func(r vmRequest, w http.ResponseWriter) {
			if r.contentType == encode.ContentTypeV2 {
				w.WriteHeader(http.StatusUnsupportedMediaType)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}, encode.ContentTypeV1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newVMServer(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusBadRequest) }, tc.write)
			m := sendTwoAuto(t, srv.URL)

			reqs := srv.requests(t)
			require.True(t, reqs[0].probe)
			last := reqs[len(reqs)-1]
			require.Equal(t, tc.want, last.contentType)
			for _, r := range reqs[1:] {
				require.False(t, r.probe, "probed once")
				require.Equal(t, "snappy", r.encoding)
				require.Empty(t, r.vmVersion)
			}
			require.Equal(t, 6.0, counter(t, m.samplesSent))
			require.Zero(t, vmGauge(m))
		})
	}
}

// A zstd request answered 400 or 415 is sent again at once as snappy 1.0,
// and the endpoint stays on 1.0, as vmagent does; no sample is lost or
// counted twice.
func TestAutoVictoriaMetricsRefused(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusUnsupportedMediaType} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := newVMServer(t, answerVersion, func(r vmRequest, w http.ResponseWriter) {
				if r.encoding == "zstd" {
					w.WriteHeader(status)
					return
				}
				w.WriteHeader(http.StatusNoContent)
			})
			m := sendTwoAuto(t, srv.URL)

			reqs := srv.requests(t)
			require.Len(t, reqs, 4)
			require.True(t, reqs[0].probe)
			requireVM(t, reqs[1])
			for _, r := range reqs[2:] {
				requireV1(t, r)
				require.ElementsMatch(t, []string{"s0", "s1", "s2"}, r.series)
			}
			require.Equal(t, 6.0, counter(t, m.samplesSent))
			require.Zero(t, counter(t, m.samplesDropped, ReasonBadRequest))
			require.Equal(t, 1.0, counter(t, m.fallbacks, FallbackVMRefused))
			require.Zero(t, vmGauge(m))
		})
	}
}

// A probe that gets no answer (the receiver is not up yet) is asked again
// later; meanwhile batches go out with the Prometheus protocol.
func TestAutoProbeRetried(t *testing.T) {
	srv := newVMServer(t, func(i int, w http.ResponseWriter) {
		if i == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		answerVersion(i, w)
	}, noContent)
	e, m := newProtoEndpoint(t, srv.URL, ProtoV1, func(c *Config) {
		c.Protocol = ProtocolAuto
		c.MetadataConfig.Send = false
	})
	e.nego.mu.Lock()
	e.nego.retry = 0
	e.nego.mu.Unlock()
	e.appendItems(t.Context(), items(2, 1000))
	require.Eventually(t, func() bool { return counter(t, m.samplesSent) == 2 }, 5*time.Second, 5*time.Millisecond)
	e.appendItems(t.Context(), items(2, 2000))
	require.NoError(t, stop(t, e, 5*time.Second))

	reqs := srv.requests(t)
	require.True(t, reqs[0].probe)
	require.False(t, reqs[1].probe)
	require.NotEqual(t, "zstd", reqs[1].encoding, "sent before the receiver said")
	last := reqs[len(reqs)-1]
	requireVM(t, last)
	require.True(t, reqs[len(reqs)-2].probe, "asked again before the next batch")
	require.Equal(t, 4.0, counter(t, m.samplesSent))
	require.Equal(t, 1.0, vmGauge(m))
}

// protocol: victoriametrics sends zstd from the first batch, with no probe,
// and never falls back: a 400 is bad data, as for any protocol.
func TestVictoriaMetricsExplicit(t *testing.T) {
	srv := newVMServer(t, answerVersion, func(_ vmRequest, w http.ResponseWriter) { w.WriteHeader(http.StatusBadRequest) })
	e, m := newProtoEndpoint(t, srv.URL, ProtoV1, func(c *Config) {
		c.Protocol = ProtocolVictoriaMetrics
		c.MetadataConfig.Send = false
	})
	require.Equal(t, 1.0, vmGauge(m))
	e.appendItems(t.Context(), items(1, 1000))
	require.NoError(t, stop(t, e, 5*time.Second))

	reqs := srv.requests(t)
	require.Len(t, reqs, 1)
	requireVM(t, reqs[0])
	require.Equal(t, 1.0, counter(t, m.samplesDropped, ReasonBadRequest))
	require.Zero(t, counter(t, m.fallbacks, FallbackVMRefused))
	require.Equal(t, 1.0, vmGauge(m))
}

// protocol: prometheus (the default) never probes nor sends zstd.
func TestPrometheusProtocolNoProbe(t *testing.T) {
	srv := newVMServer(t, answerVersion, noContent)
	e, m := newProtoEndpoint(t, srv.URL, ProtoV1, func(c *Config) { c.MetadataConfig.Send = false })
	e.appendItems(t.Context(), items(2, 1000))
	require.NoError(t, stop(t, e, 5*time.Second))
	reqs := srv.requests(t)
	require.Len(t, reqs, 1)
	requireV1(t, reqs[0])
	require.Zero(t, vmGauge(m))
}

func TestProtocolValidate(t *testing.T) {
	cfg := DefaultConfig
	cfg.URL = "http://localhost/api/v1/write"
	require.Equal(t, ProtocolPrometheus, cfg.Protocol)
	cfg.Protocol = "vm"
	require.ErrorContains(t, cfg.Validate(), `protocol: must be "prometheus", "victoriametrics" or "auto", not "vm"`)
	cfg.Protocol, cfg.ProtobufMessage = ProtocolVictoriaMetrics, ProtoV2
	require.ErrorContains(t, cfg.Validate(), "protobuf_message: must be")
	for _, p := range []string{ProtocolPrometheus, ProtocolVictoriaMetrics, ProtocolAuto} {
		cfg.Protocol, cfg.ProtobufMessage = p, ProtoV1
		require.NoError(t, cfg.Validate(), p)
	}
	cfg.Headers = map[string]string{"X-VictoriaMetrics-Remote-Write-Version": "2"}
	require.ErrorContains(t, cfg.Validate(), "set by the Remote-Write protocol")
}

// decodeRequest is decodeBody for a request compressed with snappy or, as
// its Content-Encoding says, zstd.
func decodeRequest(r *http.Request) ([]gotSample, error) {
	if r.Header.Get("Content-Encoding") != "zstd" {
		return decodeBody(r.Body)
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	d, err := zstd.NewReader(nil)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	raw, err := d.DecodeAll(b, nil)
	if err != nil {
		return nil, err
	}
	return decodeBody(bytes.NewReader(snappy.Encode(nil, raw)))
}

// zstdOnly answers 415 to a request that is not zstd, so that a test
// whose receiver accepts only VictoriaMetrics' protocol sees any other
// request as a drop.
func zstdOnly(r *http.Request) int {
	if r.Header.Get("Content-Encoding") != "zstd" || r.Header.Get(encode.VMVersionHeader) != encode.VersionVM {
		return http.StatusUnsupportedMediaType
	}
	return http.StatusNoContent
}

// The disk buffer holds frames, not requests: replayed after an outage,
// they go out in VictoriaMetrics' protocol, every sample once.
func TestVictoriaMetricsDiskBufferOutage(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	srv := newRecorder(t, func(_ int, r *http.Request) int {
		if down.Load() {
			return http.StatusServiceUnavailable
		}
		return zstdOnly(r)
	})
	e, m := newTestEndpoint(t, srv.URL, withDisk(t.TempDir(), func(c *Config) {
		c.Protocol = ProtocolVictoriaMetrics
		c.MetadataConfig.Send = false
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 2, 2
		c.QueueConfig.MaxSamplesPerSend = 20
		c.QueueConfig.MaxRetryDuration = 20 * time.Millisecond
	}))
	const series = 50
	writeRounds(t, e, series, 0, 10, true)
	require.Eventually(t, func() bool { return srv.count() >= 5 }, 10*time.Second, time.Millisecond)
	require.Equal(t, float64(10*series), gaugeOf(t, m, "queue_length"))

	down.Store(false)
	writeRounds(t, e, series, 10, 15, true)
	require.Eventually(t, func() bool { return gaugeOf(t, m, "queue_length") == 0 }, 10*time.Second, time.Millisecond)
	require.NoError(t, stop(t, e, 10*time.Second))
	requireRounds(t, srv.got(), series, 0, 15)
	require.Equal(t, float64(15*series), counter(t, m.samplesSent))
	requireNoDrops(t, m)
}

// A VictoriaMetrics protocol batch answered 413 is split until it fits, and
// one answered 400 until the refused series is alone, each half again in
// zstd.
func TestVictoriaMetricsSplit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refuse  func(samples []gotSample) int
		sent    float64
		dropped string
	}{
		{"413 past 3 samples", func(s []gotSample) int {
			if len(s) > 3 {
				return http.StatusRequestEntityTooLarge
			}
			return 0
		}, 16, ""},
		{"400 for s5", func(s []gotSample) int {
			for _, g := range s {
				if g.series == "s5" {
					return http.StatusBadRequest
				}
			}
			return 0
		}, 15, ReasonBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var srv *recorder
			srv = newRecorder(t, func(i int, r *http.Request) int {
				srv.mu.Lock()
				s := srv.requests[i]
				srv.mu.Unlock()
				if code := tc.refuse(s); code != 0 {
					return code
				}
				return zstdOnly(r)
			})
			e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
				c.Protocol = ProtocolVictoriaMetrics
				c.MetadataConfig.Send = false
			})
			e.appendItems(t.Context(), items(16, 1000))
			require.NoError(t, stop(t, e, 5*time.Second))
			require.Greater(t, srv.count(), 2, "split")
			require.Equal(t, tc.sent, counter(t, m.samplesSent))
			require.Len(t, srv.got(), int(tc.sent))
			require.Zero(t, counter(t, m.samplesDropped, ReasonUnsupported), "every request zstd")
			if tc.dropped != "" {
				require.Equal(t, 1.0, counter(t, m.samplesDropped, tc.dropped))
			}
		})
	}
}

// sendTwoAuto sends two batches of 3 series through an endpoint with
// protocol: auto and no metadata to url, the second once the first is
// sent, and stops it.
func sendTwoAuto(t *testing.T, url string) *Metrics {
	t.Helper()
	e, m := newProtoEndpoint(t, url, ProtoV1, func(c *Config) {
		c.Protocol = ProtocolAuto
		c.MetadataConfig.Send = false
	})
	e.appendItems(t.Context(), items(3, 1000))
	require.Eventually(t, func() bool { return counter(t, m.samplesSent) == 3 }, 5*time.Second, 5*time.Millisecond)
	e.appendItems(t.Context(), items(3, 2000))
	require.NoError(t, stop(t, e, 5*time.Second))
	return m
}
