package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// TestFixturesConfig checks that a real kube-apiserver accepts the
// configuration and access-control fixtures, twice in one server (as two
// runs sharing it would), and that the quotas and limit ranges they add do
// not get in the way of pods. Without the binaries it is skipped, except in
// CI (CI=true).
func TestFixturesConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := testenv.SharedControlPlane(t)
	c, err := cp.Client()
	require.NoError(t, err)
	require.NoError(t, testenv.LoadFixtures(ctx, c, testenv.FixturesConfig, "config-a", "config-b"))

	sa, err := c.CoreV1().ServiceAccounts("config-a").Get(ctx, "sa-deleting", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, sa.DeletionTimestamp)
	q, err := c.CoreV1().ResourceQuotas("config-a").Get(ctx, "compute", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, q.Status.Used, 4)

	// A pod without resources is neither rejected nor given defaults.
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "config-a"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	created, err := c.CoreV1().Pods("config-a").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Empty(t, created.Spec.Containers[0].Resources.Requests)
	require.Empty(t, created.Spec.Containers[0].Resources.Limits)
}
