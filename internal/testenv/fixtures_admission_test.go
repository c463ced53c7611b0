package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// TestFixturesAdmission checks that a real kube-apiserver accepts the
// admission fixtures, twice in one server (as two runs sharing it would).
// Without the binaries it is skipped, except in CI (CI=true).
func TestFixturesAdmission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := testenv.SharedControlPlane(t)
	c, err := cp.Client()
	require.NoError(t, err)
	require.NoError(t, testenv.LoadFixtures(ctx, c, testenv.FixturesAdmission, "admission-a", "admission-b"))
	maps, err := c.AdmissionregistrationV1().MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("mutating admission policies are not served: %v", err)
		return
	}
	require.Len(t, maps.Items, 4)
}
