package watch

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cases of kube-state-metrics' replicaset_test.go, and more.
func TestReplicaSetFamilies(t *testing.T) {
	rs1 := &appsv1.ReplicaSet{
		ObjectMeta: workloadMeta("ns1", "rs1"),
		Spec:       appsv1.ReplicaSetSpec{Replicas: new(int32(5))},
		Status: appsv1.ReplicaSetStatus{
			Replicas: 5, FullyLabeledReplicas: 10, ReadyReplicas: 5, TerminatingReplicas: new(int32(3)), ObservedGeneration: 1,
		},
	}
	rs1.CreationTimestamp = unixTime(1500000000)
	rs1.Generation = 21
	rs1.OwnerReferences = []metav1.OwnerReference{{Kind: "Deployment", Name: "dp-name", Controller: new(true)}}
	rs1.Labels = map[string]string{"app": "example1"}

	rs2 := &appsv1.ReplicaSet{
		ObjectMeta: workloadMeta("ns2", "rs2"),
		Spec:       appsv1.ReplicaSetSpec{Replicas: new(int32(0))},
		Status:     appsv1.ReplicaSetStatus{FullyLabeledReplicas: 5, ObservedGeneration: 5},
	}
	rs2.Generation = 14
	rs2.Labels = map[string]string{"app": "example2", "env": "ex"}
	rs2.Annotations = map[string]string{"deployment.kubernetes.io/revision": "3"}

	runWorkloadCases(t, replicaSetResource(), []workloadCase[*appsv1.ReplicaSet]{
		{name: "rs1", obj: rs1, want: `
			kube_replicaset_created{namespace="ns1",replicaset="rs1"} 1.5e+09
			kube_replicaset_metadata_generation{namespace="ns1",replicaset="rs1"} 21
			kube_replicaset_status_replicas{namespace="ns1",replicaset="rs1"} 5
			kube_replicaset_status_observed_generation{namespace="ns1",replicaset="rs1"} 1
			kube_replicaset_status_fully_labeled_replicas{namespace="ns1",replicaset="rs1"} 10
			kube_replicaset_status_ready_replicas{namespace="ns1",replicaset="rs1"} 5
			kube_replicaset_status_terminating_replicas{namespace="ns1",replicaset="rs1"} 3
			kube_replicaset_spec_replicas{namespace="ns1",replicaset="rs1"} 5
			kube_replicaset_owner{namespace="ns1",owner_is_controller="true",owner_kind="Deployment",owner_name="dp-name",replicaset="rs1"} 1`},
		{name: "rs2 without owner or terminating replicas", obj: rs2, want: `
			kube_replicaset_metadata_generation{namespace="ns2",replicaset="rs2"} 14
			kube_replicaset_status_replicas{namespace="ns2",replicaset="rs2"} 0
			kube_replicaset_status_observed_generation{namespace="ns2",replicaset="rs2"} 5
			kube_replicaset_status_fully_labeled_replicas{namespace="ns2",replicaset="rs2"} 5
			kube_replicaset_status_ready_replicas{namespace="ns2",replicaset="rs2"} 0
			kube_replicaset_spec_replicas{namespace="ns2",replicaset="rs2"} 0
			kube_replicaset_owner{namespace="ns2",replicaset="rs2"} 1`},
		{name: "allowlists", obj: rs2,
			opts:     FamilyOptions{LabelsAllowlist: []string{"env"}, AnnotationsAllowlist: []string{"deployment.kubernetes.io/*"}},
			families: []string{"kube_replicaset_labels", "kube_replicaset_annotations"}, want: `
			kube_replicaset_annotations{annotation_deployment_kubernetes_io_revision="3",namespace="ns2",replicaset="rs2"} 1
			kube_replicaset_labels{label_env="ex",namespace="ns2",replicaset="rs2"} 1`},
		{name: "malformed: empty object", obj: &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
			UID: "u", OwnerReferences: []metav1.OwnerReference{{}, {Kind: "Deployment", Controller: new(false)}},
		}}, opts: FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}}, want: `
			kube_replicaset_annotations{} 1
			kube_replicaset_labels{} 1
			kube_replicaset_metadata_generation{} 0
			kube_replicaset_owner{owner_is_controller="false"} 1
			kube_replicaset_owner{owner_is_controller="false",owner_kind="Deployment"} 1
			kube_replicaset_status_fully_labeled_replicas{} 0
			kube_replicaset_status_observed_generation{} 0
			kube_replicaset_status_ready_replicas{} 0
			kube_replicaset_status_replicas{} 0`},
	})
}
