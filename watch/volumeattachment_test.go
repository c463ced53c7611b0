package watch

import (
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Golden tests of the volume attachment families. The cases port
// kube-state-metrics v2.20.0's internal/store/volumeattachment_test.go.

func TestVolumeAttachmentFamiliesMetadata(t *testing.T) {
	requireStorageFamilies(t, volumeAttachmentResource(), []FamilyInfo{
		{Name: "kube_volumeattachment_labels", Help: "Kubernetes labels converted to Prometheus labels."},
		{Name: "kube_volumeattachment_info", Help: "Information about volumeattachment."},
		{Name: "kube_volumeattachment_created", Help: "Unix creation timestamp"},
		{Name: "kube_volumeattachment_spec_source_persistentvolume", Help: "PersistentVolume source reference."},
		{Name: "kube_volumeattachment_status_attached", Help: "Information about volumeattachment."},
		{Name: "kube_volumeattachment_status_attachment_metadata", Help: "volumeattachment metadata."},
	})
}

func TestVolumeAttachmentFamilies(t *testing.T) {
	const name = "csi-5ff16a1ad085261021e21c6cb3a6defb979a8794f25a4f90f6285664cff37224"
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{
			Generation: 2, Name: name, UID: "uid-va",
			Labels: map[string]string{"app": "foobar"},
		},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "cinder.csi.openstack.org",
			NodeName: "node1",
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pvc-44f6ff3f-ba9b-49c4-9b95-8b01c4bd4bab")},
		},
		Status: storagev1.VolumeAttachmentStatus{
			Attached:           true,
			AttachmentMetadata: map[string]string{"DevicePath": "/dev/sdd"},
		},
	}
	created := va.DeepCopy()
	created.CreationTimestamp = unixTime(1500000000)
	created.Labels["team.io/ownerName"] = "sre"
	created.Status.Attached = false
	runStorageCases(t, volumeAttachmentResource(), []storageCase{
		{
			name: "attached",
			obj:  va,
			want: `
				kube_volumeattachment_info{attacher="cinder.csi.openstack.org",node="node1",volumeattachment="` + name + `"} 1
				kube_volumeattachment_labels{label_app="foobar",volumeattachment="` + name + `"} 1
				kube_volumeattachment_spec_source_persistentvolume{volumeattachment="` + name + `",volumename="pvc-44f6ff3f-ba9b-49c4-9b95-8b01c4bd4bab"} 1
				kube_volumeattachment_status_attached{volumeattachment="` + name + `"} 1
				kube_volumeattachment_status_attachment_metadata{metadata_device_path="/dev/sdd",volumeattachment="` + name + `"} 1`,
		},
		{
			// kube-state-metrics has no allowlist for volume attachments:
			// every label is exported, whatever the options say.
			name: "all labels regardless of allowlist, created, detached",
			opts: FamilyOptions{LabelsAllowlist: []string{"none"}},
			obj:  created,
			families: []string{
				"kube_volumeattachment_labels", "kube_volumeattachment_created", "kube_volumeattachment_status_attached",
			},
			want: `
				kube_volumeattachment_created{volumeattachment="` + name + `"} 1.5e+09
				kube_volumeattachment_labels{label_app="foobar",label_team_io_owner_name="sre",volumeattachment="` + name + `"} 1
				kube_volumeattachment_status_attached{volumeattachment="` + name + `"} 0`,
		},
	})
}

// TestVolumeAttachmentMalformed renders every family of an empty attachment
// without panicking: the map families still render one series.
func TestVolumeAttachmentMalformed(t *testing.T) {
	runStorageCases(t, volumeAttachmentResource(), []storageCase{
		{
			name:     "empty",
			obj:      &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			families: storageFamilyNames(volumeAttachmentResource()),
			want: `
				kube_volumeattachment_labels{} 1
				kube_volumeattachment_info{} 1
				kube_volumeattachment_status_attached{} 0
				kube_volumeattachment_status_attachment_metadata{} 1`,
		},
		{
			name: "empty keys and values",
			obj: &storagev1.VolumeAttachment{
				ObjectMeta: metav1.ObjectMeta{UID: "u", Name: "odd", Labels: map[string]string{"": "x", "a": ""}},
				Spec:       storagev1.VolumeAttachmentSpec{Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("")}},
				Status:     storagev1.VolumeAttachmentStatus{AttachmentMetadata: map[string]string{}},
			},
			families: storageFamilyNames(volumeAttachmentResource()),
			want: `
				kube_volumeattachment_labels{label_="x",volumeattachment="odd"} 1
				kube_volumeattachment_info{volumeattachment="odd"} 1
				kube_volumeattachment_spec_source_persistentvolume{volumeattachment="odd"} 1
				kube_volumeattachment_status_attached{volumeattachment="odd"} 0
				kube_volumeattachment_status_attachment_metadata{volumeattachment="odd"} 1`,
		},
	})
}
