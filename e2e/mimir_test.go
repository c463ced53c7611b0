package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// Mimir's answers, which TestMimirSemantics reproduces with a recording
// server (Mimir is not built here): grafana/mimir pkg/distributor/push.go
// and ha_tracker.go.
const (
	// mimirOrgHeader names the tenant of every request.
	mimirOrgHeader = "X-Scope-OrgID"
	// mimirCluster and mimirReplica are the HA tracker's labels. Mimir reads
	// them from the first series of a request only, so every series must
	// carry them.
	mimirCluster = "cluster"
	mimirReplica = "__replica__"
)

// mimirSeries is one series a recording Mimir received: its labels and
// sample values, and for 2.0 its inline metadata.
type mimirSeries struct {
	labels map[string]string
	values []float64
	// meta is the series' 2.0 metadata (zero for 1.0).
	meta encode.Metadata
}

// mimirRequest is what a recording Mimir saw of one request.
type mimirRequest struct {
	// orgID is the X-Scope-OrgID header.
	orgID string
	// contentType and version are the protocol headers.
	contentType, version string
	// series are the request's series.
	series []mimirSeries
	// metadata is a 1.0 request's metadata, by family name.
	metadata map[string]encode.Metadata
	// status is what the server answered.
	status int
}

// mimir is a recording receiver that answers like a Mimir distributor with
// HA deduplication: requests whose first series carries the elected
// __replica__ of their cluster are stored and answered 200; those of
// another replica are dropped and answered 202; a 2.0 request gets the
// Samples-Written headers (0 written for a 202), as Mimir's push handler
// sets them.
type mimir struct {
	srv *httptest.Server
	// elected is the replica whose samples are kept.
	elected string
	// mu guards requests and errs.
	mu       sync.Mutex
	requests []mimirRequest
	// errs are requests the server could not decode.
	errs []string
}

// newMimir starts a recording Mimir on 127.0.0.1 that keeps the samples of
// replica elected.
func newMimir(t *testing.T, elected string) *mimir {
	t.Helper()
	m := &mimir{elected: elected}
	m.srv = httptest.NewServer(http.HandlerFunc(m.handle))
	t.Cleanup(m.srv.Close)
	return m
}

// URL is the push URL.
func (m *mimir) URL() string { return m.srv.URL + "/api/v1/push" }

func (m *mimir) handle(w http.ResponseWriter, r *http.Request) {
	req, err := decodeMimirRequest(r)
	if err != nil {
		m.mu.Lock()
		m.errs = append(m.errs, err.Error())
		m.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.status = http.StatusOK
	switch {
	case req.orgID == "":
		req.status = http.StatusUnauthorized // "no org id"
	case len(req.series) > 0 && req.series[0].labels[mimirReplica] != m.elected:
		// distributor: "replicas did not match", the request is dropped
		// on purpose.
		req.status = http.StatusAccepted
	}
	if req.contentType == encode.ContentTypeV2 && req.status != http.StatusUnauthorized {
		written := 0
		if req.status == http.StatusOK {
			for _, s := range req.series {
				written += len(s.values)
			}
		}
		w.Header().Set("X-Prometheus-Remote-Write-Samples-Written", strconv.Itoa(written))
		w.Header().Set("X-Prometheus-Remote-Write-Histograms-Written", "0")
		w.Header().Set("X-Prometheus-Remote-Write-Exemplars-Written", "0")
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	w.WriteHeader(req.status)
}

// decodeMimirRequest decodes a 1.0 or 2.0 request by its Content-Type.
func decodeMimirRequest(r *http.Request) (mimirRequest, error) {
	req := mimirRequest{
		orgID:       r.Header.Get(mimirOrgHeader),
		contentType: r.Header.Get("Content-Type"),
		version:     r.Header.Get("X-Prometheus-Remote-Write-Version"),
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return req, fmt.Errorf("reading body: %w", err)
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return req, fmt.Errorf("snappy: %w", err)
	}
	switch req.contentType {
	case encode.ContentTypeV1:
		var wr prompb.WriteRequest
		if err := wr.Unmarshal(raw); err != nil {
			return req, fmt.Errorf("decoding prometheus.WriteRequest: %w", err)
		}
		for _, ts := range wr.Timeseries {
			s := mimirSeries{labels: map[string]string{}}
			for _, l := range ts.Labels {
				s.labels[l.Name] = l.Value
			}
			for _, smp := range ts.Samples {
				s.values = append(s.values, smp.Value)
			}
			req.series = append(req.series, s)
		}
		if len(wr.Metadata) > 0 {
			req.metadata = map[string]encode.Metadata{}
			for _, md := range wr.Metadata {
				req.metadata[md.MetricFamilyName] = encode.Metadata{Type: v1Type(md.Type), Help: md.Help, Unit: md.Unit}
			}
		}
	case encode.ContentTypeV2:
		var wr writev2.Request
		if err := wr.Unmarshal(raw); err != nil {
			return req, fmt.Errorf("decoding io.prometheus.write.v2.Request: %w", err)
		}
		sym := func(ref uint32) (string, error) {
			if int(ref) >= len(wr.Symbols) {
				return "", fmt.Errorf("symbol ref %d out of %d", ref, len(wr.Symbols))
			}
			return wr.Symbols[ref], nil
		}
		for _, ts := range wr.Timeseries {
			s := mimirSeries{labels: map[string]string{}}
			for i := 0; i+1 < len(ts.LabelsRefs); i += 2 {
				n, err := sym(ts.LabelsRefs[i])
				if err != nil {
					return req, err
				}
				v, err := sym(ts.LabelsRefs[i+1])
				if err != nil {
					return req, err
				}
				s.labels[n] = v
			}
			for _, smp := range ts.Samples {
				s.values = append(s.values, smp.Value)
			}
			help, err := sym(ts.Metadata.HelpRef)
			if err != nil {
				return req, err
			}
			s.meta = encode.Metadata{Type: v2TypeOf(ts.Metadata.Type), Help: help}
			req.series = append(req.series, s)
		}
	default:
		return req, fmt.Errorf("unexpected Content-Type %q", req.contentType)
	}
	return req, nil
}

// v1Type maps a 1.0 metadata type to the encoder's; only gauge and counter
// are expected.
func v1Type(t prompb.MetricMetadata_MetricType) encode.MetricType {
	if t == prompb.MetricMetadata_COUNTER {
		return encode.TypeCounter
	}
	if t == prompb.MetricMetadata_GAUGE {
		return encode.TypeGauge
	}
	return 255
}

// v2TypeOf maps a 2.0 metadata type to the encoder's; only gauge and counter
// are expected.
func v2TypeOf(t writev2.Metadata_MetricType) encode.MetricType {
	if t == writev2.Metadata_METRIC_TYPE_COUNTER {
		return encode.TypeCounter
	}
	if t == writev2.Metadata_METRIC_TYPE_GAUGE {
		return encode.TypeGauge
	}
	return 255
}

// snapshot returns a copy of what the server recorded so far.
func (m *mimir) snapshot() ([]mimirRequest, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mimirRequest(nil), m.requests...), append([]string(nil), m.errs...)
}

// kubePodInfoHelp is kube_pod_info's HELP as kube-state-metrics prints it.
const kubePodInfoHelp = "[STABLE] Information about pod."

// TestMimirSemantics runs two agents as HA replicas a and b of one cluster
// against a recording server that answers like Mimir with replica a elected: b's
// requests are answered 202 and must count as sent, not as errors; every
// request carries X-Scope-OrgID; every series carries cluster and
// __replica__; and the HELP and TYPE of kube_pod_info arrive, in metadata
// requests for 1.0 and inline for 2.0.
func TestMimirSemantics(t *testing.T) {
	needEnv(t)
	client, err := env.cp.Client()
	require.NoError(t, err)

	for _, tc := range []struct {
		name, proto, contentType, version string
	}{
		{"v1", protoV1, encode.ContentTypeV1, encode.VersionV1},
		{"v2", protoV2, encode.ContentTypeV2, encode.VersionV2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "matrix-mimir-" + tc.name
			createMatrixObjects(t, t.Context(), client, ns)
			srv := newMimir(t, "a")
			headers := map[string]string{mimirOrgHeader: "tenant-" + tc.name}
			agents := map[string]*testAgent{}
			for _, replica := range []string{"a", "b"} {
				agents[replica] = startAgent(t, agentOptions{config: matrixConfig(ns,
					map[string]string{mimirCluster: "mimir-" + tc.name, mimirReplica: replica},
					matrixEndpoint("mimir", srv.URL(), tc.proto, headers))})
			}

			// Wait for both replicas' samples (b's answered 202), the
			// elected replica's kube_pod_info of every pod, and, for 1.0,
			// a metadata request.
			eventually(t, 30*time.Second, "requests of both replicas", func() error {
				reqs, errs := srv.snapshot()
				if len(errs) > 0 {
					return fmt.Errorf("undecodable requests: %v", errs)
				}
				byStatus := map[int]int{}
				pods := map[string]bool{}
				metadata := false
				for _, r := range reqs {
					byStatus[r.status]++
					metadata = metadata || r.metadata != nil
					for _, s := range r.series {
						if r.status == http.StatusOK && s.labels["__name__"] == "kube_pod_info" {
							pods[s.labels["pod"]] = true
						}
					}
				}
				if byStatus[http.StatusOK] == 0 || byStatus[http.StatusAccepted] == 0 || len(pods) < len(matrixPods) ||
					tc.proto == protoV1 && !metadata {
					return fmt.Errorf("answers by status %v, pods stored %v, metadata request seen %v", byStatus, pods, metadata)
				}
				return nil
			})
			for _, replica := range []string{"a", "b"} {
				require.NoError(t, agents[replica].stop(), "replica %s stops cleanly", replica)
			}

			reqs, _ := srv.snapshot()
			var series, metadataRequests int
			for i, r := range reqs {
				require.Equal(t, "tenant-"+tc.name, r.orgID, "request %d: %s", i, mimirOrgHeader)
				if r.metadata != nil {
					// 1.0 metadata goes in requests of its own.
					require.Equal(t, encode.ContentTypeV1, r.contentType)
					require.Empty(t, r.series, "request %d: metadata requests carry no series", i)
					md, ok := r.metadata["kube_pod_info"]
					require.True(t, ok, "request %d: metadata of kube_pod_info", i)
					require.Equal(t, encode.Metadata{Type: encode.TypeGauge, Help: kubePodInfoHelp}, md)
					metadataRequests++
					continue
				}
				require.Equal(t, tc.contentType, r.contentType, "request %d", i)
				require.Equal(t, tc.version, r.version, "request %d", i)
				require.NotEmpty(t, r.series, "request %d", i)
				replica := r.series[0].labels[mimirReplica]
				require.Contains(t, []string{"a", "b"}, replica, "request %d: replica of the first series", i)
				for _, s := range r.series {
					require.Equal(t, "mimir-"+tc.name, s.labels[mimirCluster], "request %d: %v", i, s.labels)
					require.Equal(t, replica, s.labels[mimirReplica], "request %d: one replica per request: %v", i, s.labels)
					if tc.proto == protoV2 && s.labels["__name__"] == "kube_pod_info" {
						require.Equal(t, encode.Metadata{Type: encode.TypeGauge, Help: kubePodInfoHelp}, s.meta, "inline metadata")
					}
					series++
				}
			}
			t.Logf("%d requests, %d series, %d metadata requests", len(reqs), series, metadataRequests)
			if tc.proto == protoV2 {
				require.Zero(t, metadataRequests, "2.0 sends no metadata requests")
			}

			for replica, code := range map[string]string{"a": "200", "b": "202"} {
				a := agents[replica]
				ep := map[string]string{"endpoint": "mimir"}
				require.Positive(t, a.metric(t, "kube_state_push_remote_requests_total", map[string]string{"endpoint": "mimir", "code": code}), "replica %s", replica)
				require.Positive(t, a.metric(t, "kube_state_push_remote_samples_sent_total", ep), "replica %s: %s counts as sent", replica, code)
				a.requireNothingDropped(t, "mimir")
				require.Zero(t, a.metric(t, "kube_state_push_remote_samples_failed_total", ep), "replica %s", replica)
				require.Zero(t, a.metric(t, "kube_state_push_remote_samples_retried_total", ep), "replica %s: %s is not retried", replica, code)
				require.Zero(t, a.metric(t, "kube_state_push_remote_protocol_fallbacks_total", ep), "replica %s", replica)
				// The elected replica's samples are all written; the other's
				// 202 (0 written under 2.0) is a deliberate drop, not a loss.
				require.Zero(t, a.metric(t, "kube_state_push_remote_samples_not_written_total", ep), "replica %s", replica)
			}
		})
	}
}
