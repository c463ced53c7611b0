package testenv

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// createAdmitted retries a create that admission refuses as Forbidden (a
// class its cache has not seen yet) until it goes through or the tries
// are used up, and returns any other error at once.
func TestCreateAdmitted(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	notYet := apierrors.NewForbidden(pods, "with-init", errors.New("no PriorityClass with name compat-high was found"))

	calls := 0
	require.NoError(t, createAdmitted(func() error {
		if calls++; calls < 3 {
			return notYet
		}
		return nil
	}))
	require.Equal(t, 3, calls, "refused twice, then admitted")

	calls = 0
	err := createAdmitted(func() error {
		calls++
		return apierrors.NewAlreadyExists(pods, "with-init")
	})
	require.True(t, apierrors.IsAlreadyExists(err))
	require.Equal(t, 1, calls, "an error other than Forbidden is not retried")

	saved := admissionBackoff
	t.Cleanup(func() { admissionBackoff = saved })
	admissionBackoff = wait.Backoff{Steps: 4, Duration: 100 * time.Millisecond}
	calls = 0
	start := time.Now()
	err = createAdmitted(func() error {
		calls++
		return notYet
	})
	require.True(t, apierrors.IsForbidden(err), "still refused after the tries: the last error")
	require.Equal(t, 4, calls)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "100 ms between tries")
}
