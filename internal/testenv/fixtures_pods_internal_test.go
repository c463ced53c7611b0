package testenv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// createAdmitted retries a create that admission refuses as Forbidden (a
// class its cache has not seen yet) until it goes through or the lag is
// over, and returns any other error at once.
func TestCreateAdmitted(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	notYet := apierrors.NewForbidden(pods, "with-init", errors.New("no PriorityClass with name compat-high was found"))
	ctx := context.Background()

	calls := 0
	got, err := createAdmitted(ctx, 10*time.Second, func() (int, error) {
		if calls++; calls < 3 {
			return 0, notYet
		}
		return 7, nil
	})
	require.NoError(t, err)
	require.Equal(t, 7, got)
	require.Equal(t, 3, calls, "refused twice, then admitted")

	calls = 0
	_, err = createAdmitted(ctx, 10*time.Second, func() (int, error) {
		calls++
		return 0, apierrors.NewAlreadyExists(pods, "with-init")
	})
	require.True(t, apierrors.IsAlreadyExists(err))
	require.Equal(t, 1, calls, "an error other than Forbidden is not retried")

	calls = 0
	start := time.Now()
	_, err = createAdmitted(ctx, 300*time.Millisecond, func() (int, error) {
		calls++
		return 0, notYet
	})
	require.True(t, apierrors.IsForbidden(err), "still refused after the lag: the last error")
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.Greater(t, calls, 1)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	calls = 0
	_, err = createAdmitted(cctx, 10*time.Second, func() (int, error) {
		calls++
		return 0, notYet
	})
	require.True(t, apierrors.IsForbidden(err))
	require.Equal(t, 1, calls, "a cancelled context ends the wait")
}
