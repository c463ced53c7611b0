package queue

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/golang/snappy"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/kube-state-push/kube-state-push/encode"
)

// failed_request_logging, as Prometheus' key of the name
// (config/config.go: "enables debug logging of remote write V2 request on
// send error"; storage/remote/queue_manager.go sendV2SamplesWithBackoff):
// every failed try of a Remote-Write 2.0 request is logged at debug level
// with the request's content and the error: a network error, an answer
// other than 2xx (each retry included), or a 2xx whose Samples-Written
// header says nothing was stored (or is missing). 1.0 requests are not
// logged, as in Prometheus. The content is decoded from the request's
// body only when the debug line is written.

// failedRequestKey carries the request a try of which may be logged
// through its context, for the retry hook.
type failedRequestKey struct{}

// failedRequest is a 2.0 request whose failed tries are logged.
type failedRequest struct {
	log *slog.Logger
	// body is the request, compressed; alive while sendBody runs.
	body *reqBody
}

// withFailedRequestLog returns ctx carrying the request when failed
// request logging is on and the request is 2.0.
func (s *sender) withFailedRequestLog(ctx context.Context, body *reqBody, version string) context.Context {
	if s.failedRequests == nil || version != encode.VersionV2 {
		return ctx
	}
	return context.WithValue(ctx, failedRequestKey{}, &failedRequest{log: s.failedRequests, body: body})
}

// logFailedTry logs one try of the request in ctx, if it carries one and
// the try failed.
func logFailedTry(ctx context.Context, resp *http.Response, err error) {
	f, ok := ctx.Value(failedRequestKey{}).(*failedRequest)
	if !ok {
		return
	}
	switch {
	case err != nil:
	case resp.StatusCode/100 != 2:
		err = fmt.Errorf("remote write answered %s", resp.Status)
	default:
		return
	}
	f.logFailed(ctx, err)
}

// logFailed writes the debug line.
func (f *failedRequest) logFailed(ctx context.Context, err error) {
	f.log.DebugContext(ctx, "failed to send remote write 2.0 request", "req", v2RequestLog(f.body.buf), "err", err)
}

// v2RequestLog renders a compressed 2.0 request for a log line, once the
// line is written: each series as name{labels} value @timestamp.
type v2RequestLog []byte

// LogValue decodes the request.
func (b v2RequestLog) LogValue() slog.Value {
	raw, err := snappy.Decode(nil, b)
	if err != nil {
		return slog.StringValue("undecodable request: " + err.Error())
	}
	var req writev2.Request
	if err := req.Unmarshal(raw); err != nil {
		return slog.StringValue("undecodable request: " + err.Error())
	}
	sym := func(ref uint32) string {
		if int(ref) < len(req.Symbols) {
			return req.Symbols[ref]
		}
		return "<bad symbol " + strconv.FormatUint(uint64(ref), 10) + ">"
	}
	var sb strings.Builder
	for i, ts := range req.Timeseries {
		if i > 0 {
			sb.WriteString(", ")
		}
		name, first := "", true
		var labels strings.Builder
		for j := 0; j+1 < len(ts.LabelsRefs); j += 2 {
			k, v := sym(ts.LabelsRefs[j]), sym(ts.LabelsRefs[j+1])
			if k == "__name__" {
				name = v
				continue
			}
			if !first {
				labels.WriteByte(',')
			}
			first = false
			labels.WriteString(k + "=" + strconv.Quote(v))
		}
		sb.WriteString(name + "{" + labels.String() + "}")
		for _, s := range ts.Samples {
			sb.WriteString(" " + formatValue(s.Value) + " @" + strconv.FormatInt(s.Timestamp, 10))
		}
	}
	return slog.StringValue(sb.String())
}

// formatValue writes a sample value, a stale marker by name.
func formatValue(v float64) string {
	if math.Float64bits(v) == math.Float64bits(encode.StaleNaN) {
		return "stale"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
