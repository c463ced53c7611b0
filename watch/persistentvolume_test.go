package watch

import (
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Golden tests of the persistent volume families. The cases port
// kube-state-metrics v2.20.0's internal/store/persistentvolume_test.go: same
// input objects, same expected series, in our exposition format (labels
// sorted, empty-valued labels left out).

// storageCase renders obj with the named families (every family that is not
// opt-in when none is named) and expects want. It serves the tests of the
// storage resources: persistent volumes and claims, storage classes, volume
// attachments and certificate signing requests.
type storageCase struct {
	name     string
	opts     FamilyOptions
	obj      any
	families []string
	want     string
}

func runStorageCases(t *testing.T, r *Resource, cases []storageCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, r, c.opts, c.obj, c.families...))
		})
	}
}

// requireStorageFamilies checks the resource's family descriptions, in
// order. Every family is a gauge (the zero Type) in kube-state-metrics.
func requireStorageFamilies(t *testing.T, r *Resource, want []FamilyInfo) {
	t.Helper()
	require.Equal(t, want, r.Families(FamilyOptions{}))
}

// storageFamilyNames returns the names of every family of the resource,
// opt-in ones included (for malformed-object cases).
func storageFamilyNames(r *Resource) []string {
	var names []string
	for _, f := range r.Families(FamilyOptions{}) {
		names = append(names, f.Name)
	}
	return names
}

// storageAllAllowed exports every label and annotation.
var storageAllAllowed = FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}}

// testPV returns a persistent volume with a name and UID; edit sets the
// rest.
func testPV(name string, edit func(*v1.PersistentVolume)) *v1.PersistentVolume {
	p := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	if edit != nil {
		edit(p)
	}
	return p
}

// pvSource returns an edit setting a persistent volume's source and
// Available phase, as the info cases of kube-state-metrics do.
func pvSource(s v1.PersistentVolumeSource) func(*v1.PersistentVolume) {
	return func(p *v1.PersistentVolume) {
		p.Spec.PersistentVolumeSource = s
		p.Status.Phase = v1.VolumeAvailable
	}
}

func TestPersistentVolumeFamiliesMetadata(t *testing.T) {
	requireStorageFamilies(t, persistentVolumeResource(), []FamilyInfo{
		{Name: "kube_persistentvolume_claim_ref", Help: "Information about the Persistent Volume Claim Reference.", Stability: Stable},
		{Name: "kube_persistentvolume_annotations", Help: "Kubernetes annotations converted to Prometheus labels."},
		{Name: "kube_persistentvolume_labels", Help: "Kubernetes labels converted to Prometheus labels.", Stability: Stable},
		{Name: "kube_persistentvolume_status_phase", Help: "The phase indicates if a volume is available, bound to a claim, or released by a claim.", Stability: Stable},
		{Name: "kube_persistentvolume_info", Help: "Information about persistentvolume.", Stability: Stable},
		{Name: "kube_persistentvolume_capacity_bytes", Help: "Persistentvolume capacity in bytes.", Stability: Stable},
		{Name: "kube_persistentvolume_created", Help: "Unix creation timestamp"},
		{Name: "kube_persistentvolume_deletion_timestamp", Help: "Unix deletion timestamp"},
		{Name: "kube_persistentvolume_csi_attributes", Help: "CSI attributes of the Persistent Volume.", OptIn: true},
		{Name: "kube_persistentvolume_volume_mode", Help: "Volume Mode information for the PersistentVolume."},
		{Name: "kube_persistentvolume_access_mode", Help: "The access mode(s) specified by the persistent volume."},
	})
}

func TestPersistentVolumePhase(t *testing.T) {
	const phase = "kube_persistentvolume_status_phase"
	var cases []storageCase
	for _, p := range persistentVolumePhases {
		want := ""
		for _, s := range persistentVolumePhases {
			v := "0"
			if s == p {
				v = "1"
			}
			want += phase + `{persistentvolume="test-pv",phase="` + string(s) + `"} ` + v + "\n"
		}
		cases = append(cases, storageCase{
			name:     string(p),
			obj:      testPV("test-pv", func(pv *v1.PersistentVolume) { pv.Status.Phase = p; pv.Spec.StorageClassName = "test" }),
			families: []string{phase},
			want:     want,
		})
	}
	cases = append(cases, storageCase{name: "no phase", obj: testPV("test-pv", nil), families: []string{phase}})
	runStorageCases(t, persistentVolumeResource(), cases)
}

func TestPersistentVolumeInfo(t *testing.T) {
	const info = "kube_persistentvolume_info"
	iscsi := v1.ISCSIPersistentVolumeSource{TargetPortal: "1.2.3.4:3260", IQN: "iqn.my.test.server.target00", Lun: 123}
	iscsiInitiator := iscsi
	iscsiInitiator.InitiatorName = ptr.To("iqn.my.test.initiator:112233")
	dir := v1.HostPathDirectory
	runStorageCases(t, persistentVolumeResource(), []storageCase{
		{
			name: "reclaim policy",
			obj: testPV("test-pv-available", func(p *v1.PersistentVolume) {
				p.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
				p.Status.Phase = v1.VolumeAvailable
			}),
			families: []string{info},
			want:     `kube_persistentvolume_info{persistentvolume="test-pv-available",reclaim_policy="Retain"} 1`,
		},
		{
			// A label named like an info label changes nothing.
			name: "label fc_lun",
			obj: testPV("test-pv-available", func(p *v1.PersistentVolume) {
				p.Labels = map[string]string{"fc_lun": "456"}
				p.Status.Phase = v1.VolumeAvailable
			}),
			families: []string{info},
			want:     `kube_persistentvolume_info{persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "gce persistent disk",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "name"}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{gce_persistent_disk_name="name",persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "aws elastic block store",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://eu-west-1c/vol-012d34d567890123b"}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{ebs_volume_id="aws://eu-west-1c/vol-012d34d567890123b",persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "azure disk",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{AzureDisk: &v1.AzureDiskVolumeSource{DiskName: "azure_disk_1"}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{azure_disk_name="azure_disk_1",persistentvolume="test-pv-available"} 1`,
		},
		{
			name: "fc lun and target wwns",
			obj: testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{FC: &v1.FCVolumeSource{
				Lun: ptr.To[int32](123), TargetWWNs: []string{"0123456789abcdef", "abcdef0123456789"},
			}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{fc_lun="123",fc_target_wwns="0123456789abcdef,abcdef0123456789",persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "fc wwids",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{FC: &v1.FCVolumeSource{WWIDs: []string{"0123456789abcdef", "abcdef0123456789"}}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{fc_wwids="0123456789abcdef,abcdef0123456789",persistentvolume="test-pv-available"} 1`,
		},
		{
			// kube-state-metrics writes a comma only once its result is not
			// empty: leading empty entries vanish, later ones stay.
			name: "fc empty wwns",
			obj: testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{FC: &v1.FCVolumeSource{
				WWIDs: []string{"", "", "a", "", "b", ""}, TargetWWNs: []string{""},
			}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{fc_wwids="a,,b,",persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "iscsi",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{ISCSI: &iscsi})),
			families: []string{info},
			want:     `kube_persistentvolume_info{iscsi_iqn="iqn.my.test.server.target00",iscsi_lun="123",iscsi_target_portal="1.2.3.4:3260",persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "iscsi with initiator name",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{ISCSI: &iscsiInitiator})),
			families: []string{info},
			want:     `kube_persistentvolume_info{iscsi_initiator_name="iqn.my.test.initiator:112233",iscsi_iqn="iqn.my.test.server.target00",iscsi_lun="123",iscsi_target_portal="1.2.3.4:3260",persistentvolume="test-pv-available"} 1`,
		},
		{
			// The iSCSI lun is not a pointer: 0 is reported.
			name:     "iscsi lun 0",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{ISCSI: &v1.ISCSIPersistentVolumeSource{}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{iscsi_lun="0",persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "nfs",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "1.2.3.4", Path: "/myPath"}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{nfs_path="/myPath",nfs_server="1.2.3.4",persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "csi",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "test-driver", VolumeHandle: "test-volume-handle"}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{csi_driver="test-driver",csi_volume_handle="test-volume-handle",persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "local with fs type",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{FSType: ptr.To("ext4"), Path: "/mnt/data"}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{local_fs="ext4",local_path="/mnt/data",persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "local",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/data"}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{local_path="/mnt/data",persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "host path with type",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/mnt/data", Type: &dir}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{host_path="/mnt/data",host_path_type="Directory",persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "host path",
			obj:      testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/mnt/data"}})),
			families: []string{info},
			want:     `kube_persistentvolume_info{host_path="/mnt/data",persistentvolume="test-pv-available"} 1`,
		},
		{
			// Only the first source, in kube-state-metrics' order, counts.
			name: "two sources",
			obj: testPV("test-pv-available", pvSource(v1.PersistentVolumeSource{
				HostPath: &v1.HostPathVolumeSource{Path: "/mnt/data"},
				NFS:      &v1.NFSVolumeSource{Server: "1.2.3.4", Path: "/myPath"},
			})),
			families: []string{info},
			want:     `kube_persistentvolume_info{nfs_path="/myPath",nfs_server="1.2.3.4",persistentvolume="test-pv-available"} 1`,
		},
	})
}

func TestPersistentVolumeFamilies(t *testing.T) {
	labeled := func(p *v1.PersistentVolume) {
		p.Annotations = map[string]string{"app.k8s.io/owner": "mysql-server", "foo": "bar"}
		p.Labels = map[string]string{"app": "mysql-server", "hello": "world"}
		p.Status.Phase = v1.VolumePending
	}
	csi := func(attrs map[string]string) func(*v1.PersistentVolume) {
		return func(p *v1.PersistentVolume) {
			p.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: "test-driver", VolumeHandle: "test-volume-handle", VolumeAttributes: attrs}
		}
	}
	meta := []string{"kube_persistentvolume_annotations", "kube_persistentvolume_labels"}
	runStorageCases(t, persistentVolumeResource(), []storageCase{
		{
			name: "labels without allowlist",
			obj: testPV("test-labeled-pv", func(p *v1.PersistentVolume) {
				p.Labels = map[string]string{"app": "mysql-server"}
				p.Status.Phase = v1.VolumePending
				p.Spec.StorageClassName = "test"
			}),
			families: []string{"kube_persistentvolume_labels"},
		},
		{
			name:     "unlabeled",
			obj:      testPV("test-unlabeled-pv", nil),
			families: []string{"kube_persistentvolume_labels"},
		},
		{
			name: "claim ref",
			obj: testPV("test-claimed-pv", func(p *v1.PersistentVolume) {
				p.Status.Phase = v1.VolumePending
				p.Spec.StorageClassName = "test"
				p.Spec.ClaimRef = &v1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: "pv-claim", Namespace: "default"}
			}),
			families: []string{"kube_persistentvolume_claim_ref"},
			want:     `kube_persistentvolume_claim_ref{claim_namespace="default",name="pv-claim",persistentvolume="test-claimed-pv"} 1`,
		},
		{
			name:     "no claim ref",
			obj:      testPV("test-unclaimed-pv", nil),
			families: []string{"kube_persistentvolume_claim_ref"},
		},
		{
			name: "capacity",
			obj: testPV("test-pv", func(p *v1.PersistentVolume) {
				p.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("5Gi")}
			}),
			families: []string{"kube_persistentvolume_capacity_bytes"},
			want:     `kube_persistentvolume_capacity_bytes{persistentvolume="test-pv"} 5.36870912e+09`,
		},
		{
			// Rounded up to whole bytes.
			name: "fractional capacity",
			obj: testPV("test-pv", func(p *v1.PersistentVolume) {
				p.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("1500m")}
			}),
			families: []string{"kube_persistentvolume_capacity_bytes"},
			want:     `kube_persistentvolume_capacity_bytes{persistentvolume="test-pv"} 2`,
		},
		{
			name:     "allowlisted labels and annotations",
			opts:     FamilyOptions{AnnotationsAllowlist: []string{"app.k8s.io/owner"}, LabelsAllowlist: []string{"app"}},
			obj:      testPV("test-allowlisted-labels-annotations", labeled),
			families: meta,
			want: `
				kube_persistentvolume_annotations{annotation_app_k8s_io_owner="mysql-server",persistentvolume="test-allowlisted-labels-annotations"} 1
				kube_persistentvolume_labels{label_app="mysql-server",persistentvolume="test-allowlisted-labels-annotations"} 1`,
		},
		{
			name:     "default labels and annotations",
			obj:      testPV("test-defaul-labels-annotations", labeled),
			families: meta,
		},
		{
			name: "created",
			obj: testPV("test-pv-created", func(p *v1.PersistentVolume) {
				p.CreationTimestamp = unixTime(1500000000)
				p.Status.Phase = v1.VolumePending
			}),
			families: []string{"kube_persistentvolume_created"},
			want:     `kube_persistentvolume_created{persistentvolume="test-pv-created"} 1.5e+09`,
		},
		{
			name: "terminating",
			obj: testPV("test-pv-terminating", func(p *v1.PersistentVolume) {
				p.CreationTimestamp = unixTime(1500000000)
				p.DeletionTimestamp = ptr.To(unixTime(1800000000))
				p.Status.Phase = v1.VolumeBound
			}),
			families: []string{"kube_persistentvolume_deletion_timestamp"},
			want:     `kube_persistentvolume_deletion_timestamp{persistentvolume="test-pv-terminating"} 1.8e+09`,
		},
		{
			name:     "csi attributes unset",
			obj:      testPV("test-pv-available", csi(nil)),
			families: []string{"kube_persistentvolume_csi_attributes"},
			want:     `kube_persistentvolume_csi_attributes{persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "csi attributes",
			obj:      testPV("test-pv-available", csi(map[string]string{"mounter": "rbd", "mapOptions": "krbd:rxbounce", "other": "x"})),
			families: []string{"kube_persistentvolume_csi_attributes"},
			want:     `kube_persistentvolume_csi_attributes{csi_map_options="krbd:rxbounce",csi_mounter="rbd",persistentvolume="test-pv-available"} 1`,
		},
		{
			name:     "csi attributes opt in",
			obj:      testPV("test-pv-available", csi(map[string]string{"mounter": "rbd"})),
			families: nil,
			want: `
				kube_persistentvolume_capacity_bytes{persistentvolume="test-pv-available"} 0
				kube_persistentvolume_info{csi_driver="test-driver",csi_volume_handle="test-volume-handle",persistentvolume="test-pv-available"} 1
				kube_persistentvolume_volume_mode{persistentvolume="test-pv-available",volumemode="Filesystem"} 1`,
		},
		{
			name:     "default volume mode",
			obj:      testPV("test-default-volumemode", nil),
			families: []string{"kube_persistentvolume_volume_mode"},
			want:     `kube_persistentvolume_volume_mode{persistentvolume="test-default-volumemode",volumemode="Filesystem"} 1`,
		},
		{
			name: "block volume mode",
			obj: testPV("test-block-volumemode", func(p *v1.PersistentVolume) {
				p.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
			}),
			families: []string{"kube_persistentvolume_volume_mode"},
			want:     `kube_persistentvolume_volume_mode{persistentvolume="test-block-volumemode",volumemode="Block"} 1`,
		},
		{
			name: "access modes",
			obj: testPV("test-pv-access-modes", func(p *v1.PersistentVolume) {
				p.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany}
			}),
			families: []string{"kube_persistentvolume_access_mode"},
			want: `
				kube_persistentvolume_access_mode{access_mode="ReadWriteOnce",persistentvolume="test-pv-access-modes"} 1
				kube_persistentvolume_access_mode{access_mode="ReadOnlyMany",persistentvolume="test-pv-access-modes"} 1`,
		},
	})
}

// TestPersistentVolumeMalformed renders every family of volumes with empty
// or half-filled fields: nothing may panic, and only the families that
// kube-state-metrics renders unconditionally produce series.
func TestPersistentVolumeMalformed(t *testing.T) {
	all := storageFamilyNames(persistentVolumeResource())
	runStorageCases(t, persistentVolumeResource(), []storageCase{
		{
			name:     "empty",
			opts:     storageAllAllowed,
			obj:      &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			families: all,
			want: `
				kube_persistentvolume_annotations{} 1
				kube_persistentvolume_labels{} 1
				kube_persistentvolume_info{} 1
				kube_persistentvolume_capacity_bytes{} 0
				kube_persistentvolume_volume_mode{volumemode="Filesystem"} 1`,
		},
		{
			name: "empty entries",
			obj: testPV("odd", func(p *v1.PersistentVolume) {
				p.Spec.ClaimRef = &v1.ObjectReference{}
				p.Spec.CSI = &v1.CSIPersistentVolumeSource{}
				p.Spec.FC = &v1.FCVolumeSource{}
				p.Spec.AccessModes = []v1.PersistentVolumeAccessMode{""}
				p.Spec.Capacity = v1.ResourceList{}
				p.Spec.VolumeMode = ptr.To(v1.PersistentVolumeMode(""))
				p.DeletionTimestamp = &metav1.Time{}
			}),
			families: all,
			want: `
				kube_persistentvolume_claim_ref{persistentvolume="odd"} 1
				kube_persistentvolume_info{persistentvolume="odd"} 1
				kube_persistentvolume_capacity_bytes{persistentvolume="odd"} 0
				kube_persistentvolume_csi_attributes{persistentvolume="odd"} 1
				kube_persistentvolume_volume_mode{persistentvolume="odd"} 1
				kube_persistentvolume_access_mode{persistentvolume="odd"} 1`,
		},
	})
}
