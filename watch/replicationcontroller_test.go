package watch

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cases of kube-state-metrics' replicationcontroller_test.go, and more.
func TestReplicationControllerFamilies(t *testing.T) {
	rc := func(ns, name string, generation int64, replicas int32, owners []metav1.OwnerReference, status v1.ReplicationControllerStatus) *v1.ReplicationController {
		r := &v1.ReplicationController{ObjectMeta: workloadMeta(ns, name), Spec: v1.ReplicationControllerSpec{Replicas: &replicas}, Status: status}
		r.Generation = generation
		r.OwnerReferences = owners
		return r
	}
	rc1 := rc("ns1", "rc1", 21, 5,
		[]metav1.OwnerReference{{Kind: "DeploymentConfig", Name: "dc-name", Controller: new(true)}},
		v1.ReplicationControllerStatus{Replicas: 5, FullyLabeledReplicas: 10, ReadyReplicas: 5, AvailableReplicas: 3, ObservedGeneration: 1})
	rc1.CreationTimestamp = unixTime(1500000000)

	runWorkloadCases(t, replicationControllerResource(), []workloadCase[*v1.ReplicationController]{
		{name: "rc1", obj: rc1, want: `
			kube_replicationcontroller_created{namespace="ns1",replicationcontroller="rc1"} 1.5e+09
			kube_replicationcontroller_metadata_generation{namespace="ns1",replicationcontroller="rc1"} 21
			kube_replicationcontroller_owner{namespace="ns1",owner_is_controller="true",owner_kind="DeploymentConfig",owner_name="dc-name",replicationcontroller="rc1"} 1
			kube_replicationcontroller_status_replicas{namespace="ns1",replicationcontroller="rc1"} 5
			kube_replicationcontroller_status_observed_generation{namespace="ns1",replicationcontroller="rc1"} 1
			kube_replicationcontroller_status_fully_labeled_replicas{namespace="ns1",replicationcontroller="rc1"} 10
			kube_replicationcontroller_status_ready_replicas{namespace="ns1",replicationcontroller="rc1"} 5
			kube_replicationcontroller_status_available_replicas{namespace="ns1",replicationcontroller="rc1"} 3
			kube_replicationcontroller_spec_replicas{namespace="ns1",replicationcontroller="rc1"} 5`},
		{name: "rc2 without owner",
			obj: rc("ns2", "rc2", 14, 0, nil, v1.ReplicationControllerStatus{FullyLabeledReplicas: 5, ObservedGeneration: 5}), want: `
			kube_replicationcontroller_metadata_generation{namespace="ns2",replicationcontroller="rc2"} 14
			kube_replicationcontroller_owner{namespace="ns2",replicationcontroller="rc2"} 1
			kube_replicationcontroller_status_replicas{namespace="ns2",replicationcontroller="rc2"} 0
			kube_replicationcontroller_status_observed_generation{namespace="ns2",replicationcontroller="rc2"} 5
			kube_replicationcontroller_status_fully_labeled_replicas{namespace="ns2",replicationcontroller="rc2"} 5
			kube_replicationcontroller_status_ready_replicas{namespace="ns2",replicationcontroller="rc2"} 0
			kube_replicationcontroller_status_available_replicas{namespace="ns2",replicationcontroller="rc2"} 0
			kube_replicationcontroller_spec_replicas{namespace="ns2",replicationcontroller="rc2"} 0`},
		{name: "rc3 owner without controller flag",
			obj: rc("ns3", "rc3", 5, 0, []metav1.OwnerReference{{Kind: "DeploymentConfig", Name: "dc-test"}},
				v1.ReplicationControllerStatus{Replicas: 1, FullyLabeledReplicas: 5, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 1}), want: `
			kube_replicationcontroller_metadata_generation{namespace="ns3",replicationcontroller="rc3"} 5
			kube_replicationcontroller_owner{namespace="ns3",owner_is_controller="false",owner_kind="DeploymentConfig",owner_name="dc-test",replicationcontroller="rc3"} 1
			kube_replicationcontroller_status_replicas{namespace="ns3",replicationcontroller="rc3"} 1
			kube_replicationcontroller_status_observed_generation{namespace="ns3",replicationcontroller="rc3"} 1
			kube_replicationcontroller_status_fully_labeled_replicas{namespace="ns3",replicationcontroller="rc3"} 5
			kube_replicationcontroller_status_ready_replicas{namespace="ns3",replicationcontroller="rc3"} 2
			kube_replicationcontroller_status_available_replicas{namespace="ns3",replicationcontroller="rc3"} 1
			kube_replicationcontroller_spec_replicas{namespace="ns3",replicationcontroller="rc3"} 0`},
		{name: "malformed: empty object, allowlists ignored", obj: &v1.ReplicationController{ObjectMeta: metav1.ObjectMeta{
			UID: "u", Labels: map[string]string{"app": "x"}, OwnerReferences: []metav1.OwnerReference{{}},
		}}, opts: FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}}, want: `
			kube_replicationcontroller_metadata_generation{} 0
			kube_replicationcontroller_owner{owner_is_controller="false"} 1
			kube_replicationcontroller_status_available_replicas{} 0
			kube_replicationcontroller_status_fully_labeled_replicas{} 0
			kube_replicationcontroller_status_observed_generation{} 0
			kube_replicationcontroller_status_ready_replicas{} 0
			kube_replicationcontroller_status_replicas{} 0`},
	})
}
