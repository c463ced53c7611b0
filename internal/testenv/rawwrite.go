package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// WriteResult is a receiver's answer to a raw Remote-Write request.
type WriteResult struct {
	// Status is the HTTP status code.
	Status int
	// Header is the response's headers (the Samples-Written counts among
	// them, for a 2.0 receiver).
	Header http.Header
	// Body is the start of the response body, for messages.
	Body string
}

// PushV1 sends series as one snappy-compressed Remote-Write 1.0 request to
// url, with header added (a tenant, for example), and returns the answer.
// Tests use it to put samples into a receiver beside the agent's own, e.g.
// to provoke a conflict. Labels must already be sorted by name.
func PushV1(ctx context.Context, url string, header http.Header, series ...prompb.TimeSeries) (WriteResult, error) {
	wr := prompb.WriteRequest{Timeseries: series}
	raw, err := wr.Marshal()
	if err != nil {
		return WriteResult{}, fmt.Errorf("pushing to %s: marshalling request: %w", url, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		return WriteResult{}, fmt.Errorf("pushing to %s: %w", url, err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", "kube-state-push-testenv")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return WriteResult{}, fmt.Errorf("pushing to %s: %w", url, err)
	}
	defer drainClose(resp.Body)
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return WriteResult{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}, nil
}
