package watch

import (
	"context"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// volumeAttachmentResource describes volume attachments: kube-state-metrics'
// internal/store/volumeattachment.go.
func volumeAttachmentResource() *Resource {
	return newResource("volumeattachments", false, &storagev1.VolumeAttachment{},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.StorageV1().VolumeAttachments().List(ctx, o)
		},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.StorageV1().VolumeAttachments().Watch(ctx, o)
		},
		func(va *storagev1.VolumeAttachment, e *Emitter) {
			e.Identity("volumeattachment", va.Name)
		},
		volumeAttachmentFamilies,
	)
}

// volumeAttachmentFamilies lists the volume attachment families, in
// kube-state-metrics' order. kube-state-metrics gives volume attachments no
// allowlists: kube_volumeattachment_labels always carries every label, so
// the options are not used.
func volumeAttachmentFamilies(FamilyOptions) []Family[*storagev1.VolumeAttachment] {
	type VA = *storagev1.VolumeAttachment
	return []Family[VA]{
		{
			Name: "kube_volumeattachment_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: func(va VA, e *Emitter) { emitMapLabels(e, "label", va.Labels) },
		},
		{
			Name: "kube_volumeattachment_info", Help: "Information about volumeattachment.",
			Type: Gauge, Stability: Alpha,
			Generate: func(va VA, e *Emitter) { e.Emit(1, "attacher", va.Spec.Attacher, "node", va.Spec.NodeName) },
		},
		{
			Name: "kube_volumeattachment_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitCreated[VA],
		},
		{
			Name: "kube_volumeattachment_spec_source_persistentvolume", Help: "PersistentVolume source reference.",
			Type: Gauge, Stability: Alpha,
			Generate: func(va VA, e *Emitter) {
				if pv := va.Spec.Source.PersistentVolumeName; pv != nil {
					e.Emit(1, "volumename", *pv)
				}
			},
		},
		{
			Name: "kube_volumeattachment_status_attached", Help: "Information about volumeattachment.",
			Type: Gauge, Stability: Alpha,
			Generate: func(va VA, e *Emitter) { e.Emit(boolFloat64(va.Status.Attached)) },
		},
		{
			Name: "kube_volumeattachment_status_attachment_metadata", Help: "volumeattachment metadata.",
			Type: Gauge, Stability: Alpha,
			Generate: func(va VA, e *Emitter) { emitMapLabels(e, "metadata", va.Status.AttachmentMetadata) },
		},
	}
}

// emitMapLabels renders one series carrying every entry of m as a label
// named prefix_<key>, even when m is empty.
func emitMapLabels(e *Emitter, prefix string, m map[string]string) {
	keys, values := mapToPrometheusLabels(prefix, m)
	e.EmitKV(1, keys, values)
}
