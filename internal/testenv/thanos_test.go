package testenv_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// TestThanosTenantAndConflict writes a sample for a tenant, finds it through
// the query under that tenant's label, and checks that the receive answers
// 409 to an out-of-order sample.
func TestThanosTenantAndConflict(t *testing.T) {
	needBinary(t, "thanos")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	th, err := testenv.StartThanos(ctx, t.TempDir())
	require.NoError(t, err)
	defer th.Stop()

	tenant := http.Header{testenv.ThanosTenantHeader: {"team-a"}}
	now := time.Now().UnixMilli()
	series := func(v float64, ts int64) prompb.TimeSeries {
		return prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: "testenv_thanos"}, {Name: "job", Value: "x"}},
			Samples: []prompb.Sample{{Value: v, Timestamp: ts}},
		}
	}
	res, err := testenv.PushV1(ctx, th.WriteURL(), tenant, series(7, now))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.Status, res.Body)

	var got []testenv.Sample
	require.Eventually(t, func() bool {
		got, err = th.Query(ctx, `testenv_thanos{tenant_id="team-a"}`)
		return err == nil && len(got) == 1
	}, 30*time.Second, 250*time.Millisecond, "query result %v, error %v", got, err)
	require.Equal(t, map[string]string{
		"__name__": "testenv_thanos", "job": "x",
		testenv.ThanosTenantLabel: "team-a", testenv.ThanosReplicaLabel: "0",
	}, got[0].Metric)
	require.Equal(t, 7.0, got[0].Value)

	// Older than the stored sample: out of order.
	res, err = testenv.PushV1(ctx, th.WriteURL(), tenant, series(8, now-1000))
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, res.Status, res.Body)
	// The same sample in another tenant is no conflict: tenants are apart.
	res, err = testenv.PushV1(ctx, th.WriteURL(), nil, series(8, now-1000))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.Status, res.Body)
}
