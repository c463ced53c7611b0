package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/redact"
)

// How an endpoint picks its wire protocol (the key protocol).
//
// VictoriaMetrics' own remote write protocol is the Remote-Write 1.0
// request compressed with zstd instead of snappy, sent with
// Content-Encoding: zstd and X-VictoriaMetrics-Remote-Write-Version: 1
// (https://docs.victoriametrics.com/victoriametrics/vmagent/#victoriametrics-remote-write-protocol).
// vmagent found out whether a receiver speaks it in two ways over time
// (VictoriaMetrics app/vmagent/remotewrite/client.go):
//
//   - up to v1.115, once at start, a POST with an empty body to the write
//     URL with get_vm_proto_version=1 added to its query: a receiver that
//     speaks it answers 200 with the body "1"
//     (lib/protoparser/protoparserutil/vmproto_handshake.go, still served by
//     VictoriaMetrics and vmagent); any other answer, or none, meant the
//     Prometheus protocol for the rest of the run;
//   - from v1.116, no probe: it sends zstd first, and a zstd request
//     answered 400 or 415 is sent again at once as snappy, and the
//     endpoint keeps to snappy for the rest of the run
//     (https://github.com/VictoriaMetrics/VictoriaMetrics/pull/8462).
//
// protocol: auto does both: it probes before the first batch, so a receiver
// that does not speak it never sees a zstd body, and it falls back on a 400
// or 415 as vmagent does now. Unlike vmagent's probe, one that gets no
// answer (a network error, 5xx, 429: the receiver is not up yet) is asked
// again probeRetry later, rather than deciding for the whole run. Where
// the receiver does not speak it, auto sends Remote-Write 2.0, which falls
// back to 1.0 as protobuf_message: io.prometheus.write.v2.Request does
// (deliver.go).

// probeRetry is how long after an unanswered probe the next batch probes
// again; meanwhile batches go out with the Prometheus protocol.
const probeRetry = time.Minute

// probeQuery is the query parameter of the probe.
const probeQuery = "get_vm_proto_version"

// maxProbeBody is how much of the probe's answer is read.
const maxProbeBody = 64

// negotiation is protocol: auto's state.
type negotiation struct {
	// done is set once the probe got an answer: the protocol is settled.
	done atomic.Bool
	// mu is held during a probe, so that one shard probes and the others
	// wait for its answer; it guards next.
	mu sync.Mutex
	// next is when an unanswered probe may be tried again.
	next time.Time
	// retry is probeRetry; shorter in tests.
	retry time.Duration
}

// negotiate probes the receiver, for protocol: auto, unless its answer is
// in, or the last probe went unanswered less than probeRetry ago. Called
// by the shards before they encode a batch.
func (e *Endpoint) negotiate() {
	n := e.nego
	if n == nil || n.done.Load() {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done.Load() || time.Now().Before(n.next) {
		return
	}
	vm, err := e.sender.probeVM(e.sendCtx, e.cfg.RemoteTimeout)
	if err != nil {
		n.next = time.Now().Add(n.retry)
		e.log.Warn("no answer to the VictoriaMetrics protocol probe: sending the Prometheus protocol, asking again later",
			"err", err, "retry_in", n.retry)
		return
	}
	n.done.Store(true)
	if !vm {
		e.log.Info("receiver does not speak VictoriaMetrics' protocol: sending Prometheus Remote-Write")
		return
	}
	e.v2.Store(false) // VictoriaMetrics stores nothing of a 2.0 request
	e.vm.Store(true)
	e.metrics.protocol.Set(protocolVersion(false))
	e.metrics.vmProtocol.Set(1)
	e.log.Info("receiver speaks VictoriaMetrics' protocol: sending it (zstd)")
}

// vmRefused switches an auto endpoint from VictoriaMetrics' protocol to
// Remote-Write 1.0 for good, once: a zstd request was answered 400 or 415.
func (e *Endpoint) vmRefused(status int) {
	if !e.vm.CompareAndSwap(true, false) {
		return // another shard fell back first
	}
	e.metrics.fallbacks[FallbackVMRefused].Inc()
	e.metrics.vmProtocol.Set(0)
	e.log.Warn("endpoint refused VictoriaMetrics' protocol: falling back to Remote-Write 1.0 for the rest of this run",
		"status", status)
}

// vmFallback reports whether a VictoriaMetrics protocol request's answer
// makes an auto endpoint fall back, as vmagent does: 400 or 415.
func (e *Endpoint) vmFallback(herr *HTTPError) bool {
	return e.cfg.Protocol == ProtocolAuto &&
		(herr.Status == http.StatusBadRequest || herr.Status == http.StatusUnsupportedMediaType)
}

// errNoProbeAnswer is a probe answered 5xx or 429: the receiver is there but
// not ready to say.
var errNoProbeAnswer = errors.New("probe not answered")

// probeVM asks the receiver whether it speaks VictoriaMetrics' protocol. It
// returns an error only when there was no answer to go by: a network error,
// a 5xx or 429, or ctx ending; any other answer is a yes (200 with a
// version of at least 1 as the body) or a no.
func (s *sender) probeVM(ctx context.Context, timeout time.Duration) (bool, error) {
	u := s.url
	if strings.Contains(u, "?") {
		u += "&"
	} else {
		u += "?"
	}
	u += probeQuery + "=1"
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, http.NoBody)
	if err != nil {
		return false, fmt.Errorf("building the probe: %w", redact.Error(err))
	}
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	// The headers of a 1.0 request, as vmagent's probe had.
	req.Header.Set("Content-Encoding", contentEncoding)
	req.Header.Set("Content-Type", encode.ContentTypeV1)
	req.Header.Set(versionHeader, encode.VersionV1)
	req.Header.Set("User-Agent", s.userAgent)
	resp, err := s.client.HTTPClient.Do(req)
	if err != nil {
		return false, fmt.Errorf("probing: %w", redact.Error(err))
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return false, fmt.Errorf("%w: status %d", errNoProbeAnswer, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	if err != nil {
		return false, fmt.Errorf("reading the probe's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return false, nil
	}
	v, err := strconv.Atoi(string(body))
	return err == nil && v >= 1, nil
}

// wireHeaders are the Content-Encoding, and the name of the version header,
// of a request whose encoder has the given Version.
func wireHeaders(version string) (encoding, versionName string) {
	if version == encode.VersionVM {
		return encode.VMContentEncoding, encode.VMVersionHeader
	}
	return contentEncoding, versionHeader
}
