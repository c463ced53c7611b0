package watch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nodeCase is one golden case: a node rendered with the named families.
type nodeCase struct {
	name     string
	opts     FamilyOptions
	node     *v1.Node
	families []string
	want     string
}

func runNodeCases(t *testing.T, cases []nodeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := renderText(t, nodeResource(), c.opts, c.node, c.families...)
			requireGolden(t, c.want, got)
		})
	}
}

// testNode returns a node with a name and UID (the renderer requires one).
func testNode(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
}

// ksmResourceNode is the node of kube-state-metrics' "resource metric" case,
// with the given memory capacity.
func ksmResourceNode(memCapacity string) *v1.Node {
	n := testNode("127.0.0.1")
	n.CreationTimestamp = metav1.Time{Time: time.Unix(1500000000, 0)}
	n.Labels = map[string]string{"node-role.kubernetes.io/master": ""}
	n.Spec = v1.NodeSpec{Unschedulable: true, ProviderID: "provider://i-randomidentifier", PodCIDR: "172.24.10.0/24"}
	n.Status = v1.NodeStatus{
		NodeInfo: v1.NodeSystemInfo{
			KernelVersion: "kernel", KubeletVersion: "kubelet", KubeProxyVersion: "kubeproxy", //nolint:staticcheck // set, to show kube_node_info says "deprecated" whatever the node reports
			OSImage: "osimage", ContainerRuntimeVersion: "rkt", SystemUUID: "6a934e21-5207-4a84-baea-3a952d926c80",
		},
		Addresses: []v1.NodeAddress{{Type: "InternalIP", Address: "1.2.3.4"}},
		Capacity: v1.ResourceList{
			v1.ResourceCPU:              resource.MustParse("4.3"),
			v1.ResourceMemory:           resource.MustParse(memCapacity),
			v1.ResourcePods:             resource.MustParse("1000"),
			v1.ResourceStorage:          resource.MustParse("3G"),
			v1.ResourceEphemeralStorage: resource.MustParse("4G"),
			"nvidia.com/gpu":            resource.MustParse("4"),
		},
		Allocatable: v1.ResourceList{
			v1.ResourceCPU:              resource.MustParse("3"),
			v1.ResourceMemory:           resource.MustParse("1G"),
			v1.ResourcePods:             resource.MustParse("555"),
			v1.ResourceStorage:          resource.MustParse("2G"),
			v1.ResourceEphemeralStorage: resource.MustParse("3G"),
			"nvidia.com/gpu":            resource.MustParse("1"),
		},
	}
	return n
}

var ksmResourceFamilies = []string{
	"kube_node_status_capacity", "kube_node_status_allocatable", "kube_node_spec_unschedulable",
	"kube_node_labels", "kube_node_role", "kube_node_info", "kube_node_created",
}

const ksmResourceCommon = `
kube_node_created{node="127.0.0.1"} 1.5e+09
kube_node_info{container_runtime_version="rkt",internal_ip="1.2.3.4",kernel_version="kernel",kubelet_version="kubelet",kubeproxy_version="deprecated",node="127.0.0.1",os_image="osimage",pod_cidr="172.24.10.0/24",provider_id="provider://i-randomidentifier",system_uuid="6a934e21-5207-4a84-baea-3a952d926c80"} 1
kube_node_role{node="127.0.0.1",role="master"} 1
kube_node_spec_unschedulable{node="127.0.0.1"} 1
kube_node_status_allocatable{node="127.0.0.1",resource="cpu",unit="core"} 3
kube_node_status_allocatable{node="127.0.0.1",resource="ephemeral_storage",unit="byte"} 3e+09
kube_node_status_allocatable{node="127.0.0.1",resource="memory",unit="byte"} 1e+09
kube_node_status_allocatable{node="127.0.0.1",resource="nvidia_com_gpu",unit="integer"} 1
kube_node_status_allocatable{node="127.0.0.1",resource="pods",unit="integer"} 555
kube_node_status_allocatable{node="127.0.0.1",resource="storage",unit="byte"} 2e+09
kube_node_status_capacity{node="127.0.0.1",resource="cpu",unit="core"} 4.3
kube_node_status_capacity{node="127.0.0.1",resource="ephemeral_storage",unit="byte"} 4e+09
kube_node_status_capacity{node="127.0.0.1",resource="nvidia_com_gpu",unit="integer"} 4
kube_node_status_capacity{node="127.0.0.1",resource="pods",unit="integer"} 1000
kube_node_status_capacity{node="127.0.0.1",resource="storage",unit="byte"} 3e+09
`

// TestNodeKSMCases ports the cases of kube-state-metrics' TestNodeStore.
func TestNodeKSMCases(t *testing.T) {
	base := testNode("127.0.0.1")
	base.Status = v1.NodeStatus{
		NodeInfo: v1.NodeSystemInfo{
			KernelVersion: "kernel", KubeletVersion: "kubelet", KubeProxyVersion: "kubeproxy", //nolint:staticcheck // set, to show kube_node_info says "deprecated" whatever the node reports
			OSImage: "osimage", ContainerRuntimeVersion: "rkt", SystemUUID: "6a934e21-5207-4a84-baea-3a952d926c80",
		},
		Addresses: []v1.NodeAddress{{Type: "InternalIP", Address: "1.2.3.4"}},
	}
	base.Spec = v1.NodeSpec{ProviderID: "provider://i-uniqueid", PodCIDR: "172.24.10.0/24"}

	conditions := func(name string, s v1.ConditionStatus) *v1.Node {
		n := testNode(name)
		n.Status.Conditions = []v1.NodeCondition{
			{Type: v1.NodeNetworkUnavailable, Status: s},
			{Type: v1.NodeReady, Status: s},
			{Type: "CustomizedType", Status: s},
		}
		return n
	}
	taints := testNode("127.0.0.1")
	taints.Spec.Taints = []v1.Taint{
		{Key: "node.kubernetes.io/memory-pressure", Value: "true", Effect: v1.TaintEffectPreferNoSchedule},
		{Key: "Accelerated", Value: "gpu", Effect: v1.TaintEffectPreferNoSchedule},
		{Key: "Dedicated", Effect: v1.TaintEffectPreferNoSchedule},
	}
	cidrs := testNode("127.0.0.1")
	cidrs.Spec.PodCIDRs = []string{"10.244.0.0/24", "2001:db8::/64"}
	addrs := testNode("127.0.0.1")
	addrs.Status.Addresses = []v1.NodeAddress{
		{Type: "InternalIP", Address: "1.2.3.4"},
		{Type: "InternalIP", Address: "fc00::"},
		{Type: "ExternalIP", Address: "5.6.7.8"},
		{Type: "ExternalIP", Address: "2001:db8::"},
	}

	runNodeCases(t, []nodeCase{
		{
			name: "base", node: base,
			families: []string{"kube_node_spec_unschedulable", "kube_node_labels", "kube_node_info"},
			want: `
kube_node_info{container_runtime_version="rkt",internal_ip="1.2.3.4",kernel_version="kernel",kubelet_version="kubelet",kubeproxy_version="deprecated",node="127.0.0.1",os_image="osimage",pod_cidr="172.24.10.0/24",provider_id="provider://i-uniqueid",system_uuid="6a934e21-5207-4a84-baea-3a952d926c80"} 1
kube_node_spec_unschedulable{node="127.0.0.1"} 0
`,
		},
		{
			// KSM prints every label with "" values; Prometheus drops them.
			name: "unset fields", node: &v1.Node{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			families: []string{"kube_node_info"},
			want:     `kube_node_info{kubeproxy_version="deprecated"} 1`,
		},
		{
			name: "resources", node: ksmResourceNode("2G"), families: ksmResourceFamilies,
			want: ksmResourceCommon + `kube_node_status_capacity{node="127.0.0.1",resource="memory",unit="byte"} 2e+09`,
		},
		{
			name: "memory overflow", node: ksmResourceNode("10000T"), families: ksmResourceFamilies,
			want: ksmResourceCommon + `kube_node_status_capacity{node="127.0.0.1",resource="memory",unit="byte"} 1e+16`,
		},
		{
			name: "conditions true", node: conditions("127.0.0.1", v1.ConditionTrue),
			families: []string{"kube_node_status_condition"},
			want: `
kube_node_status_condition{condition="CustomizedType",node="127.0.0.1",status="false"} 0
kube_node_status_condition{condition="CustomizedType",node="127.0.0.1",status="true"} 1
kube_node_status_condition{condition="CustomizedType",node="127.0.0.1",status="unknown"} 0
kube_node_status_condition{condition="NetworkUnavailable",node="127.0.0.1",status="false"} 0
kube_node_status_condition{condition="NetworkUnavailable",node="127.0.0.1",status="true"} 1
kube_node_status_condition{condition="NetworkUnavailable",node="127.0.0.1",status="unknown"} 0
kube_node_status_condition{condition="Ready",node="127.0.0.1",status="false"} 0
kube_node_status_condition{condition="Ready",node="127.0.0.1",status="true"} 1
kube_node_status_condition{condition="Ready",node="127.0.0.1",status="unknown"} 0
`,
		},
		{
			name: "conditions unknown", node: conditions("127.0.0.2", v1.ConditionUnknown),
			families: []string{"kube_node_status_condition"},
			want: `
kube_node_status_condition{condition="CustomizedType",node="127.0.0.2",status="false"} 0
kube_node_status_condition{condition="CustomizedType",node="127.0.0.2",status="true"} 0
kube_node_status_condition{condition="CustomizedType",node="127.0.0.2",status="unknown"} 1
kube_node_status_condition{condition="NetworkUnavailable",node="127.0.0.2",status="false"} 0
kube_node_status_condition{condition="NetworkUnavailable",node="127.0.0.2",status="true"} 0
kube_node_status_condition{condition="NetworkUnavailable",node="127.0.0.2",status="unknown"} 1
kube_node_status_condition{condition="Ready",node="127.0.0.2",status="false"} 0
kube_node_status_condition{condition="Ready",node="127.0.0.2",status="true"} 0
kube_node_status_condition{condition="Ready",node="127.0.0.2",status="unknown"} 1
`,
		},
		{
			name: "conditions false", node: conditions("127.0.0.3", v1.ConditionFalse),
			families: []string{"kube_node_status_condition"},
			want: `
kube_node_status_condition{condition="CustomizedType",node="127.0.0.3",status="false"} 1
kube_node_status_condition{condition="CustomizedType",node="127.0.0.3",status="true"} 0
kube_node_status_condition{condition="CustomizedType",node="127.0.0.3",status="unknown"} 0
kube_node_status_condition{condition="NetworkUnavailable",node="127.0.0.3",status="false"} 1
kube_node_status_condition{condition="NetworkUnavailable",node="127.0.0.3",status="true"} 0
kube_node_status_condition{condition="NetworkUnavailable",node="127.0.0.3",status="unknown"} 0
kube_node_status_condition{condition="Ready",node="127.0.0.3",status="false"} 1
kube_node_status_condition{condition="Ready",node="127.0.0.3",status="true"} 0
kube_node_status_condition{condition="Ready",node="127.0.0.3",status="unknown"} 0
`,
		},
		{
			name: "taints", node: taints, families: []string{"kube_node_spec_taint"},
			want: `
kube_node_spec_taint{effect="PreferNoSchedule",key="Dedicated",node="127.0.0.1"} 1
kube_node_spec_taint{effect="PreferNoSchedule",key="Accelerated",node="127.0.0.1",value="gpu"} 1
kube_node_spec_taint{effect="PreferNoSchedule",key="node.kubernetes.io/memory-pressure",node="127.0.0.1",value="true"} 1
`,
		},
		{
			name: "pod cidrs", node: cidrs, families: []string{"kube_node_spec_pod_cidrs"},
			want: `
kube_node_spec_pod_cidrs{node="127.0.0.1",pod_cidr="10.244.0.0/24"} 1
kube_node_spec_pod_cidrs{node="127.0.0.1",pod_cidr="2001:db8::/64"} 1
`,
		},
		{
			name: "addresses", node: addrs, families: []string{"kube_node_status_addresses"},
			want: `
kube_node_status_addresses{address="1.2.3.4",node="127.0.0.1",type="InternalIP"} 1
kube_node_status_addresses{address="fc00::",node="127.0.0.1",type="InternalIP"} 1
kube_node_status_addresses{address="5.6.7.8",node="127.0.0.1",type="ExternalIP"} 1
kube_node_status_addresses{address="2001:db8::",node="127.0.0.1",type="ExternalIP"} 1
`,
		},
	})
}

func TestNodeLabelsAndAnnotations(t *testing.T) {
	n := testNode("n1")
	n.Labels = map[string]string{"app.kubernetes.io/name": "web", "zone": "a", "fooBar": "x"}
	n.Annotations = map[string]string{"note": "hi", "team-owner": "infra"}
	both := []string{"kube_node_labels", "kube_node_annotations"}

	runNodeCases(t, []nodeCase{
		{name: "no allowlist emits nothing", node: n, families: both, want: ``},
		{
			name: "wildcard", node: n, families: both,
			opts: FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}},
			want: `
kube_node_annotations{annotation_note="hi",annotation_team_owner="infra",node="n1"} 1
kube_node_labels{label_app_kubernetes_io_name="web",label_foo_bar="x",label_zone="a",node="n1"} 1
`,
		},
		{
			name: "named keys", node: n, families: both,
			opts: FamilyOptions{LabelsAllowlist: []string{"zone", "missing"}, AnnotationsAllowlist: []string{"team-*"}},
			want: `
kube_node_annotations{annotation_team_owner="infra",node="n1"} 1
kube_node_labels{label_zone="a",node="n1"} 1
`,
		},
		{
			// A non-empty allowlist that matches nothing still yields one series.
			name: "allowlist matching nothing", node: n, families: both,
			opts: FamilyOptions{LabelsAllowlist: []string{"missing"}, AnnotationsAllowlist: []string{"missing"}},
			want: `
kube_node_annotations{node="n1"} 1
kube_node_labels{node="n1"} 1
`,
		},
		{
			name: "nil maps", node: testNode("n2"), families: both,
			opts: FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}},
			want: `
kube_node_annotations{node="n2"} 1
kube_node_labels{node="n2"} 1
`,
		},
	})
}

func TestNodeFamilies(t *testing.T) {
	created := testNode("n1")
	created.CreationTimestamp = metav1.Time{Time: time.Unix(1700000000, 0)}
	deleted := testNode("n1")
	deleted.DeletionTimestamp = &metav1.Time{Time: time.Unix(1700000123, 0)}
	zeroDeleted := testNode("n1")
	zeroDeleted.DeletionTimestamp = &metav1.Time{}

	roles := testNode("n1")
	roles.Labels = map[string]string{
		"node-role.kubernetes.io/control-plane": "",
		"node-role.kubernetes.io/worker":        "true",
		"node-role.kubernetes.io/":              "",
		"kubernetes.io/role":                    "ignored",
	}

	// The last InternalIP wins in kube_node_info.
	twoIPs := testNode("n1")
	twoIPs.Status.Addresses = []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "10.0.0.1"},
		{Type: v1.NodeExternalIP, Address: "5.6.7.8"},
		{Type: v1.NodeInternalIP, Address: "fd00::1"},
	}

	extra := testNode("n1")
	extra.Status.Capacity = v1.ResourceList{
		"hugepages-2Mi":                 resource.MustParse("4Mi"),
		"attachable-volumes-aws-ebs":    resource.MustParse("39"),
		"example.com/dongle":            resource.MustParse("2"),
		"hugepages-x/y":                 resource.MustParse("5"), // hugepage and extended: two series
		"kubernetes.io/batch-cpu":       resource.MustParse("1"), // prefixed native: ignored
		"requests.example.com/foo":      resource.MustParse("1"), // quota form: ignored
		"example.com/Not Valid":         resource.MustParse("1"), // not a qualified name: ignored
		"something":                     resource.MustParse("1"), // unknown native: ignored
		v1.ResourceCPU:                  resource.MustParse("250m"),
		v1.ResourceName("nvidia.com/x"): resource.MustParse("1n"),
	}
	extra.Status.Allocatable = extra.Status.Capacity

	runNodeCases(t, []nodeCase{
		{name: "created", node: created, families: []string{"kube_node_created"}, want: `kube_node_created{node="n1"} 1.7e+09`},
		{name: "created unset", node: testNode("n1"), families: []string{"kube_node_created"}, want: ``},
		{name: "deletion", node: deleted, families: []string{"kube_node_deletion_timestamp"}, want: `kube_node_deletion_timestamp{node="n1"} 1.700000123e+09`},
		{name: "deletion unset", node: testNode("n1"), families: []string{"kube_node_deletion_timestamp"}, want: ``},
		{name: "deletion zero", node: zeroDeleted, families: []string{"kube_node_deletion_timestamp"}, want: ``},
		{
			// KSM emits role="" for the bare prefix; Prometheus drops the label.
			name: "roles", node: roles, families: []string{"kube_node_role"},
			want: `
kube_node_role{node="n1"} 1
kube_node_role{node="n1",role="control-plane"} 1
kube_node_role{node="n1",role="worker"} 1
`,
		},
		{name: "no roles", node: testNode("n1"), families: []string{"kube_node_role"}, want: ``},
		{
			name: "info last internal ip", node: twoIPs, families: []string{"kube_node_info"},
			want: `kube_node_info{internal_ip="fd00::1",kubeproxy_version="deprecated",node="n1"} 1`,
		},
		{
			name: "resource kinds", node: extra,
			families: []string{"kube_node_status_capacity", "kube_node_status_allocatable"},
			want: `
kube_node_status_allocatable{node="n1",resource="attachable_volumes_aws_ebs",unit="byte"} 39
kube_node_status_allocatable{node="n1",resource="cpu",unit="core"} 0.25
kube_node_status_allocatable{node="n1",resource="example_com_dongle",unit="integer"} 2
kube_node_status_allocatable{node="n1",resource="hugepages_2Mi",unit="byte"} 4.194304e+06
kube_node_status_allocatable{node="n1",resource="hugepages_x_y",unit="byte"} 5
kube_node_status_allocatable{node="n1",resource="hugepages_x_y",unit="integer"} 5
kube_node_status_allocatable{node="n1",resource="nvidia_com_x",unit="integer"} 0.001
kube_node_status_capacity{node="n1",resource="attachable_volumes_aws_ebs",unit="byte"} 39
kube_node_status_capacity{node="n1",resource="cpu",unit="core"} 0.25
kube_node_status_capacity{node="n1",resource="example_com_dongle",unit="integer"} 2
kube_node_status_capacity{node="n1",resource="hugepages_2Mi",unit="byte"} 4.194304e+06
kube_node_status_capacity{node="n1",resource="hugepages_x_y",unit="byte"} 5
kube_node_status_capacity{node="n1",resource="hugepages_x_y",unit="integer"} 5
kube_node_status_capacity{node="n1",resource="nvidia_com_x",unit="integer"} 0.001
`,
		},
		{
			// Without names, every non-opt-in family renders; for a bare node
			// that is info, unschedulable and nothing else.
			name: "default families on bare node", node: testNode("n1"),
			want: `
kube_node_info{kubeproxy_version="deprecated",node="n1"} 1
kube_node_spec_unschedulable{node="n1"} 0
`,
		},
	})
}

func TestNodeFamilyMetadata(t *testing.T) {
	type meta struct {
		name      string
		typ       MetricType
		stability Stability
	}
	want := []meta{
		{"kube_node_annotations", Gauge, Alpha},
		{"kube_node_created", Gauge, Stable},
		{"kube_node_deletion_timestamp", Gauge, Alpha},
		{"kube_node_info", Gauge, Stable},
		{"kube_node_labels", Gauge, Stable},
		{"kube_node_role", Gauge, Alpha},
		{"kube_node_spec_pod_cidrs", Gauge, Alpha},
		{"kube_node_spec_taint", Gauge, Stable},
		{"kube_node_spec_unschedulable", Gauge, Stable},
		{"kube_node_status_allocatable", Gauge, Stable},
		{"kube_node_status_capacity", Gauge, Stable},
		{"kube_node_status_condition", Gauge, Stable},
		{"kube_node_status_addresses", Gauge, Alpha},
	}
	fs := nodeResource().Families(FamilyOptions{})
	require.Len(t, fs, len(want))
	for i, f := range fs {
		require.Equal(t, want[i].name, f.Name)
		require.Equal(t, want[i].typ, f.Type, f.Name)
		require.Equal(t, want[i].stability, f.Stability, f.Name)
		require.False(t, f.OptIn, f.Name)
		require.NotEmpty(t, f.Help, f.Name)
	}
	require.Equal(t, "Unix creation timestamp", fs[1].Help)
	require.Equal(t, "The allocatable for different resources of a node that are available for scheduling.", fs[9].Help)
}

// TestNodeMalformed renders every family for nodes with missing or odd
// fields; renderText fails on a panic, which Render turns into an error.
func TestNodeMalformed(t *testing.T) {
	all := make([]string, 0, 13)
	for _, f := range nodeResource().Families(FamilyOptions{}) {
		all = append(all, f.Name)
	}
	opts := FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}}

	empty := &v1.Node{ObjectMeta: metav1.ObjectMeta{UID: "u"}}

	odd := testNode("odd")
	odd.Labels = map[string]string{"": "", "node-role.kubernetes.io/": ""}
	odd.Spec.Taints = []v1.Taint{{}, {Value: "v"}}
	odd.Spec.PodCIDRs = []string{""}
	odd.Status.Conditions = []v1.NodeCondition{{}, {Type: "X", Status: "Weird"}}
	odd.Status.Addresses = []v1.NodeAddress{{}, {Type: v1.NodeInternalIP}}
	odd.Status.Capacity = v1.ResourceList{
		v1.ResourceMemory:           resource.MustParse("999Ei"),
		v1.ResourceEphemeralStorage: resource.MustParse("-1"),
		v1.ResourceCPU:              {},
		"":                          resource.MustParse("1"),
	}

	t.Run("empty", func(t *testing.T) {
		requireGolden(t, `
kube_node_annotations{} 1
kube_node_info{kubeproxy_version="deprecated"} 1
kube_node_labels{} 1
kube_node_spec_unschedulable{} 0
`, renderText(t, nodeResource(), opts, empty, all...))
	})
	t.Run("odd", func(t *testing.T) {
		requireGolden(t, `
kube_node_annotations{node="odd"} 1
kube_node_info{kubeproxy_version="deprecated",node="odd"} 1
kube_node_labels{node="odd"} 1
kube_node_role{node="odd"} 1
kube_node_spec_pod_cidrs{node="odd"} 1
kube_node_spec_taint{node="odd"} 1
kube_node_spec_taint{node="odd",value="v"} 1
kube_node_spec_unschedulable{node="odd"} 0
kube_node_status_addresses{node="odd"} 1
kube_node_status_addresses{node="odd",type="InternalIP"} 1
kube_node_status_capacity{node="odd",resource="cpu",unit="core"} 0
kube_node_status_capacity{node="odd",resource="ephemeral_storage",unit="byte"} -1
kube_node_status_capacity{node="odd",resource="memory",unit="byte"} 9.223372036854776e+18
kube_node_status_condition{node="odd",status="false"} 0
kube_node_status_condition{node="odd",status="true"} 0
kube_node_status_condition{node="odd",status="unknown"} 0
kube_node_status_condition{condition="X",node="odd",status="false"} 0
kube_node_status_condition{condition="X",node="odd",status="true"} 0
kube_node_status_condition{condition="X",node="odd",status="unknown"} 0
`, renderText(t, nodeResource(), opts, odd, all...))
	})
}
