package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/faultproxy"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// A receiver that refuses requests decoding to more than 32 KiB with 413,
// as Prometheus does past 32 MiB: the endpoint with max_bytes_per_send at
// that size gets no 413 and VictoriaMetrics behind it holds every series
// of every snapshot; the endpoint left at the default gets 413s (and
// splits its batches) from the same rule.
func TestMaxBytesPerSend(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns, limit = "max-bytes", 32 << 10
	var names []string
	for i := range 60 {
		names = append(names, fmt.Sprintf("pod-%02d", i))
	}
	createPods(ctx, t, client, ns, names...)
	defer deleteNamespace(t, client, ns)

	vm := startVM(t)
	capture := testenv.NewCapture()
	defer capture.Close()
	tooLarge := faultproxy.When(func(r *faultproxy.Request) bool { return r.Write != nil && r.Write.Size() > limit },
		faultproxy.Respond(http.StatusRequestEntityTooLarge))
	limited := startProxy(t, vm.WriteURL(), tooLarge)
	unlimited := startProxy(t, capture.URL(), tooLarge)

	conf := captureConfig(limited.URL())
	conf.Resources, conf.Namespaces = []string{"pods"}, []string{ns}
	conf.RemoteWrite[0].Name = "limited"
	conf.RemoteWrite[0].QueueConfig.MaxBytesPerSend = limit
	conf.RemoteWrite = append(conf.RemoteWrite, newEndpoint("default", unlimited.URL()))
	a := startAgent(t, agentOptions{ctx: ctx, config: conf})
	defer func() { require.NoError(t, a.stop()) }()

	// Three snapshots delivered whole to the capture, through 413s.
	var want map[string]float64
	var ts int64
	eventually(t, time.Minute, "snapshots of every pod at the capture", func() error {
		stamps := capture.Timestamps()
		if len(stamps) < 4 {
			return fmt.Errorf("%d snapshots", len(stamps))
		}
		ts = stamps[len(stamps)-3]
		want = capture.Series(ts)
		if n := len(want); n < 60*10 {
			return fmt.Errorf("%d series at %d", n, ts)
		}
		return nil
	})
	refusedDefault := faultproxy.Sum(unlimited.Records(), func(r faultproxy.Record) bool { return r.Status == http.StatusRequestEntityTooLarge })
	require.Positive(t, refusedDefault.Requests, "the default endpoint's batches pass the receiver's limit")

	var got map[string]float64
	eventually(t, 30*time.Second, "the same snapshot at VictoriaMetrics", func() error {
		series, err := vm.Export(ctx, `{namespace="`+ns+`"}`)
		if err != nil {
			return err
		}
		got = map[string]float64{}
		for _, s := range series {
			for i, at := range s.Timestamps {
				if at == ts {
					got[exportKey(s.Metric)] = s.Values[i]
				}
			}
		}
		if len(got) != len(want) {
			return fmt.Errorf("%d series at %d, want %d", len(got), ts, len(want))
		}
		return nil
	})
	for k, v := range want {
		g, ok := got[k]
		require.True(t, ok, "missing at VictoriaMetrics: %s", k)
		require.True(t, g == v || math.IsNaN(g) && math.IsNaN(v), "%s: %g, want %g", k, g, v)
	}

	recs := limited.Records()
	refused := faultproxy.Sum(recs, func(r faultproxy.Record) bool { return r.Status == http.StatusRequestEntityTooLarge })
	require.Zero(t, refused.Requests, "no 413 for the endpoint with max_bytes_per_send")
	largest, requests := 0, 0
	for _, r := range recs {
		if r.Write != nil && r.Samples > 0 {
			largest = max(largest, r.Write.Size())
			requests++
		}
	}
	require.LessOrEqual(t, largest, limit)
	a.requireNothingDropped(t, "limited")
	t.Logf("%d series a snapshot; limited: %d requests, none refused, the largest %d bytes decoded; default: %d refused with 413",
		len(want), requests, largest, refusedDefault.Requests)
}
