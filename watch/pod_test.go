package watch

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Golden tests of the pod families that are not about containers. The cases
// port kube-state-metrics v2.20.0's internal/store/pod_test.go: same input
// objects, same expected series, in our exposition format (labels sorted,
// empty-valued labels left out).

// podCase renders pod with the named families and expects want.
type podCase struct {
	name     string
	opts     FamilyOptions
	pod      *v1.Pod
	families []string
	want     string
}

func runPodCases(t *testing.T, cases []podCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := renderText(t, podResource(), c.opts, c.pod, c.families...)
			requireGolden(t, c.want, got)
		})
	}
}

// testPod returns a pod with the given identity; edit sets the rest.
func testPod(ns, name, uid string, edit func(p *v1.Pod)) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
	if edit != nil {
		edit(p)
	}
	return p
}

func unixTime(sec int64) metav1.Time { return metav1.Time{Time: time.Unix(sec, 0)} }

func withConditions(cs ...v1.PodCondition) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Status.Conditions = cs }
}

func withStatusReason(reason string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.DeletionTimestamp = &metav1.Time{}
		p.Status.Phase = v1.PodRunning
		p.Status.Reason = reason
	}
}

func TestPodFamiliesMetadata(t *testing.T) {
	want := []FamilyInfo{
		{Name: "kube_pod_created", Help: "Unix creation timestamp", Stability: Stable},
		{Name: "kube_pod_deletion_timestamp", Help: "Unix deletion timestamp"},
		{Name: "kube_pod_info", Help: "Information about pod.", Stability: Stable},
		{Name: "kube_pod_ips", Help: "Pod IP addresses"},
		{Name: "kube_pod_annotations", Help: "Kubernetes annotations converted to Prometheus labels."},
		{Name: "kube_pod_labels", Help: "Kubernetes labels converted to Prometheus labels.", Stability: Stable},
		{Name: "kube_pod_overhead_cpu_cores", Help: "The pod overhead in regards to cpu cores associated with running a pod."},
		{Name: "kube_pod_overhead_memory_bytes", Help: "The pod overhead in regards to memory associated with running a pod."},
		{Name: "kube_pod_owner", Help: "Information about the Pod's owner.", Stability: Stable},
		{Name: "kube_pod_resourceclaim_info", Help: "Information about a DRA ResourceClaim referenced by a pod, one series per pod.spec.resourceClaims entry; claim_name is the pod-local reference and resourceclaim_name is the resolved ResourceClaim object name."},
		{Name: "kube_pod_restart_policy", Help: "Describes the restart policy in use by this pod.", Stability: Stable},
		{Name: "kube_pod_runtimeclass_name_info", Help: "The runtimeclass associated with the pod."},
		{Name: "kube_pod_spec_volumes_persistentvolumeclaims_info", Help: "Information about persistentvolumeclaim and ephemeral volumes in a pod.", Stability: Stable},
		{Name: "kube_pod_spec_volumes_persistentvolumeclaims_readonly", Help: "Describes whether a persistentvolumeclaim is mounted read only. Ephemeral volumes always report 0 since the ephemeral volume source does not support a read-only flag.", Stability: Stable},
		{Name: "kube_pod_start_time", Help: "Start time in unix timestamp for a pod.", Stability: Stable},
		{Name: "kube_pod_status_phase", Help: "The pods current phase.", Stability: Stable},
		{Name: "kube_pod_status_qos_class", Help: "The pods current qosClass."},
		{Name: "kube_pod_status_ready", Help: "Describes whether the pod is ready to serve requests.", Stability: Stable},
		{Name: "kube_pod_status_ready_time", Help: "Readiness achieved time in unix timestamp for a pod."},
		{Name: "kube_pod_status_initialized_time", Help: "Initialized time in unix timestamp for a pod."},
		{Name: "kube_pod_status_container_ready_time", Help: "Readiness achieved time in unix timestamp for a pod containers."},
		{Name: "kube_pod_status_reason", Help: "The pod status reasons"},
		{Name: "kube_pod_status_disruption_reason", Help: "The pod disruption condition reason"},
		{Name: "kube_pod_status_scheduled", Help: "Describes the status of the scheduling process for the pod.", Stability: Stable},
		{Name: "kube_pod_status_scheduled_time", Help: "Unix timestamp when pod moved into scheduled status", Stability: Stable},
		{Name: "kube_pod_status_unschedulable", Help: "Describes the unschedulable status for the pod.", Stability: Stable},
		{Name: "kube_pod_status_unscheduled_time", Help: "Unix timestamp when pod moved into unscheduled status"},
		{Name: "kube_pod_tolerations", Help: "Information about the pod tolerations"},
		{Name: "kube_pod_nodeselectors", Help: "Describes the Pod nodeSelectors.", OptIn: true},
		{Name: "kube_pod_service_account", Help: "The service account for a pod."},
		{Name: "kube_pod_scheduler", Help: "The scheduler for a pod."},
	}
	fs := podStatusFamilies(FamilyOptions{})
	got := make([]FamilyInfo, len(fs))
	for i, f := range fs {
		got[i] = f.Info()
		require.NotNil(t, f.Generate, f.Name)
	}
	// Every family is a gauge (the zero Type) in kube-state-metrics.
	require.Equal(t, want, got)
}

func TestPodIdentityAndInfoFamilies(t *testing.T) {
	controller, notController := true, false
	start := unixTime(1501569018)
	runPodCases(t, []podCase{
		{
			name: "created info ips start_time and no owner",
			pod: testPod("ns1", "pod1", "abc-123-xxx", func(p *v1.Pod) {
				p.CreationTimestamp = unixTime(1500000000)
				p.Spec = v1.PodSpec{NodeName: "node1", PriorityClassName: "system-node-critical", HostNetwork: true}
				p.Status = v1.PodStatus{
					HostIP: "1.1.1.1",
					PodIP:  "1.2.3.4",
					PodIPs: []v1.PodIP{
						{IP: "1.2.3.4"},
						{IP: "fc00:1234:5678:90ab:cdef:cafe:f00d:d00d"},
						{IP: "::ffff:1.2.3.4"},
					},
					StartTime: &start,
				}
			}),
			families: []string{"kube_pod_created", "kube_pod_info", "kube_pod_ips", "kube_pod_start_time", "kube_pod_owner"},
			want: `
				kube_pod_created{namespace="ns1",pod="pod1",uid="abc-123-xxx"} 1.5e+09
				kube_pod_info{host_ip="1.1.1.1",host_network="true",namespace="ns1",node="node1",pod="pod1",pod_ip="1.2.3.4",priority_class="system-node-critical",uid="abc-123-xxx"} 1
				kube_pod_ips{ip="1.2.3.4",ip_family="4",namespace="ns1",pod="pod1",uid="abc-123-xxx"} 1
				kube_pod_ips{ip="fc00:1234:5678:90ab:cdef:cafe:f00d:d00d",ip_family="6",namespace="ns1",pod="pod1",uid="abc-123-xxx"} 1
				kube_pod_ips{ip="::ffff:1.2.3.4",ip_family="4",namespace="ns1",pod="pod1",uid="abc-123-xxx"} 1
				kube_pod_start_time{namespace="ns1",pod="pod1",uid="abc-123-xxx"} 1.501569018e+09
				kube_pod_owner{namespace="ns1",pod="pod1",uid="abc-123-xxx"} 1
			`,
		},
		{
			name: "unparseable ips are skipped",
			pod: testPod("ns1", "pod1", "uid1", func(p *v1.Pod) {
				p.Status.PodIPs = []v1.PodIP{{IP: "not-an-ip"}, {IP: ""}, {IP: "fe80::1%eth0"}}
			}),
			families: []string{"kube_pod_ips"},
			want:     `kube_pod_ips{ip="fe80::1%eth0",ip_family="6",namespace="ns1",pod="pod1",uid="uid1"} 1`,
		},
		{
			name: "controller owner",
			pod: testPod("ns2", "pod2", "abc-456-xxx", func(p *v1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs-name", Controller: &controller}}
				p.Spec.NodeName = "node2"
				p.Status = v1.PodStatus{HostIP: "1.1.1.1", PodIP: "2.3.4.5"}
			}),
			families: []string{"kube_pod_created", "kube_pod_info", "kube_pod_start_time", "kube_pod_owner"},
			want: `
				kube_pod_info{created_by_kind="ReplicaSet",created_by_name="rs-name",host_ip="1.1.1.1",host_network="false",namespace="ns2",node="node2",pod="pod2",pod_ip="2.3.4.5",uid="abc-456-xxx"} 1
				kube_pod_owner{namespace="ns2",owner_is_controller="true",owner_kind="ReplicaSet",owner_name="rs-name",pod="pod2",uid="abc-456-xxx"} 1
			`,
		},
		{
			name: "several owners, only the controller creates",
			pod: testPod("ns2", "pod2", "uid2", func(p *v1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{
					{Kind: "Node", Name: "n1"},
					{Kind: "ConfigMap", Name: "cm", Controller: &notController},
					{Kind: "StatefulSet", Name: "web", Controller: &controller},
				}
			}),
			families: []string{"kube_pod_info", "kube_pod_owner"},
			want: `
				kube_pod_info{created_by_kind="StatefulSet",created_by_name="web",host_network="false",namespace="ns2",pod="pod2",uid="uid2"} 1
				kube_pod_owner{namespace="ns2",owner_is_controller="false",owner_kind="Node",owner_name="n1",pod="pod2",uid="uid2"} 1
				kube_pod_owner{namespace="ns2",owner_is_controller="false",owner_kind="ConfigMap",owner_name="cm",pod="pod2",uid="uid2"} 1
				kube_pod_owner{namespace="ns2",owner_is_controller="true",owner_kind="StatefulSet",owner_name="web",pod="pod2",uid="uid2"} 1
			`,
		},
		{
			name: "deletion timestamp",
			pod: testPod("ns1", "pod1", "abc-123-xxx", func(p *v1.Pod) {
				p.CreationTimestamp = unixTime(1500000000)
				p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1800000000, 0)}
			}),
			families: []string{"kube_pod_deletion_timestamp"},
			want:     `kube_pod_deletion_timestamp{namespace="ns1",pod="pod1",uid="abc-123-xxx"} 1.8e+09`,
		},
		{
			name: "zero deletion timestamp and creation time render nothing",
			pod: testPod("ns1", "pod1", "uid1", func(p *v1.Pod) {
				p.DeletionTimestamp = &metav1.Time{}
			}),
			families: []string{"kube_pod_created", "kube_pod_deletion_timestamp"},
		},
		{
			name:     "restart policy Always",
			pod:      testPod("ns2", "pod2", "uid2", func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyAlways }),
			families: []string{"kube_pod_restart_policy"},
			want:     `kube_pod_restart_policy{namespace="ns2",pod="pod2",type="Always",uid="uid2"} 1`,
		},
		{
			name:     "restart policy OnFailure",
			pod:      testPod("ns2", "pod2", "uid2", func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure }),
			families: []string{"kube_pod_restart_policy"},
			want:     `kube_pod_restart_policy{namespace="ns2",pod="pod2",type="OnFailure",uid="uid2"} 1`,
		},
		{
			name: "runtime class",
			pod: testPod("ns1", "pod1", "uid1", func(p *v1.Pod) {
				rc := "foo"
				p.Labels = map[string]string{"app": "example"}
				p.Spec.RuntimeClassName = &rc
			}),
			families: []string{"kube_pod_runtimeclass_name_info"},
			want:     `kube_pod_runtimeclass_name_info{namespace="ns1",pod="pod1",runtimeclass_name="foo",uid="uid1"} 1`,
		},
		{
			name:     "no runtime class",
			pod:      testPod("ns1", "pod1", "uid1", nil),
			families: []string{"kube_pod_runtimeclass_name_info"},
		},
		{
			name:     "service account",
			pod:      testPod("ns1", "pod1", "uid1", func(p *v1.Pod) { p.Spec.ServiceAccountName = "service-account-name" }),
			families: []string{"kube_pod_service_account"},
			want:     `kube_pod_service_account{namespace="ns1",pod="pod1",service_account="service-account-name",uid="uid1"} 1`,
		},
		{
			name:     "scheduler",
			pod:      testPod("ns1", "pod1", "uid1", func(p *v1.Pod) { p.Spec.SchedulerName = "scheduler1" }),
			families: []string{"kube_pod_scheduler"},
			want:     `kube_pod_scheduler{name="scheduler1",namespace="ns1",pod="pod1",uid="uid1"} 1`,
		},
	})
}

func TestPodLabelsAndAnnotations(t *testing.T) {
	labelled := testPod("ns1", "pod1", "uid1", func(p *v1.Pod) {
		p.Labels = map[string]string{"app": "example"}
		p.Annotations = map[string]string{"app": "example"}
	})
	both := []string{"kube_pod_labels", "kube_pod_annotations"}
	runPodCases(t, []podCase{
		{
			name:     "no allowlist renders nothing",
			pod:      labelled,
			families: both,
		},
		{
			name:     "wildcard not first selects nothing but still renders",
			opts:     FamilyOptions{LabelsAllowlist: []string{"wildcard-not-first", "*"}},
			pod:      labelled,
			families: both,
			want:     `kube_pod_labels{namespace="ns1",pod="pod1",uid="uid1"} 1`,
		},
		{
			name:     "wildcard labels",
			opts:     FamilyOptions{LabelsAllowlist: []string{"*"}},
			pod:      labelled,
			families: both,
			want:     `kube_pod_labels{label_app="example",namespace="ns1",pod="pod1",uid="uid1"} 1`,
		},
		{
			name:     "wildcard annotations",
			opts:     FamilyOptions{AnnotationsAllowlist: []string{"*"}},
			pod:      labelled,
			families: both,
			want:     `kube_pod_annotations{annotation_app="example",namespace="ns1",pod="pod1",uid="uid1"} 1`,
		},
		{
			name: "exact and partial wildcard keys",
			opts: FamilyOptions{
				LabelsAllowlist:      []string{"team", "app.kubernetes.io/*", "*x*y*"},
				AnnotationsAllowlist: []string{"missing"},
			},
			pod: testPod("ns1", "pod1", "uid1", func(p *v1.Pod) {
				p.Labels = map[string]string{
					"team":                   "infra",
					"app.kubernetes.io/name": "web",
					"app.kubernetes.io/part": "shop",
					"other":                  "no",
					"axby":                   "too many wildcards",
				}
				p.Annotations = map[string]string{"other": "no"}
			}),
			families: both,
			want: `
				kube_pod_labels{label_app_kubernetes_io_name="web",label_app_kubernetes_io_part="shop",label_team="infra",namespace="ns1",pod="pod1",uid="uid1"} 1
				kube_pod_annotations{namespace="ns1",pod="pod1",uid="uid1"} 1
			`,
		},
		{
			name: "sanitised names conflict",
			opts: FamilyOptions{LabelsAllowlist: []string{"*"}},
			pod: testPod("ns1", "pod1", "uid1", func(p *v1.Pod) {
				p.Labels = map[string]string{
					"conflicting_label1":     "underscore",
					"conflicting.label1":     "dot",
					"conflicting-label1":     "hyphen",
					"conflicting_camelCase":  "camel_case",
					"conflicting_camel_case": "snake_case",
					"A.b.conflict1":          "already_taken",
					"a-b":                    "dash",
					"a.b":                    "dot",
					"empty":                  "",
				}
			}),
			families: []string{"kube_pod_labels"},
			want: `kube_pod_labels{` +
				`label_a_b_conflict1="already_taken",label_a_b_conflict2="dash",label_a_b_conflict3="dot",` +
				`label_conflicting_camel_case_conflict1="camel_case",label_conflicting_camel_case_conflict2="snake_case",` +
				`label_conflicting_label1_conflict1="hyphen",label_conflicting_label1_conflict2="dot",label_conflicting_label1_conflict3="underscore",` +
				`namespace="ns1",pod="pod1",uid="uid1"} 1`,
		},
	})
}

func TestPodSpecFamilies(t *testing.T) {
	seconds3600, seconds3600b, seconds1800, seconds0 := int64(3600), int64(3600), int64(1800), int64(0)
	runPodCases(t, []podCase{
		{
			name: "resource claims resolved from status",
			pod: testPod("ns1", "pod1", "uid1", func(p *v1.Pod) {
				shared, tmpl, resolved := "shared-gpu-claim", "gpu-template", "pod1-gpu-tmpl-abcde"
				p.Spec.ResourceClaims = []v1.PodResourceClaim{
					{Name: "gpu", ResourceClaimName: &shared},
					{Name: "gpu-tmpl", ResourceClaimTemplateName: &tmpl},
				}
				p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu-tmpl", ResourceClaimName: &resolved}}
			}),
			families: []string{"kube_pod_resourceclaim_info"},
			want: `
				kube_pod_resourceclaim_info{claim_name="gpu",namespace="ns1",pod="pod1",resourceclaim_name="shared-gpu-claim",uid="uid1"} 1
				kube_pod_resourceclaim_info{claim_name="gpu-tmpl",namespace="ns1",pod="pod1",resourceclaim_name="pod1-gpu-tmpl-abcde",resourceclaim_template_name="gpu-template",uid="uid1"} 1
			`,
		},
		{
			name: "pending template claim renders, claim without source is skipped",
			pod: testPod("ns2", "pod2", "uid2", func(p *v1.Pod) {
				tmpl := "gpu-template"
				p.Spec.ResourceClaims = []v1.PodResourceClaim{
					{Name: "pending", ResourceClaimTemplateName: &tmpl},
					{Name: "bad"},
				}
			}),
			families: []string{"kube_pod_resourceclaim_info"},
			want:     `kube_pod_resourceclaim_info{claim_name="pending",namespace="ns2",pod="pod2",resourceclaim_template_name="gpu-template",uid="uid2"} 1`,
		},
		{
			name: "persistentvolumeclaim and ephemeral volumes",
			pod: testPod("ns1", "pod1", "uid1", func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{
					{Name: "myvol", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "claim1"}}},
					{Name: "my-readonly-vol", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "claim2", ReadOnly: true}}},
					{Name: "my-ephemeral-vol", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}},
					{Name: "not-pvc-vol", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: "memory"}}},
				}
			}),
			families: []string{"kube_pod_spec_volumes_persistentvolumeclaims_info", "kube_pod_spec_volumes_persistentvolumeclaims_readonly"},
			want: `
				kube_pod_spec_volumes_persistentvolumeclaims_info{ephemeral="false",namespace="ns1",persistentvolumeclaim="claim1",pod="pod1",uid="uid1",volume="myvol"} 1
				kube_pod_spec_volumes_persistentvolumeclaims_info{ephemeral="false",namespace="ns1",persistentvolumeclaim="claim2",pod="pod1",uid="uid1",volume="my-readonly-vol"} 1
				kube_pod_spec_volumes_persistentvolumeclaims_info{ephemeral="true",namespace="ns1",persistentvolumeclaim="pod1-my-ephemeral-vol",pod="pod1",uid="uid1",volume="my-ephemeral-vol"} 1
				kube_pod_spec_volumes_persistentvolumeclaims_readonly{ephemeral="false",namespace="ns1",persistentvolumeclaim="claim1",pod="pod1",uid="uid1",volume="myvol"} 0
				kube_pod_spec_volumes_persistentvolumeclaims_readonly{ephemeral="false",namespace="ns1",persistentvolumeclaim="claim2",pod="pod1",uid="uid1",volume="my-readonly-vol"} 1
				kube_pod_spec_volumes_persistentvolumeclaims_readonly{ephemeral="true",namespace="ns1",persistentvolumeclaim="pod1-my-ephemeral-vol",pod="pod1",uid="uid1",volume="my-ephemeral-vol"} 0
			`,
		},
		{
			name: "overhead",
			pod: testPod("ns1", "pod1", "uid1", func(p *v1.Pod) {
				p.Spec.Overhead = v1.ResourceList{
					v1.ResourceCPU:    resource.MustParse("250m"),
					v1.ResourceMemory: resource.MustParse("120M"),
				}
			}),
			families: []string{"kube_pod_overhead_cpu_cores", "kube_pod_overhead_memory_bytes"},
			want: `
				kube_pod_overhead_cpu_cores{namespace="ns1",pod="pod1",uid="uid1"} 0.25
				kube_pod_overhead_memory_bytes{namespace="ns1",pod="pod1",uid="uid1"} 1.2e+08
			`,
		},
		{
			name: "fractional memory overhead rounds up to whole bytes",
			pod: testPod("ns1", "pod1", "uid1", func(p *v1.Pod) {
				p.Spec.Overhead = v1.ResourceList{v1.ResourceMemory: resource.MustParse("1500m")}
			}),
			families: []string{"kube_pod_overhead_cpu_cores", "kube_pod_overhead_memory_bytes"},
			want:     `kube_pod_overhead_memory_bytes{namespace="ns1",pod="pod1",uid="uid1"} 2`,
		},
		{
			name: "tolerations, duplicates rendered once",
			pod: testPod("ns1", "pod1", "uid1", func(p *v1.Pod) {
				p.Spec.Tolerations = []v1.Toleration{
					{Key: "key1", Operator: v1.TolerationOpEqual, Value: "value1", Effect: v1.TaintEffectNoSchedule},
					{Key: "key2", Operator: v1.TolerationOpExists},
					{Key: "key3", Operator: v1.TolerationOpEqual, Value: "value3"},
					{Key: "key3", Operator: v1.TolerationOpEqual, Value: "value3"},
					{},
				}
			}),
			families: []string{"kube_pod_tolerations"},
			want: `
				kube_pod_tolerations{namespace="ns1",pod="pod1",uid="uid1"} 1
				kube_pod_tolerations{key="key2",namespace="ns1",operator="Exists",pod="pod1",uid="uid1"} 1
				kube_pod_tolerations{key="key3",namespace="ns1",operator="Equal",pod="pod1",uid="uid1",value="value3"} 1
				kube_pod_tolerations{effect="NoSchedule",key="key1",namespace="ns1",operator="Equal",pod="pod1",uid="uid1",value="value1"} 1
			`,
		},
		{
			name: "tolerations deduplicated by toleration seconds value",
			pod: testPod("default", "dup", "testuid-ts", func(p *v1.Pod) {
				p.Spec.Tolerations = []v1.Toleration{
					{Key: "key1", Operator: v1.TolerationOpEqual, Value: "value1", Effect: v1.TaintEffectNoSchedule, TolerationSeconds: &seconds3600},
					{Key: "key1", Operator: v1.TolerationOpEqual, Value: "value1", Effect: v1.TaintEffectNoSchedule, TolerationSeconds: &seconds3600b},
					{Key: "key1", Operator: v1.TolerationOpEqual, Value: "value1", Effect: v1.TaintEffectNoSchedule, TolerationSeconds: &seconds1800},
					{Key: "key2", Operator: v1.TolerationOpExists, TolerationSeconds: &seconds0},
					{Key: "key2", Operator: v1.TolerationOpExists, TolerationSeconds: &seconds0},
					{Key: "key2", Operator: v1.TolerationOpExists},
				}
			}),
			families: []string{"kube_pod_tolerations"},
			want: `
				kube_pod_tolerations{effect="NoSchedule",key="key1",namespace="default",operator="Equal",pod="dup",toleration_seconds="3600",uid="testuid-ts",value="value1"} 1
				kube_pod_tolerations{effect="NoSchedule",key="key1",namespace="default",operator="Equal",pod="dup",toleration_seconds="1800",uid="testuid-ts",value="value1"} 1
				kube_pod_tolerations{key="key2",namespace="default",operator="Exists",pod="dup",toleration_seconds="0",uid="testuid-ts"} 1
				kube_pod_tolerations{key="key2",namespace="default",operator="Exists",pod="dup",uid="testuid-ts"} 1
			`,
		},
		{
			name:     "node selectors",
			pod:      testPod("ns1", "pod1", "uid1", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"a": "b"} }),
			families: []string{"kube_pod_nodeselectors"},
			want:     `kube_pod_nodeselectors{namespace="ns1",nodeselector_a="b",pod="pod1",uid="uid1"} 1`,
		},
		{
			name: "node selectors sanitised",
			pod: testPod("ns1", "pod2", "uid6", func(p *v1.Pod) {
				p.Spec.NodeSelector = map[string]string{
					"kubernetes.io/os":                 "linux",
					"cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
				}
			}),
			families: []string{"kube_pod_nodeselectors"},
			want:     `kube_pod_nodeselectors{namespace="ns1",nodeselector_cloud_google_com_gke_accelerator="nvidia-tesla-t4",nodeselector_kubernetes_io_os="linux",pod="pod2",uid="uid6"} 1`,
		},
		{
			name:     "no node selectors still renders",
			pod:      testPod("ns1", "pod1", "uid1", nil),
			families: []string{"kube_pod_nodeselectors"},
			want:     `kube_pod_nodeselectors{namespace="ns1",pod="pod1",uid="uid1"} 1`,
		},
	})
}

func TestPodNodeSelectorsOptIn(t *testing.T) {
	pod := testPod("ns1", "pod1", "uid1", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"a": "b"} })
	got := renderText(t, podResource(), FamilyOptions{}, pod)
	require.NotEmpty(t, got)
	require.NotContains(t, got, "kube_pod_nodeselectors")
}

func TestPodStatusPhaseAndQOS(t *testing.T) {
	phase := func(p v1.PodPhase) func(*v1.Pod) { return func(pod *v1.Pod) { pod.Status.Phase = p } }
	runPodCases(t, []podCase{
		{
			name:     "running",
			pod:      testPod("ns1", "pod1", "uid1", phase(v1.PodRunning)),
			families: []string{"kube_pod_status_phase"},
			want: `
				kube_pod_status_phase{namespace="ns1",phase="Failed",pod="pod1",uid="uid1"} 0
				kube_pod_status_phase{namespace="ns1",phase="Pending",pod="pod1",uid="uid1"} 0
				kube_pod_status_phase{namespace="ns1",phase="Running",pod="pod1",uid="uid1"} 1
				kube_pod_status_phase{namespace="ns1",phase="Succeeded",pod="pod1",uid="uid1"} 0
				kube_pod_status_phase{namespace="ns1",phase="Unknown",pod="pod1",uid="uid1"} 0
			`,
		},
		{
			name:     "pending",
			pod:      testPod("ns2", "pod2", "uid2", phase(v1.PodPending)),
			families: []string{"kube_pod_status_phase"},
			want: `
				kube_pod_status_phase{namespace="ns2",phase="Failed",pod="pod2",uid="uid2"} 0
				kube_pod_status_phase{namespace="ns2",phase="Pending",pod="pod2",uid="uid2"} 1
				kube_pod_status_phase{namespace="ns2",phase="Running",pod="pod2",uid="uid2"} 0
				kube_pod_status_phase{namespace="ns2",phase="Succeeded",pod="pod2",uid="uid2"} 0
				kube_pod_status_phase{namespace="ns2",phase="Unknown",pod="pod2",uid="uid2"} 0
			`,
		},
		{
			name:     "unknown",
			pod:      testPod("ns3", "pod3", "uid3", phase(v1.PodUnknown)),
			families: []string{"kube_pod_status_phase"},
			want: `
				kube_pod_status_phase{namespace="ns3",phase="Failed",pod="pod3",uid="uid3"} 0
				kube_pod_status_phase{namespace="ns3",phase="Pending",pod="pod3",uid="uid3"} 0
				kube_pod_status_phase{namespace="ns3",phase="Running",pod="pod3",uid="uid3"} 0
				kube_pod_status_phase{namespace="ns3",phase="Succeeded",pod="pod3",uid="uid3"} 0
				kube_pod_status_phase{namespace="ns3",phase="Unknown",pod="pod3",uid="uid3"} 1
			`,
		},
		{
			name:     "no phase",
			pod:      testPod("ns1", "pod1", "uid1", nil),
			families: []string{"kube_pod_status_phase", "kube_pod_status_qos_class"},
		},
		{
			name:     "running with reason",
			pod:      testPod("ns4", "pod4", "uid4", withStatusReason("NodeLost")),
			families: []string{"kube_pod_status_phase", "kube_pod_status_reason"},
			want: `
				kube_pod_status_phase{namespace="ns4",phase="Failed",pod="pod4",uid="uid4"} 0
				kube_pod_status_phase{namespace="ns4",phase="Pending",pod="pod4",uid="uid4"} 0
				kube_pod_status_phase{namespace="ns4",phase="Running",pod="pod4",uid="uid4"} 1
				kube_pod_status_phase{namespace="ns4",phase="Succeeded",pod="pod4",uid="uid4"} 0
				kube_pod_status_phase{namespace="ns4",phase="Unknown",pod="pod4",uid="uid4"} 0
				kube_pod_status_reason{namespace="ns4",pod="pod4",reason="NodeLost",uid="uid4"} 1
			`,
		},
		{
			name:     "qos class",
			pod:      testPod("ns1", "pod1", "uid1", func(p *v1.Pod) { p.Status.QOSClass = v1.PodQOSBestEffort }),
			families: []string{"kube_pod_status_qos_class"},
			want: `
				kube_pod_status_qos_class{namespace="ns1",pod="pod1",qos_class="BestEffort",uid="uid1"} 1
				kube_pod_status_qos_class{namespace="ns1",pod="pod1",qos_class="Burstable",uid="uid1"} 0
				kube_pod_status_qos_class{namespace="ns1",pod="pod1",qos_class="Guaranteed",uid="uid1"} 0
			`,
		},
	})
}

func TestPodStatusReason(t *testing.T) {
	reason := []string{"kube_pod_status_reason"}
	var cases []podCase
	for _, r := range []string{"Evicted", "UnexpectedAdmissionError", "NodeAffinity", "Shutdown", "PreemptionByScheduler", "TerminationByKubelet"} {
		cases = append(cases, podCase{
			name:     "status reason " + r,
			pod:      testPod("ns4", "pod4", "uid4", withStatusReason(r)),
			families: reason,
			want:     `kube_pod_status_reason{namespace="ns4",pod="pod4",reason="` + r + `",uid="uid4"} 1`,
		})
	}
	terminated := func(r string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Status.ContainerStatuses = []v1.ContainerStatus{
				{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
				{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: r}}},
			}
		}
	}
	cases = append(cases,
		podCase{
			name:     "unknown status reason is Other",
			pod:      testPod("ns4", "pod4", "uid4", withStatusReason("other reason")),
			families: reason,
			want:     `kube_pod_status_reason{namespace="ns4",pod="pod4",reason="Other",uid="uid4"} 1`,
		},
		podCase{
			name: "reason from a condition",
			pod: testPod("ns4", "pod4", "uid4", func(p *v1.Pod) {
				p.Status.Phase = v1.PodPending
				withConditions(v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "SchedulingGated"})(p)
			}),
			families: reason,
			want:     `kube_pod_status_reason{namespace="ns4",pod="pod4",reason="SchedulingGated",uid="uid4"} 1`,
		},
		podCase{
			name:     "reason from a terminated container",
			pod:      testPod("ns4", "pod4", "uid4", terminated("Evicted")),
			families: reason,
			want:     `kube_pod_status_reason{namespace="ns4",pod="pod4",reason="Evicted",uid="uid4"} 1`,
		},
		podCase{
			name: "several reasons, each once",
			pod: testPod("ns4", "pod4", "uid4", func(p *v1.Pod) {
				p.Status.Reason = "Evicted"
				withConditions(
					v1.PodCondition{Type: v1.PodScheduled, Reason: "SchedulingGated"},
					v1.PodCondition{Type: v1.PodReady, Reason: "Evicted"},
				)(p)
			}),
			families: reason,
			want: `
				kube_pod_status_reason{namespace="ns4",pod="pod4",reason="Evicted",uid="uid4"} 1
				kube_pod_status_reason{namespace="ns4",pod="pod4",reason="SchedulingGated",uid="uid4"} 1
			`,
		},
		podCase{
			name:     "unknown condition reason is not Other",
			pod:      testPod("ns4", "pod4", "uid4", withConditions(v1.PodCondition{Reason: "SomeFutureConditionReason"})),
			families: reason,
		},
		podCase{
			name:     "unknown container reason is not Other",
			pod:      testPod("ns4", "pod4", "uid4", terminated("OOMKilled")),
			families: reason,
		},
		podCase{
			name:     "no reason",
			pod:      testPod("ns4", "pod4", "uid4", nil),
			families: reason,
		},
	)
	runPodCases(t, cases)
}

func TestPodStatusDisruptionReason(t *testing.T) {
	disruption := []string{"kube_pod_status_disruption_reason"}
	var cases []podCase
	for _, r := range []string{"PreemptionByScheduler", "DeletionByTaintManager", "EvictionByEvictionAPI", "DeletionByPodGC", "TerminationByKubelet"} {
		cases = append(cases, podCase{
			name:     r,
			pod:      testPod("ns5", "pod5", "uid5", withConditions(v1.PodCondition{Type: v1.DisruptionTarget, Reason: r})),
			families: disruption,
			want:     `kube_pod_status_disruption_reason{namespace="ns5",pod="pod5",reason="` + r + `",uid="uid5"} 1`,
		})
	}
	cases = append(cases,
		podCase{
			name:     "unknown reason is Other",
			pod:      testPod("ns7", "pod7disruption", "uid7", withConditions(v1.PodCondition{Type: v1.DisruptionTarget, Reason: "SomeFutureReason"})),
			families: disruption,
			want:     `kube_pod_status_disruption_reason{namespace="ns7",pod="pod7disruption",reason="Other",uid="uid7"} 1`,
		},
		podCase{
			name:     "reason on another condition type",
			pod:      testPod("ns6", "pod6", "uid6", withConditions(v1.PodCondition{Type: v1.PodReady, Reason: "EvictionByEvictionAPI"})),
			families: disruption,
		},
		podCase{
			name:     "no conditions",
			pod:      testPod("ns6", "pod6", "uid6", nil),
			families: disruption,
		},
	)
	runPodCases(t, cases)
}

func TestPodStatusConditions(t *testing.T) {
	at := unixTime(1501666018)
	cond := func(ct v1.PodConditionType, s v1.ConditionStatus) func(*v1.Pod) {
		return withConditions(v1.PodCondition{Type: ct, Status: s, LastTransitionTime: at})
	}
	runPodCases(t, []podCase{
		{
			name:     "initialized",
			pod:      testPod("ns1", "pod1", "uid1", cond(v1.PodInitialized, v1.ConditionTrue)),
			families: []string{"kube_pod_status_initialized_time"},
			want:     `kube_pod_status_initialized_time{namespace="ns1",pod="pod1",uid="uid1"} 1.501666018e+09`,
		},
		{
			name:     "not initialized",
			pod:      testPod("ns1", "pod1", "uid1", cond(v1.PodInitialized, v1.ConditionFalse)),
			families: []string{"kube_pod_status_initialized_time"},
		},
		{
			name:     "containers ready",
			pod:      testPod("ns1", "pod1", "uid1", cond(v1.ContainersReady, v1.ConditionTrue)),
			families: []string{"kube_pod_status_container_ready_time"},
			want:     `kube_pod_status_container_ready_time{namespace="ns1",pod="pod1",uid="uid1"} 1.501666018e+09`,
		},
		{
			name:     "containers not ready",
			pod:      testPod("ns1", "pod1", "uid1", cond(v1.ContainersReady, v1.ConditionFalse)),
			families: []string{"kube_pod_status_container_ready_time"},
		},
		{
			name:     "ready",
			pod:      testPod("ns1", "pod1", "uid1", cond(v1.PodReady, v1.ConditionTrue)),
			families: []string{"kube_pod_status_ready_time", "kube_pod_status_ready"},
			want: `
				kube_pod_status_ready_time{namespace="ns1",pod="pod1",uid="uid1"} 1.501666018e+09
				kube_pod_status_ready{condition="false",namespace="ns1",pod="pod1",uid="uid1"} 0
				kube_pod_status_ready{condition="true",namespace="ns1",pod="pod1",uid="uid1"} 1
				kube_pod_status_ready{condition="unknown",namespace="ns1",pod="pod1",uid="uid1"} 0
			`,
		},
		{
			name:     "not ready",
			pod:      testPod("ns2", "pod2", "uid2", cond(v1.PodReady, v1.ConditionFalse)),
			families: []string{"kube_pod_status_ready_time", "kube_pod_status_ready"},
			want: `
				kube_pod_status_ready{condition="false",namespace="ns2",pod="pod2",uid="uid2"} 1
				kube_pod_status_ready{condition="true",namespace="ns2",pod="pod2",uid="uid2"} 0
				kube_pod_status_ready{condition="unknown",namespace="ns2",pod="pod2",uid="uid2"} 0
			`,
		},
		{
			name:     "no ready condition",
			pod:      testPod("ns2", "pod2", "uid2", cond(v1.PodScheduled, v1.ConditionTrue)),
			families: []string{"kube_pod_status_ready_time", "kube_pod_status_ready"},
		},
		{
			name:     "scheduled",
			pod:      testPod("ns1", "pod1", "uid1", cond(v1.PodScheduled, v1.ConditionTrue)),
			families: []string{"kube_pod_status_scheduled", "kube_pod_status_scheduled_time", "kube_pod_status_unschedulable", "kube_pod_status_unscheduled_time"},
			want: `
				kube_pod_status_scheduled_time{namespace="ns1",pod="pod1",uid="uid1"} 1.501666018e+09
				kube_pod_status_scheduled{condition="false",namespace="ns1",pod="pod1",uid="uid1"} 0
				kube_pod_status_scheduled{condition="true",namespace="ns1",pod="pod1",uid="uid1"} 1
				kube_pod_status_scheduled{condition="unknown",namespace="ns1",pod="pod1",uid="uid1"} 0
			`,
		},
		{
			name:     "not scheduled",
			pod:      testPod("ns2", "pod2", "uid2", withConditions(v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse})),
			families: []string{"kube_pod_status_scheduled", "kube_pod_status_scheduled_time"},
			want: `
				kube_pod_status_scheduled{condition="false",namespace="ns2",pod="pod2",uid="uid2"} 1
				kube_pod_status_scheduled{condition="true",namespace="ns2",pod="pod2",uid="uid2"} 0
				kube_pod_status_scheduled{condition="unknown",namespace="ns2",pod="pod2",uid="uid2"} 0
			`,
		},
		{
			name: "unschedulable",
			pod: testPod("ns2", "pod2", "uid2", withConditions(v1.PodCondition{
				Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable",
				Message: "0/3 nodes are available: 3 Insufficient cpu.", LastTransitionTime: at,
			})),
			families: []string{"kube_pod_status_unschedulable", "kube_pod_status_unscheduled_time"},
			want: `
				kube_pod_status_unschedulable{namespace="ns2",pod="pod2",uid="uid2"} 1
				kube_pod_status_unscheduled_time{namespace="ns2",pod="pod2",uid="uid2"} 1.501666018e+09
			`,
		},
		{
			name:     "scheduling unknown",
			pod:      testPod("ns2", "pod2", "uid2", cond(v1.PodScheduled, v1.ConditionUnknown)),
			families: []string{"kube_pod_status_scheduled", "kube_pod_status_scheduled_time", "kube_pod_status_unschedulable", "kube_pod_status_unscheduled_time"},
			want: `
				kube_pod_status_scheduled{condition="false",namespace="ns2",pod="pod2",uid="uid2"} 0
				kube_pod_status_scheduled{condition="true",namespace="ns2",pod="pod2",uid="uid2"} 0
				kube_pod_status_scheduled{condition="unknown",namespace="ns2",pod="pod2",uid="uid2"} 1
			`,
		},
	})
}

// TestPodMalformed renders every family of pods with empty or half-filled
// fields: nothing may panic, and only the families that kube-state-metrics
// renders unconditionally produce series.
func TestPodMalformed(t *testing.T) {
	var all []string
	for _, f := range podStatusFamilies(FamilyOptions{}) {
		all = append(all, f.Name)
	}
	allow := FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}}
	always := `
		kube_pod_info{host_network="false",uid="u"} 1
		kube_pod_owner{uid="u"} 1
		kube_pod_restart_policy{uid="u"} 1
		kube_pod_nodeselectors{uid="u"} 1
		kube_pod_service_account{uid="u"} 1
		kube_pod_scheduler{uid="u"} 1
	`
	runPodCases(t, []podCase{
		{
			name:     "empty pod",
			pod:      &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			families: all,
			want:     always,
		},
		{
			name:     "empty pod with allowlists",
			opts:     allow,
			pod:      &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			families: all,
			want:     always + `kube_pod_labels{uid="u"} 1` + "\n" + `kube_pod_annotations{uid="u"} 1`,
		},
		{
			name: "nil pointers and empty entries",
			opts: allow,
			pod: &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					UID:             "u",
					OwnerReferences: []metav1.OwnerReference{{}, {Kind: "Job", Name: "j"}},
				},
				Spec: v1.PodSpec{
					Volumes:        []v1.Volume{{}, {Name: "v"}},
					ResourceClaims: []v1.PodResourceClaim{{}},
					Tolerations:    []v1.Toleration{{}, {}},
					Overhead:       v1.ResourceList{},
				},
				Status: v1.PodStatus{
					Conditions:            []v1.PodCondition{{}, {Type: v1.PodReady}},
					ContainerStatuses:     []v1.ContainerStatus{{}},
					PodIPs:                []v1.PodIP{{}},
					ResourceClaimStatuses: []v1.PodResourceClaimStatus{{}},
				},
			},
			families: all,
			want: `
				kube_pod_info{host_network="false",uid="u"} 1
				kube_pod_owner{owner_is_controller="false",uid="u"} 1
				kube_pod_owner{owner_is_controller="false",owner_kind="Job",owner_name="j",uid="u"} 1
				kube_pod_restart_policy{uid="u"} 1
				kube_pod_nodeselectors{uid="u"} 1
				kube_pod_service_account{uid="u"} 1
				kube_pod_scheduler{uid="u"} 1
				kube_pod_labels{uid="u"} 1
				kube_pod_annotations{uid="u"} 1
				kube_pod_tolerations{uid="u"} 1
				kube_pod_status_ready{condition="false",uid="u"} 0
				kube_pod_status_ready{condition="true",uid="u"} 0
				kube_pod_status_ready{condition="unknown",uid="u"} 0
			`,
		},
	})
}

// TestPodFamilyNamesUnique guards against a family being listed twice.
func TestPodFamilyNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range podFamilies(FamilyOptions{}) {
		require.False(t, seen[f.Name], "duplicate family %s", f.Name)
		require.True(t, strings.HasPrefix(f.Name, "kube_pod_"), f.Name)
		seen[f.Name] = true
	}
}
