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

// TestMimirTenantsAndHATracker writes a sample for a tenant and finds it
// only under that tenant; a request without a tenant is refused; with the
// HA tracker on, the first replica of a cluster is elected and the other's
// request is answered 202 and not stored.
func TestMimirTenantsAndHATracker(t *testing.T) {
	needBinary(t, "mimir")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := testenv.StartMimir(ctx, t.TempDir(), testenv.MimirOptions{HATracker: true})
	require.NoError(t, err)
	defer m.Stop()
	t.Logf("mimir ready after %s", m.Started.Round(10*time.Millisecond))

	tenant := func(id string) http.Header { return http.Header{testenv.MimirOrgHeader: {id}} }
	now := time.Now().UnixMilli()
	series := func(replica string, v float64) prompb.TimeSeries {
		return prompb.TimeSeries{
			Labels: []prompb.Label{
				{Name: "__name__", Value: "testenv_mimir"},
				{Name: testenv.MimirReplicaLabel, Value: replica},
				{Name: testenv.MimirClusterLabel, Value: "c"},
			},
			Samples: []prompb.Sample{{Value: v, Timestamp: now}},
		}
	}
	res, err := testenv.PushV1(ctx, m.WriteURL(), tenant("team-a"), series("a", 7))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	res, err = testenv.PushV1(ctx, m.WriteURL(), tenant("team-a"), series("b", 8))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, res.Status, "replica b is not elected: %s", res.Body)
	res, err = testenv.PushV1(ctx, m.WriteURL(), nil, series("a", 7))
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, res.Status, "no tenant: %s", res.Body)

	got, err := m.Query(ctx, "team-a", "testenv_mimir")
	require.NoError(t, err)
	require.Len(t, got, 1)
	// The HA tracker drops the replica label.
	require.Equal(t, map[string]string{"__name__": "testenv_mimir", testenv.MimirClusterLabel: "c"}, got[0].Metric)
	require.Equal(t, 7.0, got[0].Value)
	got, err = m.Query(ctx, "team-b", "testenv_mimir")
	require.NoError(t, err)
	require.Empty(t, got, "tenants are apart")
}
