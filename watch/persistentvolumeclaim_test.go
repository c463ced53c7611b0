package watch

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Golden tests of the persistent volume claim families. The cases port
// kube-state-metrics v2.20.0's internal/store/persistentvolumeclaim_test.go.

// testPVC returns a claim with an identity; edit sets the rest.
func testPVC(ns, name string, edit func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	p := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
	if edit != nil {
		edit(p)
	}
	return p
}

func TestPersistentVolumeClaimFamiliesMetadata(t *testing.T) {
	requireStorageFamilies(t, persistentVolumeClaimResource(), []FamilyInfo{
		{Name: "kube_persistentvolumeclaim_labels", Help: "Kubernetes labels converted to Prometheus labels.", Stability: Stable},
		{Name: "kube_persistentvolumeclaim_annotations", Help: "Kubernetes annotations converted to Prometheus labels."},
		{Name: "kube_persistentvolumeclaim_info", Help: "Information about persistent volume claim.", Stability: Stable},
		{Name: "kube_persistentvolumeclaim_status_phase", Help: "The phase the persistent volume claim is currently in.", Stability: Stable},
		{Name: "kube_persistentvolumeclaim_resource_requests_storage_bytes", Help: "The capacity of storage requested by the persistent volume claim.", Stability: Stable},
		{Name: "kube_persistentvolumeclaim_access_mode", Help: "The access mode(s) specified by the persistent volume claim.", Stability: Stable},
		{Name: "kube_persistentvolumeclaim_status_condition", Help: "Information about status of different conditions of persistent volume claim."},
		{Name: "kube_persistentvolumeclaim_created", Help: "Unix creation timestamp"},
		{Name: "kube_persistentvolumeclaim_deletion_timestamp", Help: "Unix deletion timestamp"},
	})
}

func TestPersistentVolumeClaimFamilies(t *testing.T) {
	// mysql is the claim of kube-state-metrics' first two cases, with the
	// given metadata.
	mysql := func(edit func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
		return testPVC("default", "mysql-data", func(p *v1.PersistentVolumeClaim) {
			p.CreationTimestamp = unixTime(1500000000)
			p.Spec = v1.PersistentVolumeClaimSpec{
				AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				StorageClassName: ptr.To("rbd"),
				Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
				VolumeName:       "pvc-mysql-data",
				VolumeMode:       ptr.To(v1.PersistentVolumeBlock),
			}
			p.Status = v1.PersistentVolumeClaimStatus{
				Phase: v1.ClaimBound,
				Conditions: []v1.PersistentVolumeClaimCondition{
					{Type: v1.PersistentVolumeClaimResizing, Status: v1.ConditionTrue},
					{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionFalse},
					{Type: "CustomizedType", Status: v1.ConditionTrue},
				},
			}
			edit(p)
		})
	}
	const mysqlSeries = `
		kube_persistentvolumeclaim_created{namespace="default",persistentvolumeclaim="mysql-data"} 1.5e+09
		kube_persistentvolumeclaim_info{namespace="default",persistentvolumeclaim="mysql-data",storageclass="rbd",volumemode="Block",volumename="pvc-mysql-data"} 1
		kube_persistentvolumeclaim_status_phase{namespace="default",persistentvolumeclaim="mysql-data",phase="Bound"} 1
		kube_persistentvolumeclaim_status_phase{namespace="default",persistentvolumeclaim="mysql-data",phase="Lost"} 0
		kube_persistentvolumeclaim_status_phase{namespace="default",persistentvolumeclaim="mysql-data",phase="Pending"} 0
		kube_persistentvolumeclaim_resource_requests_storage_bytes{namespace="default",persistentvolumeclaim="mysql-data"} 1.073741824e+09
		kube_persistentvolumeclaim_access_mode{access_mode="ReadWriteOnce",namespace="default",persistentvolumeclaim="mysql-data"} 1
		kube_persistentvolumeclaim_status_condition{condition="CustomizedType",namespace="default",persistentvolumeclaim="mysql-data",status="false"} 0
		kube_persistentvolumeclaim_status_condition{condition="FileSystemResizePending",namespace="default",persistentvolumeclaim="mysql-data",status="false"} 1
		kube_persistentvolumeclaim_status_condition{condition="Resizing",namespace="default",persistentvolumeclaim="mysql-data",status="false"} 0
		kube_persistentvolumeclaim_status_condition{condition="CustomizedType",namespace="default",persistentvolumeclaim="mysql-data",status="true"} 1
		kube_persistentvolumeclaim_status_condition{condition="FileSystemResizePending",namespace="default",persistentvolumeclaim="mysql-data",status="true"} 0
		kube_persistentvolumeclaim_status_condition{condition="Resizing",namespace="default",persistentvolumeclaim="mysql-data",status="true"} 1
		kube_persistentvolumeclaim_status_condition{condition="CustomizedType",namespace="default",persistentvolumeclaim="mysql-data",status="unknown"} 0
		kube_persistentvolumeclaim_status_condition{condition="FileSystemResizePending",namespace="default",persistentvolumeclaim="mysql-data",status="unknown"} 0
		kube_persistentvolumeclaim_status_condition{condition="Resizing",namespace="default",persistentvolumeclaim="mysql-data",status="unknown"} 0
	`
	const info = "kube_persistentvolumeclaim_info"
	runStorageCases(t, persistentVolumeClaimResource(), []storageCase{
		{
			name: "allowlisted annotations",
			opts: FamilyOptions{AnnotationsAllowlist: []string{"app.k8s.io/owner"}},
			obj: mysql(func(p *v1.PersistentVolumeClaim) {
				p.Annotations = map[string]string{"app": "mysql-server", "app.k8s.io/owner": "@foo"}
			}),
			want: mysqlSeries + `kube_persistentvolumeclaim_annotations{annotation_app_k8s_io_owner="@foo",namespace="default",persistentvolumeclaim="mysql-data"} 1`,
		},
		{
			name: "allowlisted labels",
			opts: FamilyOptions{LabelsAllowlist: []string{"app"}},
			obj: mysql(func(p *v1.PersistentVolumeClaim) {
				p.Labels = map[string]string{"app": "mysql-server"}
			}),
			want: mysqlSeries + `kube_persistentvolumeclaim_labels{label_app="mysql-server",namespace="default",persistentvolumeclaim="mysql-data"} 1`,
		},
		{
			name: "pending without storage request",
			obj: testPVC("default", "prometheus-data", func(p *v1.PersistentVolumeClaim) {
				p.CreationTimestamp = unixTime(1500000000)
				p.Spec = v1.PersistentVolumeClaimSpec{
					AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
					StorageClassName: ptr.To("rbd"),
					VolumeName:       "pvc-prometheus-data",
					VolumeMode:       ptr.To(v1.PersistentVolumeBlock),
				}
				p.Status.Phase = v1.ClaimPending
			}),
			want: `
				kube_persistentvolumeclaim_created{namespace="default",persistentvolumeclaim="prometheus-data"} 1.5e+09
				kube_persistentvolumeclaim_info{namespace="default",persistentvolumeclaim="prometheus-data",storageclass="rbd",volumemode="Block",volumename="pvc-prometheus-data"} 1
				kube_persistentvolumeclaim_status_phase{namespace="default",persistentvolumeclaim="prometheus-data",phase="Bound"} 0
				kube_persistentvolumeclaim_status_phase{namespace="default",persistentvolumeclaim="prometheus-data",phase="Lost"} 0
				kube_persistentvolumeclaim_status_phase{namespace="default",persistentvolumeclaim="prometheus-data",phase="Pending"} 1
				kube_persistentvolumeclaim_access_mode{access_mode="ReadWriteOnce",namespace="default",persistentvolumeclaim="prometheus-data"} 1`,
		},
		{
			name: "lost without namespace or class",
			obj: testPVC("", "mongo-data", func(p *v1.PersistentVolumeClaim) {
				p.CreationTimestamp = unixTime(1500000000)
				p.Spec = v1.PersistentVolumeClaimSpec{
					AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
					VolumeMode:  ptr.To(v1.PersistentVolumeBlock),
				}
				p.Status = v1.PersistentVolumeClaimStatus{
					Phase: v1.ClaimLost,
					Conditions: []v1.PersistentVolumeClaimCondition{
						{Type: v1.PersistentVolumeClaimResizing, Status: v1.ConditionFalse},
						{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionTrue},
						{Type: "CustomizedType", Status: v1.ConditionFalse},
					},
				}
			}),
			want: `
				kube_persistentvolumeclaim_created{persistentvolumeclaim="mongo-data"} 1.5e+09
				kube_persistentvolumeclaim_info{persistentvolumeclaim="mongo-data",volumemode="Block"} 1
				kube_persistentvolumeclaim_status_phase{persistentvolumeclaim="mongo-data",phase="Bound"} 0
				kube_persistentvolumeclaim_status_phase{persistentvolumeclaim="mongo-data",phase="Lost"} 1
				kube_persistentvolumeclaim_status_phase{persistentvolumeclaim="mongo-data",phase="Pending"} 0
				kube_persistentvolumeclaim_access_mode{access_mode="ReadWriteOnce",persistentvolumeclaim="mongo-data"} 1
				kube_persistentvolumeclaim_status_condition{condition="CustomizedType",persistentvolumeclaim="mongo-data",status="false"} 1
				kube_persistentvolumeclaim_status_condition{condition="FileSystemResizePending",persistentvolumeclaim="mongo-data",status="false"} 0
				kube_persistentvolumeclaim_status_condition{condition="Resizing",persistentvolumeclaim="mongo-data",status="false"} 1
				kube_persistentvolumeclaim_status_condition{condition="CustomizedType",persistentvolumeclaim="mongo-data",status="true"} 0
				kube_persistentvolumeclaim_status_condition{condition="FileSystemResizePending",persistentvolumeclaim="mongo-data",status="true"} 1
				kube_persistentvolumeclaim_status_condition{condition="Resizing",persistentvolumeclaim="mongo-data",status="true"} 0
				kube_persistentvolumeclaim_status_condition{condition="CustomizedType",persistentvolumeclaim="mongo-data",status="unknown"} 0
				kube_persistentvolumeclaim_status_condition{condition="FileSystemResizePending",persistentvolumeclaim="mongo-data",status="unknown"} 0
				kube_persistentvolumeclaim_status_condition{condition="Resizing",persistentvolumeclaim="mongo-data",status="unknown"} 0`,
		},
		{
			name: "terminating",
			obj: testPVC("", "terminating-data", func(p *v1.PersistentVolumeClaim) {
				p.CreationTimestamp = unixTime(1500000000)
				p.DeletionTimestamp = ptr.To(unixTime(1800000000))
				p.Spec.VolumeName = "pvc-postgresql-data"
				p.Status.Phase = v1.ClaimBound
			}),
			families: []string{"kube_persistentvolumeclaim_deletion_timestamp", "kube_persistentvolumeclaim_status_phase"},
			want: `
				kube_persistentvolumeclaim_deletion_timestamp{persistentvolumeclaim="terminating-data"} 1.8e+09
				kube_persistentvolumeclaim_status_phase{persistentvolumeclaim="terminating-data",phase="Bound"} 1
				kube_persistentvolumeclaim_status_phase{persistentvolumeclaim="terminating-data",phase="Lost"} 0
				kube_persistentvolumeclaim_status_phase{persistentvolumeclaim="terminating-data",phase="Pending"} 0`,
		},
		{
			// The deprecated beta annotation wins over spec.storageClassName.
			name: "beta storage class annotation",
			obj: testPVC("default", "beta", func(p *v1.PersistentVolumeClaim) {
				p.Annotations = map[string]string{v1.BetaStorageClassAnnotation: "legacy"}
				p.Spec.StorageClassName = ptr.To("rbd")
			}),
			families: []string{info},
			want:     `kube_persistentvolumeclaim_info{namespace="default",persistentvolumeclaim="beta",storageclass="legacy"} 1`,
		},
		{
			// Even when empty.
			name: "empty beta storage class annotation",
			obj: testPVC("default", "beta", func(p *v1.PersistentVolumeClaim) {
				p.Annotations = map[string]string{v1.BetaStorageClassAnnotation: ""}
				p.Spec.StorageClassName = ptr.To("rbd")
			}),
			families: []string{info},
			want:     `kube_persistentvolumeclaim_info{namespace="default",persistentvolumeclaim="beta"} 1`,
		},
	})
}

// TestPersistentVolumeClaimMalformed renders every family of claims with
// empty or half-filled fields without panicking.
func TestPersistentVolumeClaimMalformed(t *testing.T) {
	all := storageFamilyNames(persistentVolumeClaimResource())
	runStorageCases(t, persistentVolumeClaimResource(), []storageCase{
		{
			name:     "empty",
			opts:     storageAllAllowed,
			obj:      &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			families: all,
			want: `
				kube_persistentvolumeclaim_labels{} 1
				kube_persistentvolumeclaim_annotations{} 1
				kube_persistentvolumeclaim_info{} 1`,
		},
		{
			name: "empty entries",
			obj: testPVC("ns", "odd", func(p *v1.PersistentVolumeClaim) {
				p.Spec.AccessModes = []v1.PersistentVolumeAccessMode{""}
				p.Spec.StorageClassName = ptr.To("")
				p.Spec.VolumeMode = ptr.To(v1.PersistentVolumeMode(""))
				p.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: {}}
				p.Status.Conditions = []v1.PersistentVolumeClaimCondition{{}}
				p.DeletionTimestamp = &metav1.Time{}
			}),
			families: all,
			want: `
				kube_persistentvolumeclaim_info{namespace="ns",persistentvolumeclaim="odd"} 1
				kube_persistentvolumeclaim_resource_requests_storage_bytes{namespace="ns",persistentvolumeclaim="odd"} 0
				kube_persistentvolumeclaim_access_mode{namespace="ns",persistentvolumeclaim="odd"} 1
				kube_persistentvolumeclaim_status_condition{namespace="ns",persistentvolumeclaim="odd",status="true"} 0
				kube_persistentvolumeclaim_status_condition{namespace="ns",persistentvolumeclaim="odd",status="false"} 0
				kube_persistentvolumeclaim_status_condition{namespace="ns",persistentvolumeclaim="odd",status="unknown"} 0`,
		},
	})
}
