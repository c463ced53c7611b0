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
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// What real Mimir (mimir_real_test.go) cannot show: its HA tracker reads
// the cluster and __replica__ labels from the first series of a request
// only, so a request whose other series lacked them would be stored all the
// same, under the wrong labels. A recording receiver sees every series.

// mimirSeries is one series a recording Mimir received: its labels and
// sample values.
type mimirSeries struct {
	labels map[string]string
	values []float64
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
}

// mimir is a recording receiver that answers like a Mimir distributor
// without its HA tracker: 200, with the Samples-Written headers for 2.0.
type mimir struct {
	srv *httptest.Server
	// mu guards requests and errs.
	mu       sync.Mutex
	requests []mimirRequest
	// errs are requests the server could not decode.
	errs []string
}

// newMimir starts a recording Mimir on 127.0.0.1.
func newMimir(t *testing.T) *mimir {
	t.Helper()
	m := &mimir{}
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
	if req.contentType == encode.ContentTypeV2 {
		written := 0
		for _, s := range req.series {
			written += len(s.values)
		}
		w.Header().Set("X-Prometheus-Remote-Write-Samples-Written", strconv.Itoa(written))
		w.Header().Set("X-Prometheus-Remote-Write-Histograms-Written", "0")
		w.Header().Set("X-Prometheus-Remote-Write-Exemplars-Written", "0")
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// decodeMimirRequest decodes a 1.0 or 2.0 request by its Content-Type.
func decodeMimirRequest(r *http.Request) (mimirRequest, error) {
	req := mimirRequest{
		orgID:       r.Header.Get(testenv.MimirOrgHeader),
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

// snapshot returns a copy of what the server recorded so far.
func (m *mimir) snapshot() ([]mimirRequest, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mimirRequest(nil), m.requests...), append([]string(nil), m.errs...)
}

// TestMimirReplicaLabels runs an agent as replica a of an HA cluster
// against a recording Mimir: every series of every request carries the
// cluster and __replica__ labels, not only the first one Mimir reads; and
// 1.0 metadata goes in requests of their own, with no series, which Mimir's
// HA tracker lets through.
func TestMimirReplicaLabels(t *testing.T) {
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
			ns := "recorded-mimir-" + tc.name
			createMatrixObjects(t, t.Context(), client, ns)
			srv := newMimir(t)
			a := startAgent(t, agentOptions{config: matrixConfig(ns,
				map[string]string{testenv.MimirClusterLabel: "mimir-" + tc.name, testenv.MimirReplicaLabel: "a"},
				matrixEndpoint("mimir", srv.URL(), tc.proto, map[string]string{testenv.MimirOrgHeader: "tenant-" + tc.name}))})

			// Wait for kube_pod_info of every pod and, for 1.0, a metadata
			// request.
			eventually(t, 30*time.Second, "every pod and the metadata", func() error {
				reqs, errs := srv.snapshot()
				if len(errs) > 0 {
					return fmt.Errorf("undecodable requests: %v", errs)
				}
				pods := map[string]bool{}
				metadata := false
				for _, r := range reqs {
					metadata = metadata || r.metadata != nil
					for _, s := range r.series {
						if s.labels["__name__"] == "kube_pod_info" {
							pods[s.labels["pod"]] = true
						}
					}
				}
				if len(pods) < len(matrixPods) || tc.proto == protoV1 && !metadata {
					return fmt.Errorf("pods %v, metadata request seen %v", pods, metadata)
				}
				return nil
			})
			require.NoError(t, a.stop())

			reqs, _ := srv.snapshot()
			var series, metadataRequests int
			for i, r := range reqs {
				require.Equal(t, "tenant-"+tc.name, r.orgID, "request %d: %s", i, testenv.MimirOrgHeader)
				if r.metadata != nil {
					require.Equal(t, encode.ContentTypeV1, r.contentType)
					require.Empty(t, r.series, "request %d: metadata requests carry no series", i)
					metadataRequests++
					continue
				}
				require.Equal(t, tc.contentType, r.contentType, "request %d", i)
				require.Equal(t, tc.version, r.version, "request %d", i)
				require.NotEmpty(t, r.series, "request %d", i)
				for _, s := range r.series {
					require.Equal(t, "mimir-"+tc.name, s.labels[testenv.MimirClusterLabel], "request %d: %v", i, s.labels)
					require.Equal(t, "a", s.labels[testenv.MimirReplicaLabel], "request %d: %v", i, s.labels)
					series++
				}
			}
			t.Logf("%d requests, %d series, %d metadata requests", len(reqs), series, metadataRequests)
			if tc.proto == protoV2 {
				require.Zero(t, metadataRequests, "2.0 sends no metadata requests")
			}
			a.requireNothingDropped(t, "mimir")
		})
	}
}
