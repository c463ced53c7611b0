package watch

import (
	"context"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// storageClassResource describes storage classes: kube-state-metrics'
// internal/store/storageclass.go.
func storageClassResource() *Resource {
	return newResource("storageclasses", false, &storagev1.StorageClass{},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.StorageV1().StorageClasses().List(ctx, o)
		},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.StorageV1().StorageClasses().Watch(ctx, o)
		},
		func(s *storagev1.StorageClass, e *Emitter) {
			e.Identity("storageclass", s.Name)
		},
		storageClassFamilies,
	)
}

// storageClassFamilies lists the storage class families, in
// kube-state-metrics' order.
func storageClassFamilies(o FamilyOptions) []Family[*storagev1.StorageClass] {
	type SC = *storagev1.StorageClass
	return []Family[SC]{
		{
			Name: "kube_storageclass_info", Help: "Information about storageclass.",
			Type: Gauge, Stability: Stable, Generate: storageClassInfo,
		},
		{
			Name: "kube_storageclass_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[SC],
		},
		{
			Name: "kube_storageclass_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[SC], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_storageclass_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[SC], o.LabelsAllowlist),
		},
	}
}

// storageClassInfo renders the provisioner, reclaim policy and volume
// binding mode, the last two defaulted as the API server does (Delete,
// Immediate) when unset.
func storageClassInfo(s *storagev1.StorageClass, e *Emitter) {
	reclaim := v1.PersistentVolumeReclaimDelete
	if s.ReclaimPolicy != nil {
		reclaim = *s.ReclaimPolicy
	}
	binding := storagev1.VolumeBindingImmediate
	if s.VolumeBindingMode != nil {
		binding = *s.VolumeBindingMode
	}
	e.Emit(1, "provisioner", s.Provisioner, "reclaim_policy", string(reclaim), "volume_binding_mode", string(binding))
}
