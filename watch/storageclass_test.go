package watch

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Golden tests of the storage class families. The cases port
// kube-state-metrics v2.20.0's internal/store/storageclass_test.go.

// testStorageClass returns an rbd storage class with the given name and
// policies.
func testStorageClass(name string, reclaim *v1.PersistentVolumeReclaimPolicy, binding *storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Provisioner:       "kubernetes.io/rbd",
		ReclaimPolicy:     reclaim,
		VolumeBindingMode: binding,
	}
}

func TestStorageClassFamiliesMetadata(t *testing.T) {
	requireStorageFamilies(t, storageClassResource(), []FamilyInfo{
		{Name: "kube_storageclass_info", Help: "Information about storageclass.", Stability: Stable},
		{Name: "kube_storageclass_created", Help: "Unix creation timestamp", Stability: Stable},
		{Name: "kube_storageclass_annotations", Help: "Kubernetes annotations converted to Prometheus labels."},
		{Name: "kube_storageclass_labels", Help: "Kubernetes labels converted to Prometheus labels.", Stability: Stable},
	})
}

func TestStorageClassFamilies(t *testing.T) {
	deleted, immediate := ptr.To(v1.PersistentVolumeReclaimDelete), ptr.To(storagev1.VolumeBindingImmediate)
	created := testStorageClass("test_kube_storageclass-created", deleted, immediate)
	created.CreationTimestamp = unixTime(1501569018)
	labeled := testStorageClass("test_storageclass-labels", deleted, immediate)
	labeled.Labels = map[string]string{"foo": "bar"}
	labeled.Annotations = map[string]string{"team": "storage"}
	runStorageCases(t, storageClassResource(), []storageCase{
		{
			name:     "info",
			obj:      testStorageClass("test_storageclass-info", deleted, immediate),
			families: []string{"kube_storageclass_info"},
			want:     `kube_storageclass_info{provisioner="kubernetes.io/rbd",reclaim_policy="Delete",storageclass="test_storageclass-info",volume_binding_mode="Immediate"} 1`,
		},
		{
			name:     "default policies",
			obj:      testStorageClass("test_storageclass-default-info", nil, nil),
			families: []string{"kube_storageclass_info"},
			want:     `kube_storageclass_info{provisioner="kubernetes.io/rbd",reclaim_policy="Delete",storageclass="test_storageclass-default-info",volume_binding_mode="Immediate"} 1`,
		},
		{
			name: "other policies",
			obj: testStorageClass("retain", ptr.To(v1.PersistentVolumeReclaimRetain),
				ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)),
			families: []string{"kube_storageclass_info"},
			want:     `kube_storageclass_info{provisioner="kubernetes.io/rbd",reclaim_policy="Retain",storageclass="retain",volume_binding_mode="WaitForFirstConsumer"} 1`,
		},
		{
			name:     "created",
			obj:      created,
			families: []string{"kube_storageclass_created"},
			want:     `kube_storageclass_created{storageclass="test_kube_storageclass-created"} 1.501569018e+09`,
		},
		{
			name:     "labels without allowlist",
			obj:      labeled,
			families: []string{"kube_storageclass_labels", "kube_storageclass_annotations"},
		},
		{
			name:     "allowlisted labels and annotations",
			opts:     storageAllAllowed,
			obj:      labeled,
			families: []string{"kube_storageclass_labels", "kube_storageclass_annotations"},
			want: `
				kube_storageclass_annotations{annotation_team="storage",storageclass="test_storageclass-labels"} 1
				kube_storageclass_labels{label_foo="bar",storageclass="test_storageclass-labels"} 1`,
		},
	})
}

// TestStorageClassMalformed renders every family of an empty storage class
// without panicking; the policies take their defaults.
func TestStorageClassMalformed(t *testing.T) {
	runStorageCases(t, storageClassResource(), []storageCase{
		{
			name:     "empty",
			opts:     storageAllAllowed,
			obj:      &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			families: storageFamilyNames(storageClassResource()),
			want: `
				kube_storageclass_info{reclaim_policy="Delete",volume_binding_mode="Immediate"} 1
				kube_storageclass_annotations{} 1
				kube_storageclass_labels{} 1`,
		},
	})
}
