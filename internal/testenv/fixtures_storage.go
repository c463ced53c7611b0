package testenv

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// storageFixtureTime is the time written into status fields, so that the
// fixtures render the same series on every run.
var storageFixtureTime = metav1.NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))

// storageFixtureFinalizer keeps a deleted fixture in the Terminating state,
// since no controller ever removes it: its deletion timestamp is then
// rendered.
const storageFixtureFinalizer = "example.com/keep"

// storageFixtureDriver is the CSI driver and provisioner the fixtures name.
const storageFixtureDriver = "csi.example.com"

// FixturesStorage creates objects of the storage group in the states their
// families render: persistent volume claims in ns, and storage classes,
// persistent volumes, volume attachments and certificate signing requests
// named with ns as a prefix (they are cluster-scoped). Status is written as
// the missing controllers would. A claim and a volume are left Terminating
// behind a finalizer; their deletion timestamps are the only values that
// depend on the clock.
func FixturesStorage(ctx context.Context, c kubernetes.Interface, ns string) error {
	for _, create := range []func(context.Context, kubernetes.Interface, string) error{
		createFixtureStorageClasses,
		createFixturePersistentVolumes,
		createFixturePersistentVolumeClaims,
		createFixtureVolumeAttachments,
		createFixtureCSRs,
	} {
		if err := create(ctx, c, ns); err != nil {
			return err
		}
	}
	return nil
}

// createFixtureStorageClasses creates a labelled class with explicit
// policies and one left to the API defaults.
func createFixtureStorageClasses(ctx context.Context, c kubernetes.Interface, ns string) error {
	classes := []*storagev1.StorageClass{
		{
			ObjectMeta: metav1.ObjectMeta{
				Name:        ns + "-fast",
				Labels:      map[string]string{"tier": "fast"},
				Annotations: map[string]string{"example.com/owner": "storage-team"},
			},
			Provisioner:       storageFixtureDriver,
			Parameters:        map[string]string{"type": "ssd"},
			ReclaimPolicy:     ptr.To(v1.PersistentVolumeReclaimRetain),
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		},
		{
			ObjectMeta:  metav1.ObjectMeta{Name: ns + "-defaults"},
			Provisioner: "kubernetes.io/no-provisioner",
		},
	}
	for _, sc := range classes {
		if _, err := c.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating storage class %s: %w", sc.Name, err)
		}
	}
	return nil
}

// createFixturePersistentVolumes creates a volume of every source type
// kube_persistentvolume_info reports, in every phase, bound ones with a
// claim reference, and one Terminating volume.
func createFixturePersistentVolumes(ctx context.Context, c kubernetes.Interface, ns string) error {
	claim := func(name string) *v1.ObjectReference {
		return &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: name}
	}
	onNode := &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{ns + "-node"}}},
	}}}}
	vols := []struct {
		name     string
		source   v1.PersistentVolumeSource
		phase    v1.PersistentVolumePhase
		edit     func(*v1.PersistentVolume)
		deleted  bool
		capacity string
	}{
		{name: "hostpath", phase: v1.VolumeAvailable, capacity: "1Gi",
			source: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/mnt/data", Type: ptr.To(v1.HostPathDirectoryOrCreate)}},
			edit: func(p *v1.PersistentVolume) {
				p.Labels = map[string]string{"app": "db", "tier": "fast"}
				p.Annotations = map[string]string{"example.com/owner": "storage-team"}
			}},
		{name: "nfs", phase: v1.VolumeBound, capacity: "5Gi",
			source: v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "10.0.0.10", Path: "/exports/db"}},
			edit: func(p *v1.PersistentVolume) {
				p.Spec.ClaimRef = claim("bound")
				p.Spec.StorageClassName = ns + "-fast"
				p.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
			}},
		{name: "csi", phase: v1.VolumeBound, capacity: "10Gi",
			source: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: storageFixtureDriver, VolumeHandle: "vol-0001",
				VolumeAttributes: map[string]string{"mounter": "rbd", "mapOptions": "krbd:rxbounce", "pool": "rbd"},
			}},
			edit: func(p *v1.PersistentVolume) {
				p.Spec.ClaimRef = claim("block")
				p.Spec.StorageClassName = ns + "-fast"
				p.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
			}},
		{name: "csi-plain", phase: v1.VolumeAvailable, capacity: "1500Mi",
			source: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: storageFixtureDriver, VolumeHandle: "vol-0002"}}},
		{name: "local", phase: v1.VolumeReleased, capacity: "100Gi",
			source: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/disks/ssd1", FSType: ptr.To("ext4")}},
			edit: func(p *v1.PersistentVolume) {
				p.Spec.NodeAffinity = onNode
				p.Spec.ClaimRef = claim("gone")
				p.Spec.VolumeMode = ptr.To(v1.PersistentVolumeFilesystem)
			}},
		{name: "iscsi", phase: v1.VolumeFailed, capacity: "20Gi",
			source: v1.PersistentVolumeSource{ISCSI: &v1.ISCSIPersistentVolumeSource{
				TargetPortal: "10.0.0.20:3260", IQN: "iqn.2024-01.com.example:storage.disk1", Lun: 3,
				InitiatorName: ptr.To("iqn.2024-01.com.example:node1"),
			}}},
		{name: "fc", phase: v1.VolumePending, capacity: "2Gi",
			source: v1.PersistentVolumeSource{FC: &v1.FCVolumeSource{TargetWWNs: []string{"500a0982991b8dc5", "500a0982891b8dc5"}, Lun: ptr.To[int32](2)}}},
		{name: "fc-wwids", phase: v1.VolumeAvailable, capacity: "2Gi",
			source: v1.PersistentVolumeSource{FC: &v1.FCVolumeSource{WWIDs: []string{"3600508b400105e210000900000490000", "3600508b400105e210000900000490001"}}}},
		{name: "gce", phase: v1.VolumeAvailable, capacity: "3Gi",
			source: v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "pd-disk-1"}}},
		{name: "ebs", phase: v1.VolumeAvailable, capacity: "4Gi",
			source: v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://eu-west-1c/vol-012d34d567890123b"}}},
		{name: "azure", phase: v1.VolumeAvailable, capacity: "5Gi",
			source: v1.PersistentVolumeSource{AzureDisk: &v1.AzureDiskVolumeSource{
				DiskName: "azure-disk-1", DataDiskURI: "https://example.blob.core.windows.net/vhds/azure-disk-1.vhd",
			}}},
		{name: "terminating", phase: v1.VolumeReleased, capacity: "1Gi", deleted: true,
			source: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/mnt/old"}}},
	}
	pvs := c.CoreV1().PersistentVolumes()
	for _, vol := range vols {
		pv := &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + vol.name},
			Spec: v1.PersistentVolumeSpec{
				Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(vol.capacity)},
				AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				PersistentVolumeSource:        vol.source,
				PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			},
		}
		if vol.edit != nil {
			vol.edit(pv)
		}
		if vol.deleted {
			pv.Finalizers = []string{storageFixtureFinalizer}
		}
		created, err := pvs.Create(ctx, pv, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating persistent volume %s: %w", pv.Name, err)
		}
		created.Status = v1.PersistentVolumeStatus{Phase: vol.phase, LastPhaseTransitionTime: &storageFixtureTime}
		if _, err := pvs.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("writing status of persistent volume %s: %w", pv.Name, err)
		}
		if vol.deleted {
			if err := pvs.Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("deleting persistent volume %s: %w", pv.Name, err)
			}
		}
	}
	return nil
}

// createFixturePersistentVolumeClaims creates claims in every phase, with
// and without a storage class (one through the deprecated beta annotation),
// with resize conditions, and one Terminating claim.
func createFixturePersistentVolumeClaims(ctx context.Context, c kubernetes.Interface, ns string) error {
	claims := []struct {
		name    string
		phase   v1.PersistentVolumeClaimPhase
		spec    v1.PersistentVolumeClaimSpec
		edit    func(*v1.PersistentVolumeClaim)
		conds   []v1.PersistentVolumeClaimCondition
		deleted bool
	}{
		{name: "bound", phase: v1.ClaimBound,
			spec: storageFixtureClaimSpec(ptr.To(ns+"-fast"), ns+"-nfs", "5Gi", v1.ReadWriteOnce, v1.ReadOnlyMany),
			edit: func(p *v1.PersistentVolumeClaim) {
				p.Labels = map[string]string{"app": "db"}
				p.Annotations = map[string]string{"example.com/owner": "db-team"}
			},
			conds: []v1.PersistentVolumeClaimCondition{
				{Type: v1.PersistentVolumeClaimResizing, Status: v1.ConditionTrue, LastTransitionTime: storageFixtureTime},
				{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionFalse, LastTransitionTime: storageFixtureTime},
			}},
		{name: "block", phase: v1.ClaimBound,
			spec: storageFixtureClaimSpec(ptr.To(ns+"-fast"), ns+"-csi", "10Gi", v1.ReadWriteOncePod),
			edit: func(p *v1.PersistentVolumeClaim) { p.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock) }},
		// An explicit empty class: no default class may be assigned.
		{name: "pending", phase: v1.ClaimPending,
			spec: storageFixtureClaimSpec(ptr.To(""), "", "500Mi", v1.ReadWriteMany)},
		{name: "lost", phase: v1.ClaimLost,
			spec: storageFixtureClaimSpec(nil, ns+"-gone", "1Gi", v1.ReadWriteOnce),
			edit: func(p *v1.PersistentVolumeClaim) {
				p.Annotations = map[string]string{v1.BetaStorageClassAnnotation: ns + "-defaults"}
			},
			conds: []v1.PersistentVolumeClaimCondition{
				{Type: "CustomizedType", Status: v1.ConditionUnknown, LastTransitionTime: storageFixtureTime},
			}},
		{name: "terminating", phase: v1.ClaimPending, deleted: true,
			spec: storageFixtureClaimSpec(ptr.To(ns+"-defaults"), "", "1Gi", v1.ReadWriteOnce)},
	}
	pvcs := c.CoreV1().PersistentVolumeClaims(ns)
	for _, cl := range claims {
		pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: cl.name, Namespace: ns}, Spec: cl.spec}
		if cl.edit != nil {
			cl.edit(pvc)
		}
		if cl.deleted {
			pvc.Finalizers = []string{storageFixtureFinalizer}
		}
		created, err := pvcs.Create(ctx, pvc, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating persistent volume claim %s/%s: %w", ns, cl.name, err)
		}
		created.Status = v1.PersistentVolumeClaimStatus{Phase: cl.phase, Conditions: cl.conds}
		if cl.phase == v1.ClaimBound {
			created.Status.AccessModes = cl.spec.AccessModes
			created.Status.Capacity = cl.spec.Resources.Requests
		}
		if _, err := pvcs.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("writing status of persistent volume claim %s/%s: %w", ns, cl.name, err)
		}
		if cl.deleted {
			if err := pvcs.Delete(ctx, cl.name, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("deleting persistent volume claim %s/%s: %w", ns, cl.name, err)
			}
		}
	}
	return nil
}

// storageFixtureClaimSpec returns a claim spec requesting size of class
// (nil for none), bound to volume ("" for none).
func storageFixtureClaimSpec(class *string, volume, size string, modes ...v1.PersistentVolumeAccessMode) v1.PersistentVolumeClaimSpec {
	return v1.PersistentVolumeClaimSpec{
		AccessModes:      modes,
		StorageClassName: class,
		VolumeName:       volume,
		Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
	}
}

// createFixtureVolumeAttachments creates an attached volume attachment with
// metadata and labels, and one not attached yet.
func createFixtureVolumeAttachments(ctx context.Context, c kubernetes.Interface, ns string) error {
	atts := []struct {
		name, volume string
		labels       map[string]string
		status       storagev1.VolumeAttachmentStatus
	}{
		{name: "attached", volume: ns + "-csi", labels: map[string]string{"app": "db", "example.com/zone": "a"},
			status: storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"devicePath": "/dev/sdb", "lun": "0"}}},
		{name: "detached", volume: ns + "-csi-plain",
			status: storagev1.VolumeAttachmentStatus{AttachError: &storagev1.VolumeError{Time: storageFixtureTime, Message: "timed out"}}},
	}
	vas := c.StorageV1().VolumeAttachments()
	for _, a := range atts {
		va := &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + a.name, Labels: a.labels},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: storageFixtureDriver,
				NodeName: ns + "-node",
				Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(a.volume)},
			},
		}
		created, err := vas.Create(ctx, va, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating volume attachment %s: %w", va.Name, err)
		}
		created.Status = a.status
		if _, err := vas.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("writing status of volume attachment %s: %w", va.Name, err)
		}
	}
	return nil
}

// createFixtureCSRs creates certificate signing requests that are pending,
// approved, denied, approved and issued, and approved then failed.
func createFixtureCSRs(ctx context.Context, c kubernetes.Interface, ns string) error {
	key := ed25519.NewKeyFromSeed(storageFixtureSeed(ns))
	request, err := storageFixtureCSRPEM(key, ns)
	if err != nil {
		return err
	}
	cert, err := storageFixtureCertPEM(key, ns)
	if err != nil {
		return err
	}
	cond := func(t certv1.RequestConditionType) certv1.CertificateSigningRequestCondition {
		return certv1.CertificateSigningRequestCondition{
			Type: t, Status: v1.ConditionTrue, Reason: "Fixture", Message: "set by the test fixtures",
			LastUpdateTime: storageFixtureTime, LastTransitionTime: storageFixtureTime,
		}
	}
	csrs := []struct {
		name     string
		decision certv1.RequestConditionType
		failed   bool
		cert     []byte
	}{
		{name: "pending"},
		{name: "approved", decision: certv1.CertificateApproved},
		{name: "denied", decision: certv1.CertificateDenied},
		{name: "issued", decision: certv1.CertificateApproved, cert: cert},
		{name: "failed", decision: certv1.CertificateApproved, failed: true},
	}
	api := c.CertificatesV1().CertificateSigningRequests()
	for _, r := range csrs {
		csr := &certv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + r.name, Labels: map[string]string{"state": r.name}},
			Spec: certv1.CertificateSigningRequestSpec{
				Request:    request,
				SignerName: "example.com/signer",
				Usages:     []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth},
			},
		}
		created, err := api.Create(ctx, csr, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating certificate signing request %s: %w", csr.Name, err)
		}
		if r.decision == "" {
			continue
		}
		// Approved and Denied are written through the approval
		// subresource; the status subresource keeps them as they are.
		created.Status.Conditions = append(created.Status.Conditions, cond(r.decision))
		if created, err = api.UpdateApproval(ctx, created.Name, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("deciding certificate signing request %s: %w", csr.Name, err)
		}
		if r.cert == nil && !r.failed {
			continue
		}
		created.Status.Certificate = r.cert
		if r.failed {
			created.Status.Conditions = append(created.Status.Conditions, cond(certv1.CertificateFailed))
		}
		if _, err := api.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("writing status of certificate signing request %s: %w", csr.Name, err)
		}
	}
	return nil
}

// storageFixtureSeed derives an Ed25519 seed from ns: Ed25519 keys and
// signatures are deterministic, so the request and certificate bytes are
// the same on every run for the same namespace.
func storageFixtureSeed(ns string) []byte {
	sum := sha256.Sum256([]byte("kube-state-push fixtures " + ns))
	return sum[:ed25519.SeedSize]
}

// storageFixtureCSRPEM returns a PEM certificate request for ns's client.
func storageFixtureCSRPEM(key ed25519.PrivateKey, ns string) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(nil, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: ns + "-client", Organization: []string{"kube-state-push"}},
	}, key)
	if err != nil {
		return nil, fmt.Errorf("creating certificate request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// storageFixtureCertPEM returns a PEM certificate, self-signed with key, as
// the issued certificate of a request.
func storageFixtureCertPEM(key ed25519.PrivateKey, ns string) ([]byte, error) {
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: ns + "-client", Organization: []string{"kube-state-push"}},
		NotBefore:    storageFixtureTime.Time,
		NotAfter:     storageFixtureTime.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
