package testenv

import (
	"context"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The storage fixtures are accepted by a real API server, and can be
// created twice on one server in different namespaces.
func TestFixturesStorage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := SharedControlPlane(t)
	c, err := cp.Client()
	require.NoError(t, err)
	require.NoError(t, LoadFixtures(ctx, c, FixturesStorage, "storage-a", "storage-b"))

	pvcs, err := c.CoreV1().PersistentVolumeClaims("storage-a").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pvcs.Items, 5)
	pvs, err := c.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pvs.Items, 24)
	vas, err := c.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, vas.Items, 4)
	scs, err := c.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, scs.Items, 4)

	csrs, err := c.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, csrs.Items, 10)
	conds := map[string]int{}
	for _, csr := range csrs.Items {
		if csr.Name == "storage-a-issued" {
			require.NotEmpty(t, csr.Status.Certificate)
		}
		conds[csr.Name] = len(csr.Status.Conditions)
	}
	require.Equal(t, map[string]int{
		"storage-a-pending": 0, "storage-a-approved": 1, "storage-a-denied": 1, "storage-a-issued": 1, "storage-a-failed": 2,
		"storage-b-pending": 0, "storage-b-approved": 1, "storage-b-denied": 1, "storage-b-issued": 1, "storage-b-failed": 2,
	}, conds)

	term, err := c.CoreV1().PersistentVolumeClaims("storage-a").Get(ctx, "terminating", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, term.DeletionTimestamp)
	bound, err := c.CoreV1().PersistentVolumes().Get(ctx, "storage-a-nfs", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, v1.VolumeBound, bound.Status.Phase)
}

// The certificate request and certificate are the same bytes on every run.
func TestFixturesStorageDeterministicPEM(t *testing.T) {
	for _, render := range []func(ed25519.PrivateKey, string) ([]byte, error){storageFixtureCSRPEM, storageFixtureCertPEM} {
		a, err := render(ed25519.NewKeyFromSeed(storageFixtureSeed("ns")), "ns")
		require.NoError(t, err)
		b, err := render(ed25519.NewKeyFromSeed(storageFixtureSeed("ns")), "ns")
		require.NoError(t, err)
		require.Equal(t, a, b)
	}
}
