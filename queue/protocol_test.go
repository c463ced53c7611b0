package queue

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// protoRequest is one request as protoServer decoded it, by its own
// Content-Type.
type protoRequest struct {
	contentType, version string
	// series is the "series" label of each sample.
	series []string
	// help is the HELP each 2.0 series carried, by metric name.
	help map[string]string
	// metadata is a 1.0 metadata-only request's entries.
	metadata []prompb.MetricMetadata
}

// protoServer records requests of either protocol version and answers as
// respond says (given the request's index and number of samples).
type protoServer struct {
	*httptest.Server
	respond func(i, samples int, w http.ResponseWriter)

	mu   sync.Mutex
	reqs []protoRequest
	errs []error
}

func newProtoServer(t *testing.T, respond func(i, samples int, w http.ResponseWriter)) *protoServer {
	s := &protoServer{respond: respond}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decodeAny(r)
		s.mu.Lock()
		i := len(s.reqs)
		s.reqs = append(s.reqs, req)
		if err != nil {
			s.errs = append(s.errs, err)
		}
		s.mu.Unlock()
		s.respond(i, len(req.series), w)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *protoServer) requests(t *testing.T) []protoRequest {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Empty(t, s.errs)
	return append([]protoRequest(nil), s.reqs...)
}

// decodeAny decodes a 1.0 or 2.0 body, by Content-Type, with the prompb
// types.
func decodeAny(r *http.Request) (protoRequest, error) {
	req := protoRequest{contentType: r.Header.Get("Content-Type"), version: r.Header.Get(versionHeader)}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return req, err
	}
	raw, err := snappy.Decode(nil, b)
	if err != nil {
		return req, err
	}
	switch req.contentType {
	case encode.ContentTypeV1:
		var wr prompb.WriteRequest
		if err := wr.Unmarshal(raw); err != nil {
			return req, err
		}
		req.metadata = wr.Metadata
		for _, ts := range wr.Timeseries {
			for _, l := range ts.Labels {
				if l.Name == "series" {
					req.series = append(req.series, l.Value)
				}
			}
		}
	case encode.ContentTypeV2:
		var wr writev2.Request
		if err := wr.Unmarshal(raw); err != nil {
			return req, err
		}
		req.help = map[string]string{}
		for _, ts := range wr.Timeseries {
			var name string
			for i := 0; i+1 < len(ts.LabelsRefs); i += 2 {
				switch wr.Symbols[ts.LabelsRefs[i]] {
				case "series":
					req.series = append(req.series, wr.Symbols[ts.LabelsRefs[i+1]])
				case "__name__":
					name = wr.Symbols[ts.LabelsRefs[i+1]]
				}
			}
			req.help[name] = wr.Symbols[ts.Metadata.HelpRef]
		}
	default:
		return req, fmt.Errorf("unexpected Content-Type %q", req.contentType)
	}
	return req, nil
}

// newProtoEndpoint starts an endpoint of the given protobuf_message that
// knows the metadata of test_metric.
func newProtoEndpoint(t *testing.T, url, proto string, change func(*Config)) (*Endpoint, *Metrics) {
	t.Helper()
	cfg := DefaultConfig
	cfg.URL, cfg.Name, cfg.ProtobufMessage = url, testEndpoint, proto
	cfg.QueueConfig.MinBackoff, cfg.QueueConfig.MaxBackoff = time.Millisecond, 10*time.Millisecond
	cfg.QueueConfig.BatchSendDeadline = 10 * time.Millisecond
	if change != nil {
		change(&cfg)
	}
	require.NoError(t, cfg.Validate())
	m := NewMetrics(prometheus.NewRegistry())
	e, err := New(cfg, Options{
		Logger: slog.New(slog.DiscardHandler), Metrics: m, UserAgent: testUserAgent,
		Metadata: map[string]encode.Metadata{"test_metric": {Type: encode.TypeGauge, Help: "A test metric."}},
	})
	require.NoError(t, err)
	e.startShards()
	return e, m
}

// answerWritten answers 204 with a Samples-Written header of n, as a 2.0 receiver.
func answerWritten(w http.ResponseWriter, n int) {
	w.Header().Set(samplesWritten, strconv.Itoa(n))
	w.WriteHeader(http.StatusNoContent)
}

func TestRemoteWrite2(t *testing.T) {
	srv := newProtoServer(t, func(_, n int, w http.ResponseWriter) { answerWritten(w, n) })
	e, m := newProtoEndpoint(t, srv.URL, ProtoV2, nil)
	e.appendItems(t.Context(), items(3, 1000))
	require.NoError(t, stop(t, e, 5*time.Second))

	reqs := srv.requests(t)
	require.Len(t, reqs, 1)
	require.Equal(t, encode.ContentTypeV2, reqs[0].contentType)
	require.Equal(t, encode.VersionV2, reqs[0].version)
	require.ElementsMatch(t, []string{"s0", "s1", "s2"}, reqs[0].series)
	require.Equal(t, map[string]string{"test_metric": "A test metric."}, reqs[0].help, "metadata inline")
	require.Equal(t, 3.0, counter(t, m.samplesSent))
	require.Equal(t, 2.0, testutil.ToFloat64(m.protocol.WithLabelValues(testEndpoint)))
	for _, r := range []string{FallbackUnsupported, FallbackNoWrittenHeader} {
		require.Zero(t, counter(t, m.fallbacks, r))
	}
}

// A 2.0 request answered like a 1.0-only receiver is sent again as 1.0, and
// the endpoint stays on 1.0; each sample is counted as sent once.
func TestRemoteWrite2Fallback(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		reason string
	}{
		// VictoriaMetrics and Thanos receive: 2xx, nothing stored, no header.
		{"2xx without Samples-Written", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }, FallbackNoWrittenHeader},
		{"415", func(w http.ResponseWriter) { w.WriteHeader(http.StatusUnsupportedMediaType) }, FallbackUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newProtoServer(t, func(i, _ int, w http.ResponseWriter) {
				if i == 0 {
					tc.answer(w)
					return
				}
				w.WriteHeader(http.StatusNoContent) // a 1.0 receiver
			})
			e, m := newProtoEndpoint(t, srv.URL, ProtoV2, func(c *Config) { c.MetadataConfig.Send = false })
			e.appendItems(t.Context(), items(2, 1000))
			require.Eventually(t, func() bool { return counter(t, m.samplesSent) == 2 }, 5*time.Second, 5*time.Millisecond)
			e.appendItems(t.Context(), items(2, 2000))
			require.NoError(t, stop(t, e, 5*time.Second))

			reqs := srv.requests(t)
			require.Len(t, reqs, 3)
			require.Equal(t, encode.ContentTypeV2, reqs[0].contentType)
			for _, r := range reqs[1:] {
				require.Equal(t, encode.ContentTypeV1, r.contentType)
				require.Equal(t, encode.VersionV1, r.version)
				require.ElementsMatch(t, []string{"s0", "s1"}, r.series)
			}
			require.Equal(t, 4.0, counter(t, m.samplesSent))
			require.Equal(t, 1.0, counter(t, m.fallbacks, tc.reason))
			require.Equal(t, 1.0, testutil.ToFloat64(m.protocol.WithLabelValues(testEndpoint)))
		})
	}
}

// A 2.0 receiver that reports fewer samples written than sent is counted.
func TestRemoteWrite2NotWritten(t *testing.T) {
	srv := newProtoServer(t, func(_, n int, w http.ResponseWriter) { answerWritten(w, n-1) })
	e, m := newProtoEndpoint(t, srv.URL, ProtoV2, nil)
	e.appendItems(t.Context(), items(5, 1000))
	require.NoError(t, stop(t, e, 5*time.Second))
	require.Equal(t, 5.0, counter(t, m.samplesSent))
	require.Equal(t, 1.0, counter(t, m.notWritten))
	require.Zero(t, counter(t, m.fallbacks, FallbackNoWrittenHeader))
}

// A 1.0 endpoint gets metadata requests of their own on metadata_config's
// schedule, but only once it has sent samples.
func TestMetadataSchedule(t *testing.T) {
	srv := newProtoServer(t, func(_, _ int, w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) })
	e, m := newProtoEndpoint(t, srv.URL, ProtoV1, func(c *Config) { c.MetadataConfig.SendInterval = 20 * time.Millisecond })
	metadataRequests := func() (n int) {
		for _, r := range srv.requests(t) {
			if len(r.metadata) > 0 {
				n++
			}
		}
		return n
	}
	time.Sleep(100 * time.Millisecond) // five intervals with nothing sent
	require.Zero(t, metadataRequests(), "no metadata before any sample was sent")

	e.appendItems(t.Context(), items(1, 1000))
	// Counted once answered, which is after the server recorded it.
	require.Eventually(t, func() bool { return counter(t, m.metadataSent) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, stop(t, e, 5*time.Second))
	require.Equal(t, 1, metadataRequests())

	var md []prompb.MetricMetadata
	for _, r := range srv.requests(t) {
		md = append(md, r.metadata...)
	}
	require.Equal(t, []prompb.MetricMetadata{{Type: prompb.MetricMetadata_GAUGE, MetricFamilyName: "test_metric", Help: "A test metric."}}, md)
	require.Equal(t, 1.0, counter(t, m.metadataSent))
	require.Equal(t, 1.0, counter(t, m.samplesSent), "metadata entries are not counted as samples")
}

func TestProtobufMessageValidate(t *testing.T) {
	cfg := DefaultConfig
	cfg.URL = "http://127.0.0.1:9090/api/v1/write"
	cfg.ProtobufMessage = "v2"
	err := cfg.Validate()
	require.ErrorContains(t, err, "protobuf_message")
	require.ErrorContains(t, err, `must be "prometheus.WriteRequest" or "io.prometheus.write.v2.Request", not "v2"`)
	cfg.ProtobufMessage = ProtoV2
	cfg.MetadataConfig.SendInterval = 0
	require.ErrorContains(t, cfg.Validate(), "metadata_config.send_interval")
}

// Mimir answers 202 with Samples-Written 0 to an HA replica that is not the
// elected one: a success, counted as deduplicated and not as not written.
func TestRemoteWrite2Accepted(t *testing.T) {
	srv := newProtoServer(t, func(_, _ int, w http.ResponseWriter) {
		w.Header().Set(samplesWritten, "0")
		w.WriteHeader(http.StatusAccepted)
	})
	e, m := newProtoEndpoint(t, srv.URL, ProtoV2, nil)
	e.appendItems(t.Context(), items(4, 1000))
	require.NoError(t, stop(t, e, 5*time.Second))
	require.Equal(t, 4.0, counter(t, m.samplesSent))
	require.Equal(t, 4.0, counter(t, m.deduplicated))
	require.Zero(t, counter(t, m.notWritten))
	require.Equal(t, 2.0, testutil.ToFloat64(m.protocol.WithLabelValues(testEndpoint)))
}

// SetMetadata replaces the families' metadata: the next 1.0 metadata round
// and the next 2.0 batch carry the new one.
func TestSetMetadata(t *testing.T) {
	newMD := map[string]encode.Metadata{"test_metric": {Type: encode.TypeCounter, Help: "Now a counter."}}
	t.Run("1.0", func(t *testing.T) {
		srv := newProtoServer(t, func(_, _ int, w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) })
		e, _ := newProtoEndpoint(t, srv.URL, ProtoV1, func(c *Config) { c.MetadataConfig.SendInterval = 10 * time.Millisecond })
		lastMetadata := func() []prompb.MetricMetadata {
			var md []prompb.MetricMetadata
			for _, r := range srv.requests(t) {
				if len(r.metadata) > 0 {
					md = r.metadata
				}
			}
			return md
		}
		e.appendItems(t.Context(), items(1, 1000))
		require.Eventually(t, func() bool { return len(lastMetadata()) == 1 }, 5*time.Second, 5*time.Millisecond)
		require.Equal(t, "A test metric.", lastMetadata()[0].Help)
		e.SetMetadata(newMD)
		e.appendItems(t.Context(), items(1, 2000))
		require.Eventually(t, func() bool {
			md := lastMetadata()
			return len(md) == 1 && md[0].Help == "Now a counter." && md[0].Type == prompb.MetricMetadata_COUNTER
		}, 5*time.Second, 5*time.Millisecond)
		require.NoError(t, stop(t, e, 5*time.Second))
	})
	t.Run("2.0", func(t *testing.T) {
		srv := newProtoServer(t, func(_, n int, w http.ResponseWriter) { answerWritten(w, n) })
		e, _ := newProtoEndpoint(t, srv.URL, ProtoV2, nil)
		e.appendItems(t.Context(), items(1, 1000))
		e.flush()
		require.Eventually(t, func() bool { return len(srv.requests(t)) == 1 }, 5*time.Second, 5*time.Millisecond)
		e.SetMetadata(newMD)
		e.appendItems(t.Context(), items(1, 2000))
		require.NoError(t, stop(t, e, 5*time.Second))
		reqs := srv.requests(t)
		require.Len(t, reqs, 2)
		require.Equal(t, "A test metric.", reqs[0].help["test_metric"])
		require.Equal(t, "Now a counter.", reqs[1].help["test_metric"])
	})
}
