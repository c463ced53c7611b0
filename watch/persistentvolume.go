package watch

import (
	"context"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// persistentVolumeResource describes persistent volumes: kube-state-metrics'
// internal/store/persistentvolume.go.
func persistentVolumeResource() *Resource {
	return newResource("persistentvolumes", false, &v1.PersistentVolume{},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CoreV1().PersistentVolumes().List(ctx, o)
		},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CoreV1().PersistentVolumes().Watch(ctx, o)
		},
		func(p *v1.PersistentVolume, e *Emitter) {
			e.Identity("persistentvolume", p.Name)
		},
		persistentVolumeFamilies,
	)
}

// persistentVolumeFamilies lists the persistent volume families, in
// kube-state-metrics' order.
func persistentVolumeFamilies(o FamilyOptions) []Family[*v1.PersistentVolume] {
	type PV = *v1.PersistentVolume
	return []Family[PV]{
		{
			Name: "kube_persistentvolume_claim_ref", Help: "Information about the Persistent Volume Claim Reference.",
			Type: Gauge, Stability: Stable, Generate: persistentVolumeClaimRef,
		},
		{
			Name: "kube_persistentvolume_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[PV], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_persistentvolume_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[PV], o.LabelsAllowlist),
		},
		{
			Name: "kube_persistentvolume_status_phase", Help: "The phase indicates if a volume is available, bound to a claim, or released by a claim.",
			Type: Gauge, Stability: Stable,
			Generate: func(p PV, e *Emitter) { emitOneOf(e, "phase", p.Status.Phase, persistentVolumePhases) },
		},
		{
			Name: "kube_persistentvolume_info", Help: "Information about persistentvolume.",
			Type: Gauge, Stability: Stable, Generate: persistentVolumeInfo,
		},
		{
			// Rendered even without a storage capacity, as 0.
			Name: "kube_persistentvolume_capacity_bytes", Help: "Persistentvolume capacity in bytes.",
			Type: Gauge, Stability: Stable,
			Generate: func(p PV, e *Emitter) {
				v, _ := storageBytes(p.Spec.Capacity)
				e.Emit(v)
			},
		},
		{
			// Alpha here, unlike the _created families of most resources.
			Name: "kube_persistentvolume_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitCreated[PV],
		},
		{
			Name: "kube_persistentvolume_deletion_timestamp", Help: "Unix deletion timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitDeletionTimestamp[PV],
		},
		{
			Name: "kube_persistentvolume_csi_attributes", Help: "CSI attributes of the Persistent Volume.",
			Type: Gauge, Stability: Alpha, OptIn: true, Generate: persistentVolumeCSIAttributes,
		},
		{
			Name: "kube_persistentvolume_volume_mode", Help: "Volume Mode information for the PersistentVolume.",
			Type: Gauge, Stability: Alpha, Generate: persistentVolumeMode,
		},
		{
			Name: "kube_persistentvolume_access_mode", Help: "The access mode(s) specified by the persistent volume.",
			Type: Gauge, Stability: Alpha,
			Generate: func(p PV, e *Emitter) { emitAccessModes(e, p.Spec.AccessModes) },
		},
	}
}

// persistentVolumePhases are the states of kube_persistentvolume_status_phase.
var persistentVolumePhases = []v1.PersistentVolumePhase{
	v1.VolumePending, v1.VolumeAvailable, v1.VolumeBound, v1.VolumeReleased, v1.VolumeFailed,
}

func persistentVolumeClaimRef(p *v1.PersistentVolume, e *Emitter) {
	if r := p.Spec.ClaimRef; r != nil {
		e.Emit(1, "name", r.Name, "claim_namespace", r.Namespace)
	}
}

// persistentVolumeSourceKeys are the source labels of
// kube_persistentvolume_info, in kube-state-metrics' order: every series
// carries all of them, empty but for those of the volume's source.
var persistentVolumeSourceKeys = []string{
	"gce_persistent_disk_name", "ebs_volume_id", "azure_disk_name",
	"fc_wwids", "fc_lun", "fc_target_wwns",
	"iscsi_target_portal", "iscsi_iqn", "iscsi_lun", "iscsi_initiator_name",
	"nfs_server", "nfs_path", "csi_driver", "csi_volume_handle",
	"local_path", "local_fs", "host_path", "host_path_type",
}

func persistentVolumeInfo(p *v1.PersistentVolume, e *Emitter) {
	src := persistentVolumeSourceLabels(&p.Spec.PersistentVolumeSource)
	kv := make([]string, 0, 2*(len(persistentVolumeSourceKeys)+2))
	kv = append(kv, "storageclass", p.Spec.StorageClassName)
	for _, k := range persistentVolumeSourceKeys {
		v := ""
		for i := 0; i+1 < len(src); i += 2 {
			if src[i] == k {
				v = src[i+1]
			}
		}
		kv = append(kv, k, v)
	}
	kv = append(kv, "reclaim_policy", string(p.Spec.PersistentVolumeReclaimPolicy))
	e.Emit(1, kv...)
}

// persistentVolumeSourceLabels returns the kube_persistentvolume_info labels
// of the volume's source, as name, value pairs. Only the first source set,
// in kube-state-metrics' order, is reported; the labels of other sources are
// empty, so left out.
func persistentVolumeSourceLabels(s *v1.PersistentVolumeSource) []string {
	switch {
	case s.GCEPersistentDisk != nil:
		return []string{"gce_persistent_disk_name", s.GCEPersistentDisk.PDName}
	case s.AWSElasticBlockStore != nil:
		return []string{"ebs_volume_id", s.AWSElasticBlockStore.VolumeID}
	case s.AzureDisk != nil:
		return []string{"azure_disk_name", s.AzureDisk.DiskName}
	case s.FC != nil:
		var lun string
		if s.FC.Lun != nil {
			lun = strconv.FormatInt(int64(*s.FC.Lun), 10)
		}
		return []string{"fc_wwids", joinWWNs(s.FC.WWIDs), "fc_lun", lun, "fc_target_wwns", joinWWNs(s.FC.TargetWWNs)}
	case s.ISCSI != nil:
		return []string{
			"iscsi_target_portal", s.ISCSI.TargetPortal,
			"iscsi_iqn", s.ISCSI.IQN,
			"iscsi_lun", strconv.FormatInt(int64(s.ISCSI.Lun), 10),
			"iscsi_initiator_name", optionalString(s.ISCSI.InitiatorName),
		}
	case s.NFS != nil:
		return []string{"nfs_server", s.NFS.Server, "nfs_path", s.NFS.Path}
	case s.CSI != nil:
		return []string{"csi_driver", s.CSI.Driver, "csi_volume_handle", s.CSI.VolumeHandle}
	case s.Local != nil:
		return []string{"local_path", s.Local.Path, "local_fs", optionalString(s.Local.FSType)}
	case s.HostPath != nil:
		return []string{"host_path", s.HostPath.Path, "host_path_type", optionalString(s.HostPath.Type)}
	}
	return nil
}

// joinWWNs joins with commas as kube-state-metrics does for FC WWIDs and
// target WWNs: a comma is written before an element only once the result is
// non-empty, so leading empty elements leave no trace.
func joinWWNs(ss []string) string {
	for len(ss) > 0 && ss[0] == "" {
		ss = ss[1:]
	}
	return strings.Join(ss, ",")
}

// optionalString returns *p, or "" for nil.
func optionalString[S ~string](p *S) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// persistentVolumeCSIAttributes renders the Ceph CSI driver's mounter and
// mapOptions volume attributes of a CSI volume.
func persistentVolumeCSIAttributes(p *v1.PersistentVolume, e *Emitter) {
	if csi := p.Spec.CSI; csi != nil {
		e.Emit(1, "csi_mounter", csi.VolumeAttributes["mounter"], "csi_map_options", csi.VolumeAttributes["mapOptions"])
	}
}

// persistentVolumeMode renders the volume mode, Filesystem (the API
// default) when unset.
func persistentVolumeMode(p *v1.PersistentVolume, e *Emitter) {
	mode := v1.PersistentVolumeFilesystem
	if p.Spec.VolumeMode != nil {
		mode = *p.Spec.VolumeMode
	}
	e.Emit(1, "volumemode", string(mode))
}

// emitAccessModes renders one series per access mode of a persistent volume
// or claim, repeats included.
func emitAccessModes(e *Emitter, modes []v1.PersistentVolumeAccessMode) {
	for _, m := range modes {
		e.Emit(1, "access_mode", string(m))
	}
}

// storageBytes returns the storage quantity of a resource list in whole
// bytes (rounded up), and whether it is set.
func storageBytes(rl v1.ResourceList) (float64, bool) {
	q, ok := rl[v1.ResourceStorage]
	return float64(q.Value()), ok
}
