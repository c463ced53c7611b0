package watch

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testNamespace returns a namespace in the given phase, with the kubernetes
// finalizer as in kube-state-metrics' TestNamespaceStore.
func testNamespace(name string, phase v1.NamespacePhase) *v1.Namespace {
	return &v1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid"},
		Spec:       v1.NamespaceSpec{Finalizers: []v1.FinalizerName{v1.FinalizerKubernetes}},
		Status:     v1.NamespaceStatus{Phase: phase},
	}
}

// TestNamespaceKSMCases ports kube-state-metrics' TestNamespaceStore.
func TestNamespaceKSMCases(t *testing.T) {
	withConditions := testNamespace("nsTerminateWithConditionTest", v1.NamespaceTerminating)
	withConditions.Status.Conditions = []v1.NamespaceCondition{
		{Type: v1.NamespaceDeletionDiscoveryFailure, Status: v1.ConditionTrue},
		{Type: v1.NamespaceDeletionContentFailure, Status: v1.ConditionTrue},
		{Type: v1.NamespaceDeletionGVParsingFailure, Status: v1.ConditionTrue},
	}
	created := testNamespace("ns1", v1.NamespaceActive)
	created.CreationTimestamp = metav1.Time{Time: time.Unix(1500000000, 0)}
	created.Labels = map[string]string{"app": "example1"}
	labelled := testNamespace("ns2", v1.NamespaceActive)
	labelled.Labels = map[string]string{"app": "example2", "l2": "label2"}

	runNetworkCases(t, namespaceResource, []networkCase[*v1.Namespace]{
		{
			name: "active", obj: testNamespace("nsActiveTest", v1.NamespaceActive),
			want: `
kube_namespace_status_phase{namespace="nsActiveTest",phase="Active"} 1
kube_namespace_status_phase{namespace="nsActiveTest",phase="Terminating"} 0
`,
		},
		{
			name: "terminating", obj: testNamespace("nsTerminateTest", v1.NamespaceTerminating),
			want: `
kube_namespace_status_phase{namespace="nsTerminateTest",phase="Active"} 0
kube_namespace_status_phase{namespace="nsTerminateTest",phase="Terminating"} 1
`,
		},
		{
			name: "terminating with conditions", obj: withConditions,
			want: `
kube_namespace_status_phase{namespace="nsTerminateWithConditionTest",phase="Active"} 0
kube_namespace_status_phase{namespace="nsTerminateWithConditionTest",phase="Terminating"} 1
kube_namespace_status_condition{condition="NamespaceDeletionContentFailure",namespace="nsTerminateWithConditionTest",status="false"} 0
kube_namespace_status_condition{condition="NamespaceDeletionContentFailure",namespace="nsTerminateWithConditionTest",status="true"} 1
kube_namespace_status_condition{condition="NamespaceDeletionContentFailure",namespace="nsTerminateWithConditionTest",status="unknown"} 0
kube_namespace_status_condition{condition="NamespaceDeletionDiscoveryFailure",namespace="nsTerminateWithConditionTest",status="false"} 0
kube_namespace_status_condition{condition="NamespaceDeletionDiscoveryFailure",namespace="nsTerminateWithConditionTest",status="true"} 1
kube_namespace_status_condition{condition="NamespaceDeletionDiscoveryFailure",namespace="nsTerminateWithConditionTest",status="unknown"} 0
kube_namespace_status_condition{condition="NamespaceDeletionGroupVersionParsingFailure",namespace="nsTerminateWithConditionTest",status="false"} 0
kube_namespace_status_condition{condition="NamespaceDeletionGroupVersionParsingFailure",namespace="nsTerminateWithConditionTest",status="true"} 1
kube_namespace_status_condition{condition="NamespaceDeletionGroupVersionParsingFailure",namespace="nsTerminateWithConditionTest",status="unknown"} 0
`,
		},
		{
			name: "created", obj: created,
			want: `
kube_namespace_created{namespace="ns1"} 1.5e+09
kube_namespace_status_phase{namespace="ns1",phase="Active"} 1
kube_namespace_status_phase{namespace="ns1",phase="Terminating"} 0
`,
		},
		{
			name: "labels without allowlist", obj: labelled,
			want: `
kube_namespace_status_phase{namespace="ns2",phase="Active"} 1
kube_namespace_status_phase{namespace="ns2",phase="Terminating"} 0
`,
		},
		{
			name: "labels with allowlist", obj: labelled, opts: FamilyOptions{LabelsAllowlist: []string{"l2", "missing"}},
			families: []string{"kube_namespace_labels", "kube_namespace_annotations"},
			want:     `kube_namespace_labels{label_l2="label2",namespace="ns2"} 1`,
		},
	})
}

// TestNamespaceMalformed renders every family of namespaces with missing
// fields: without a phase, both phase series are 0.
func TestNamespaceMalformed(t *testing.T) {
	odd := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	odd.Status.Phase = "Weird"
	odd.Status.Conditions = []v1.NamespaceCondition{{}}
	all := networkAllFamilies(namespaceResource())
	runNetworkCases(t, namespaceResource, []networkCase[*v1.Namespace]{
		{
			name: "empty", opts: networkAllowAll, families: all,
			obj: &v1.Namespace{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			want: `
kube_namespace_annotations{} 1
kube_namespace_labels{} 1
kube_namespace_status_phase{phase="Active"} 0
kube_namespace_status_phase{phase="Terminating"} 0
`,
		},
		{
			name: "unknown phase, empty condition", opts: networkAllowAll, families: all, obj: odd,
			want: `
kube_namespace_annotations{} 1
kube_namespace_labels{} 1
kube_namespace_status_condition{status="false"} 0
kube_namespace_status_condition{status="true"} 0
kube_namespace_status_condition{status="unknown"} 0
kube_namespace_status_phase{phase="Active"} 0
kube_namespace_status_phase{phase="Terminating"} 0
`,
		},
	})
}
