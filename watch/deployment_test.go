package watch

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// workloadCase is one golden case of a workload resource (deployments,
// replica sets, stateful sets, daemon sets, replication controllers): an
// object rendered with the named families (all when none are named).
type workloadCase[T any] struct {
	name     string
	opts     FamilyOptions
	obj      T
	families []string
	want     string
}

func runWorkloadCases[T any](t *testing.T, r *Resource, cases []workloadCase[T]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, r, c.opts, c.obj, c.families...))
		})
	}
}

// workloadMeta is object metadata with a name, namespace and UID (the
// renderer requires one).
func workloadMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}
}

// withRollingUpdate returns d with the given rolling update bounds.
func withRollingUpdate(d *appsv1.Deployment, maxUnavailable, maxSurge *intstr.IntOrString) *appsv1.Deployment {
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: maxUnavailable, MaxSurge: maxSurge}
	return d
}

var deploymentSpecFamilies = []string{
	"kube_deployment_spec_replicas",
	"kube_deployment_spec_strategy_rollingupdate_max_unavailable",
	"kube_deployment_spec_strategy_rollingupdate_max_surge",
}

// The cases of kube-state-metrics' deployment_test.go, and more.
func TestDeploymentFamilies(t *testing.T) {
	depl1 := &appsv1.Deployment{
		ObjectMeta: workloadMeta("ns1", "depl1"),
		Spec:       appsv1.DeploymentSpec{Replicas: new(int32(200))},
		Status: appsv1.DeploymentStatus{
			Replicas: 15, ReadyReplicas: 10, AvailableReplicas: 10, UnavailableReplicas: 5, UpdatedReplicas: 2,
			TerminatingReplicas: new(int32(3)), ObservedGeneration: 111,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: v1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: v1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			},
		},
	}
	depl1.CreationTimestamp = unixTime(1500000000)
	depl1.Annotations = map[string]string{"company.io/team": "my-brilliant-team"}
	depl1.Labels = map[string]string{"app": "example1"}
	depl1.Generation = 21
	withRollingUpdate(depl1, new(intstr.FromInt32(10)), new(intstr.FromInt32(10)))

	depl2 := &appsv1.Deployment{
		ObjectMeta: workloadMeta("ns2", "depl2"),
		Spec:       appsv1.DeploymentSpec{Paused: true, Replicas: new(int32(5))},
		Status: appsv1.DeploymentStatus{
			Replicas: 10, ReadyReplicas: 5, AvailableReplicas: 5, UpdatedReplicas: 1, ObservedGeneration: 1111,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: v1.ConditionFalse, Reason: "MinimumReplicasUnavailable"},
				{Type: appsv1.DeploymentProgressing, Status: v1.ConditionFalse, Reason: "ProgressDeadlineExceeded"},
				{Type: appsv1.DeploymentReplicaFailure, Status: v1.ConditionTrue, Reason: "ReplicaSetCreateError"},
			},
		},
	}
	depl2.Labels = map[string]string{"app": "example2"}
	depl2.Generation = 14
	withRollingUpdate(depl2, new(intstr.FromString("25%")), new(intstr.FromString("20%")))

	depl3 := &appsv1.Deployment{
		ObjectMeta: workloadMeta("ns3", "depl3"),
		Spec:       appsv1.DeploymentSpec{Replicas: new(int32(1))},
		Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: v1.ConditionFalse, Reason: "ThisReasonIsNotAllowed"},
			{Type: appsv1.DeploymentProgressing, Status: v1.ConditionTrue},
		}},
	}

	terminating := &appsv1.Deployment{
		ObjectMeta: workloadMeta("ns4", "deployment-terminating"),
		Spec:       appsv1.DeploymentSpec{Paused: true, Replicas: new(int32(10))},
	}
	terminating.CreationTimestamp = unixTime(1600000000)
	terminating.DeletionTimestamp = new(unixTime(1800000000))

	owned := &appsv1.Deployment{ObjectMeta: workloadMeta("ns5", "deployment-with-owner"), Spec: appsv1.DeploymentSpec{Replicas: new(int32(200))}}
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "Application", Name: "my-app", Controller: new(true)}}

	runWorkloadCases(t, deploymentResource(), []workloadCase[*appsv1.Deployment]{
		{name: "depl1", obj: depl1, opts: FamilyOptions{AnnotationsAllowlist: []string{"company.io/team"}}, want: `
			kube_deployment_annotations{annotation_company_io_team="my-brilliant-team",deployment="depl1",namespace="ns1"} 1
			kube_deployment_created{deployment="depl1",namespace="ns1"} 1.5e+09
			kube_deployment_owner{deployment="depl1",namespace="ns1"} 1
			kube_deployment_metadata_generation{deployment="depl1",namespace="ns1"} 21
			kube_deployment_spec_paused{deployment="depl1",namespace="ns1"} 0
			kube_deployment_spec_replicas{deployment="depl1",namespace="ns1"} 200
			kube_deployment_spec_strategy_rollingupdate_max_surge{deployment="depl1",namespace="ns1"} 10
			kube_deployment_spec_strategy_rollingupdate_max_unavailable{deployment="depl1",namespace="ns1"} 10
			kube_deployment_status_observed_generation{deployment="depl1",namespace="ns1"} 111
			kube_deployment_status_replicas_available{deployment="depl1",namespace="ns1"} 10
			kube_deployment_status_replicas_unavailable{deployment="depl1",namespace="ns1"} 5
			kube_deployment_status_replicas_updated{deployment="depl1",namespace="ns1"} 2
			kube_deployment_status_replicas{deployment="depl1",namespace="ns1"} 15
			kube_deployment_status_replicas_ready{deployment="depl1",namespace="ns1"} 10
			kube_deployment_status_terminating_replicas{deployment="depl1",namespace="ns1"} 3
			kube_deployment_status_condition{condition="Available",deployment="depl1",namespace="ns1",reason="MinimumReplicasAvailable",status="true"} 1
			kube_deployment_status_condition{condition="Available",deployment="depl1",namespace="ns1",reason="MinimumReplicasAvailable",status="false"} 0
			kube_deployment_status_condition{condition="Available",deployment="depl1",namespace="ns1",reason="MinimumReplicasAvailable",status="unknown"} 0
			kube_deployment_status_condition{condition="Progressing",deployment="depl1",namespace="ns1",reason="NewReplicaSetAvailable",status="true"} 1
			kube_deployment_status_condition{condition="Progressing",deployment="depl1",namespace="ns1",reason="NewReplicaSetAvailable",status="false"} 0
			kube_deployment_status_condition{condition="Progressing",deployment="depl1",namespace="ns1",reason="NewReplicaSetAvailable",status="unknown"} 0`},
		{name: "depl2 paused, percentages rounded down and up", obj: depl2, want: `
			kube_deployment_metadata_generation{deployment="depl2",namespace="ns2"} 14
			kube_deployment_owner{deployment="depl2",namespace="ns2"} 1
			kube_deployment_spec_paused{deployment="depl2",namespace="ns2"} 1
			kube_deployment_spec_replicas{deployment="depl2",namespace="ns2"} 5
			kube_deployment_spec_strategy_rollingupdate_max_surge{deployment="depl2",namespace="ns2"} 1
			kube_deployment_spec_strategy_rollingupdate_max_unavailable{deployment="depl2",namespace="ns2"} 1
			kube_deployment_status_observed_generation{deployment="depl2",namespace="ns2"} 1111
			kube_deployment_status_replicas_available{deployment="depl2",namespace="ns2"} 5
			kube_deployment_status_replicas_unavailable{deployment="depl2",namespace="ns2"} 0
			kube_deployment_status_replicas_updated{deployment="depl2",namespace="ns2"} 1
			kube_deployment_status_replicas{deployment="depl2",namespace="ns2"} 10
			kube_deployment_status_replicas_ready{deployment="depl2",namespace="ns2"} 5
			kube_deployment_status_condition{condition="Available",deployment="depl2",namespace="ns2",reason="MinimumReplicasUnavailable",status="true"} 0
			kube_deployment_status_condition{condition="Available",deployment="depl2",namespace="ns2",reason="MinimumReplicasUnavailable",status="false"} 1
			kube_deployment_status_condition{condition="Available",deployment="depl2",namespace="ns2",reason="MinimumReplicasUnavailable",status="unknown"} 0
			kube_deployment_status_condition{condition="Progressing",deployment="depl2",namespace="ns2",reason="ProgressDeadlineExceeded",status="true"} 0
			kube_deployment_status_condition{condition="Progressing",deployment="depl2",namespace="ns2",reason="ProgressDeadlineExceeded",status="false"} 1
			kube_deployment_status_condition{condition="Progressing",deployment="depl2",namespace="ns2",reason="ProgressDeadlineExceeded",status="unknown"} 0
			kube_deployment_status_condition{condition="ReplicaFailure",deployment="depl2",namespace="ns2",reason="ReplicaSetCreateError",status="true"} 1
			kube_deployment_status_condition{condition="ReplicaFailure",deployment="depl2",namespace="ns2",reason="ReplicaSetCreateError",status="false"} 0
			kube_deployment_status_condition{condition="ReplicaFailure",deployment="depl2",namespace="ns2",reason="ReplicaSetCreateError",status="unknown"} 0`},
		{name: "depl3 unknown and empty reasons", obj: depl3, want: `
			kube_deployment_metadata_generation{deployment="depl3",namespace="ns3"} 0
			kube_deployment_owner{deployment="depl3",namespace="ns3"} 1
			kube_deployment_spec_paused{deployment="depl3",namespace="ns3"} 0
			kube_deployment_spec_replicas{deployment="depl3",namespace="ns3"} 1
			kube_deployment_status_condition{condition="Available",deployment="depl3",namespace="ns3",reason="unknown",status="true"} 0
			kube_deployment_status_condition{condition="Available",deployment="depl3",namespace="ns3",reason="unknown",status="false"} 1
			kube_deployment_status_condition{condition="Available",deployment="depl3",namespace="ns3",reason="unknown",status="unknown"} 0
			kube_deployment_status_observed_generation{deployment="depl3",namespace="ns3"} 0
			kube_deployment_status_replicas{deployment="depl3",namespace="ns3"} 0
			kube_deployment_status_replicas_available{deployment="depl3",namespace="ns3"} 0
			kube_deployment_status_replicas_ready{deployment="depl3",namespace="ns3"} 0
			kube_deployment_status_replicas_unavailable{deployment="depl3",namespace="ns3"} 0
			kube_deployment_status_replicas_updated{deployment="depl3",namespace="ns3"} 0
			kube_deployment_status_condition{condition="Progressing",deployment="depl3",namespace="ns3",status="false"} 0
			kube_deployment_status_condition{condition="Progressing",deployment="depl3",namespace="ns3",status="true"} 1
			kube_deployment_status_condition{condition="Progressing",deployment="depl3",namespace="ns3",status="unknown"} 0`},
		{name: "terminating", obj: terminating, families: []string{"kube_deployment_deletion_timestamp"}, want: `
			kube_deployment_deletion_timestamp{deployment="deployment-terminating",namespace="ns4"} 1.8e+09`},
		{name: "owner without owner_is_controller", obj: owned, want: `
			kube_deployment_owner{deployment="deployment-with-owner",namespace="ns5",owner_kind="Application",owner_name="my-app"} 1
			kube_deployment_metadata_generation{deployment="deployment-with-owner",namespace="ns5"} 0
			kube_deployment_spec_paused{deployment="deployment-with-owner",namespace="ns5"} 0
			kube_deployment_spec_replicas{deployment="deployment-with-owner",namespace="ns5"} 200
			kube_deployment_status_observed_generation{deployment="deployment-with-owner",namespace="ns5"} 0
			kube_deployment_status_replicas{deployment="deployment-with-owner",namespace="ns5"} 0
			kube_deployment_status_replicas_available{deployment="deployment-with-owner",namespace="ns5"} 0
			kube_deployment_status_replicas_ready{deployment="deployment-with-owner",namespace="ns5"} 0
			kube_deployment_status_replicas_unavailable{deployment="deployment-with-owner",namespace="ns5"} 0
			kube_deployment_status_replicas_updated{deployment="deployment-with-owner",namespace="ns5"} 0`},
		{name: "labels allowlist", obj: depl1, opts: FamilyOptions{LabelsAllowlist: []string{"*"}},
			families: []string{"kube_deployment_labels", "kube_deployment_annotations"}, want: `
			kube_deployment_labels{deployment="depl1",label_app="example1",namespace="ns1"} 1`},
		{name: "nil replicas: no spec series",
			obj:      withRollingUpdate(&appsv1.Deployment{ObjectMeta: workloadMeta("ns6", "deployment-nil-replicas")}, new(intstr.FromInt32(10)), new(intstr.FromInt32(10))),
			families: deploymentSpecFamilies, want: ``},
		{name: "nil rolling update bounds",
			obj: withRollingUpdate(&appsv1.Deployment{
				ObjectMeta: workloadMeta("ns7", "deployment-nil-rollingupdate-values"),
				Spec:       appsv1.DeploymentSpec{Replicas: new(int32(1))},
			}, nil, nil),
			families: deploymentSpecFamilies, want: `
			kube_deployment_spec_replicas{deployment="deployment-nil-rollingupdate-values",namespace="ns7"} 1`},
		{name: "malformed rolling update bounds",
			obj: withRollingUpdate(&appsv1.Deployment{
				ObjectMeta: workloadMeta("ns8", "deployment-malformed-rollingupdate-values"),
				Spec:       appsv1.DeploymentSpec{Replicas: new(int32(1))},
			}, new(intstr.FromString("not-a-percentage")), new(intstr.FromString("abc%"))),
			families: deploymentSpecFamilies, want: `
			kube_deployment_spec_replicas{deployment="deployment-malformed-rollingupdate-values",namespace="ns8"} 1`},
		{name: "percentages of odd replicas: unavailable rounded down, surge up",
			obj: withRollingUpdate(&appsv1.Deployment{
				ObjectMeta: workloadMeta("ns9", "odd"),
				Spec:       appsv1.DeploymentSpec{Replicas: new(int32(3))},
			}, new(intstr.FromString("50%")), new(intstr.FromString("50%"))),
			families: deploymentSpecFamilies, want: `
			kube_deployment_spec_replicas{deployment="odd",namespace="ns9"} 3
			kube_deployment_spec_strategy_rollingupdate_max_surge{deployment="odd",namespace="ns9"} 2
			kube_deployment_spec_strategy_rollingupdate_max_unavailable{deployment="odd",namespace="ns9"} 1`},
		{name: "malformed: empty object and conditions", obj: &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{UID: "u", OwnerReferences: []metav1.OwnerReference{{}}},
			Spec:       appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{}}},
			Status:     appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{}, {Type: "X", Status: "Weird", Reason: "Odd"}}},
		}, opts: FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}}, want: `
			kube_deployment_annotations{} 1
			kube_deployment_labels{} 1
			kube_deployment_owner{} 1
			kube_deployment_metadata_generation{} 0
			kube_deployment_spec_paused{} 0
			kube_deployment_status_condition{status="true"} 0
			kube_deployment_status_condition{status="false"} 0
			kube_deployment_status_condition{status="unknown"} 0
			kube_deployment_status_condition{condition="X",reason="unknown",status="true"} 0
			kube_deployment_status_condition{condition="X",reason="unknown",status="false"} 0
			kube_deployment_status_condition{condition="X",reason="unknown",status="unknown"} 0
			kube_deployment_status_observed_generation{} 0
			kube_deployment_status_replicas{} 0
			kube_deployment_status_replicas_available{} 0
			kube_deployment_status_replicas_ready{} 0
			kube_deployment_status_replicas_unavailable{} 0
			kube_deployment_status_replicas_updated{} 0`},
	})
}
