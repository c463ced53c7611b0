package testenv_test

import (
	"context"
	"math"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// staleNaN is the Prometheus staleness marker.
var staleNaN = math.Float64frombits(0x7ff0000000000002)

// needBinary skips the test when a tool is not built, except in CI.
func needBinary(t *testing.T, name string) {
	t.Helper()
	if _, err := testenv.Binary(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("missing binary in CI: %v", err)
		}
		t.Skip(err)
	}
}

// TestVictoriaMetricsExportAndRestart writes two samples and a staleness
// marker, reads them back raw with Export, restarts the server and checks
// that it answers on the same URL with the same data.
func TestVictoriaMetricsExportAndRestart(t *testing.T) {
	needBinary(t, "victoria-metrics")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vm, err := testenv.StartVictoriaMetrics(ctx, t.TempDir())
	require.NoError(t, err)
	defer vm.Stop()

	now := time.Now().Truncate(time.Second).UnixMilli()
	ts := prompb.TimeSeries{
		Labels: []prompb.Label{{Name: "__name__", Value: "testenv_vm"}, {Name: "job", Value: "x"}},
		Samples: []prompb.Sample{
			{Value: 1, Timestamp: now - 2000},
			{Value: 2, Timestamp: now - 1000},
			{Value: staleNaN, Timestamp: now},
		},
	}
	res, err := testenv.PushV1(ctx, vm.WriteURL(), nil, ts)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, res.Status, res.Body)

	check := func() {
		t.Helper()
		got, err := vm.Export(ctx, `{__name__="testenv_vm"}`)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, map[string]string{"__name__": "testenv_vm", "job": "x"}, got[0].Metric)
		require.Equal(t, []int64{now - 2000, now - 1000, now}, got[0].Timestamps)
		require.Equal(t, []float64{1, 2}, got[0].Values[:2])
		require.True(t, math.IsNaN(got[0].Values[2]), "staleness marker exported as %v", got[0].Values[2])
	}
	check()

	url := vm.WriteURL()
	require.NoError(t, vm.Restart(ctx))
	require.Equal(t, url, vm.WriteURL())
	check()

	// A query at the marker's time sees the series gone.
	q, err := vm.Query(ctx, `testenv_vm{job="x"}`)
	require.NoError(t, err)
	require.Empty(t, q)
}
