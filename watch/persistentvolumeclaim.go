package watch

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// persistentVolumeClaimResource describes persistent volume claims:
// kube-state-metrics' internal/store/persistentvolumeclaim.go.
func persistentVolumeClaimResource() *Resource {
	return newResource("persistentvolumeclaims", true, &v1.PersistentVolumeClaim{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CoreV1().PersistentVolumeClaims(ns).Watch(ctx, o)
		},
		func(p *v1.PersistentVolumeClaim, e *Emitter) {
			e.Identity("namespace", p.Namespace, "persistentvolumeclaim", p.Name)
		},
		persistentVolumeClaimFamilies,
	)
}

// persistentVolumeClaimFamilies lists the persistent volume claim families,
// in kube-state-metrics' order.
func persistentVolumeClaimFamilies(o FamilyOptions) []Family[*v1.PersistentVolumeClaim] {
	type PVC = *v1.PersistentVolumeClaim
	return []Family[PVC]{
		{
			Name: "kube_persistentvolumeclaim_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[PVC], o.LabelsAllowlist),
		},
		{
			Name: "kube_persistentvolumeclaim_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[PVC], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_persistentvolumeclaim_info", Help: "Information about persistent volume claim.",
			Type: Gauge, Stability: Stable, Generate: persistentVolumeClaimInfo,
		},
		{
			Name: "kube_persistentvolumeclaim_status_phase", Help: "The phase the persistent volume claim is currently in.",
			Type: Gauge, Stability: Stable,
			Generate: func(p PVC, e *Emitter) { emitOneOf(e, "phase", p.Status.Phase, persistentVolumeClaimPhases) },
		},
		{
			Name: "kube_persistentvolumeclaim_resource_requests_storage_bytes", Help: "The capacity of storage requested by the persistent volume claim.",
			Type: Gauge, Stability: Stable,
			Generate: func(p PVC, e *Emitter) {
				if v, ok := storageBytes(p.Spec.Resources.Requests); ok {
					e.Emit(v)
				}
			},
		},
		{
			Name: "kube_persistentvolumeclaim_access_mode", Help: "The access mode(s) specified by the persistent volume claim.",
			Type: Gauge, Stability: Stable,
			Generate: func(p PVC, e *Emitter) { emitAccessModes(e, p.Spec.AccessModes) },
		},
		{
			Name: "kube_persistentvolumeclaim_status_condition", Help: "Information about status of different conditions of persistent volume claim.",
			Type: Gauge, Stability: Alpha,
			Generate: func(p PVC, e *Emitter) {
				for _, c := range p.Status.Conditions {
					emitConditionStatus(e, c.Status, "condition", string(c.Type))
				}
			},
		},
		{
			Name: "kube_persistentvolumeclaim_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitCreated[PVC],
		},
		{
			Name: "kube_persistentvolumeclaim_deletion_timestamp", Help: "Unix deletion timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitDeletionTimestamp[PVC],
		},
	}
}

// persistentVolumeClaimPhases are the states of
// kube_persistentvolumeclaim_status_phase.
var persistentVolumeClaimPhases = []v1.PersistentVolumeClaimPhase{v1.ClaimLost, v1.ClaimBound, v1.ClaimPending}

// persistentVolumeClaimInfo renders the claim's storage class, volume and
// volume mode; unlike kube_persistentvolume_volume_mode, an unset volume
// mode is left out rather than defaulted.
func persistentVolumeClaimInfo(p *v1.PersistentVolumeClaim, e *Emitter) {
	e.Emit(1,
		"storageclass", persistentVolumeClaimClass(p),
		"volumename", p.Spec.VolumeName,
		"volumemode", optionalString(p.Spec.VolumeMode),
	)
}

// persistentVolumeClaimClass returns the claim's storage class: the
// deprecated beta annotation when present (even if empty), else
// spec.storageClassName, else "".
func persistentVolumeClaimClass(p *v1.PersistentVolumeClaim) string {
	if class, ok := p.Annotations[v1.BetaStorageClassAnnotation]; ok {
		return class
	}
	return optionalString(p.Spec.StorageClassName)
}
