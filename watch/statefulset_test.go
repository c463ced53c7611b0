package watch

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statefulSetCounts are the families of kube-state-metrics'
// statefulset_test.go cases.
var statefulSetCounts = []string{
	"kube_statefulset_labels",
	"kube_statefulset_metadata_generation",
	"kube_statefulset_replicas",
	"kube_statefulset_ordinals_start",
	"kube_statefulset_status_observed_generation",
	"kube_statefulset_status_replicas",
	"kube_statefulset_status_replicas_available",
	"kube_statefulset_status_replicas_current",
	"kube_statefulset_status_replicas_ready",
	"kube_statefulset_status_replicas_updated",
	"kube_statefulset_status_update_revision",
	"kube_statefulset_status_current_revision",
	"kube_statefulset_persistentvolumeclaim_retention_policy",
}

// The cases of kube-state-metrics' statefulset_test.go, and more.
func TestStatefulSetFamilies(t *testing.T) {
	sts := func(ns, name string, generation int64, replicas int32, status appsv1.StatefulSetStatus) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{
			ObjectMeta: workloadMeta(ns, name),
			Spec:       appsv1.StatefulSetSpec{Replicas: &replicas, ServiceName: name + "service"},
			Status:     status,
		}
		s.Generation = generation
		s.Labels = map[string]string{"app": "example-" + name}
		return s
	}
	s1 := sts("ns1", "statefulset1", 3, 3, appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, UpdateRevision: "ur1", CurrentRevision: "cr1"})
	s1.CreationTimestamp = unixTime(1500000000)
	s4 := sts("ns4", "statefulset4", 1, 3, appsv1.StatefulSetStatus{Replicas: 7, UpdateRevision: "ur3", CurrentRevision: "cr3"})
	s4.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
	}
	s5 := sts("ns5", "statefulset5", 1, 3, appsv1.StatefulSetStatus{Replicas: 3, UpdateRevision: "ur5", CurrentRevision: "cr5"})
	s5.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 2}
	s6 := sts("ns6", "statefulset6", 1, 1, appsv1.StatefulSetStatus{Replicas: 1})
	s6.DeletionTimestamp = new(unixTime(1800000000))
	s6.Annotations = map[string]string{"team": "db"}
	halfPolicy := sts("ns7", "statefulset7", 1, 1, appsv1.StatefulSetStatus{})
	halfPolicy.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}

	runWorkloadCases(t, statefulSetResource(), []workloadCase[*appsv1.StatefulSet]{
		{name: "statefulset1", obj: s1, families: append([]string{"kube_statefulset_created"}, statefulSetCounts...), want: `
			kube_statefulset_status_update_revision{namespace="ns1",revision="ur1",statefulset="statefulset1"} 1
			kube_statefulset_created{namespace="ns1",statefulset="statefulset1"} 1.5e+09
			kube_statefulset_status_current_revision{namespace="ns1",revision="cr1",statefulset="statefulset1"} 1
			kube_statefulset_status_replicas{namespace="ns1",statefulset="statefulset1"} 2
			kube_statefulset_status_replicas_available{namespace="ns1",statefulset="statefulset1"} 0
			kube_statefulset_status_replicas_current{namespace="ns1",statefulset="statefulset1"} 0
			kube_statefulset_status_replicas_ready{namespace="ns1",statefulset="statefulset1"} 0
			kube_statefulset_status_replicas_updated{namespace="ns1",statefulset="statefulset1"} 0
			kube_statefulset_status_observed_generation{namespace="ns1",statefulset="statefulset1"} 1
			kube_statefulset_replicas{namespace="ns1",statefulset="statefulset1"} 3
			kube_statefulset_metadata_generation{namespace="ns1",statefulset="statefulset1"} 3`},
		{name: "statefulset2",
			obj: sts("ns2", "statefulset2", 21, 6, appsv1.StatefulSetStatus{
				CurrentReplicas: 2, ObservedGeneration: 2, ReadyReplicas: 5, Replicas: 5, AvailableReplicas: 4, UpdatedReplicas: 3,
				UpdateRevision: "ur2", CurrentRevision: "cr2",
			}),
			families: statefulSetCounts, want: `
			kube_statefulset_status_update_revision{namespace="ns2",revision="ur2",statefulset="statefulset2"} 1
			kube_statefulset_status_replicas{namespace="ns2",statefulset="statefulset2"} 5
			kube_statefulset_status_replicas_available{namespace="ns2",statefulset="statefulset2"} 4
			kube_statefulset_status_replicas_current{namespace="ns2",statefulset="statefulset2"} 2
			kube_statefulset_status_replicas_ready{namespace="ns2",statefulset="statefulset2"} 5
			kube_statefulset_status_replicas_updated{namespace="ns2",statefulset="statefulset2"} 3
			kube_statefulset_status_observed_generation{namespace="ns2",statefulset="statefulset2"} 2
			kube_statefulset_replicas{namespace="ns2",statefulset="statefulset2"} 6
			kube_statefulset_metadata_generation{namespace="ns2",statefulset="statefulset2"} 21
			kube_statefulset_status_current_revision{namespace="ns2",revision="cr2",statefulset="statefulset2"} 1`},
		{name: "statefulset3",
			obj:      sts("ns3", "statefulset3", 36, 9, appsv1.StatefulSetStatus{Replicas: 7, UpdateRevision: "ur3", CurrentRevision: "cr3"}),
			families: statefulSetCounts, want: `
			kube_statefulset_status_update_revision{namespace="ns3",revision="ur3",statefulset="statefulset3"} 1
			kube_statefulset_status_replicas{namespace="ns3",statefulset="statefulset3"} 7
			kube_statefulset_status_replicas_available{namespace="ns3",statefulset="statefulset3"} 0
			kube_statefulset_status_replicas_current{namespace="ns3",statefulset="statefulset3"} 0
			kube_statefulset_status_replicas_ready{namespace="ns3",statefulset="statefulset3"} 0
			kube_statefulset_status_replicas_updated{namespace="ns3",statefulset="statefulset3"} 0
			kube_statefulset_status_observed_generation{namespace="ns3",statefulset="statefulset3"} 0
			kube_statefulset_replicas{namespace="ns3",statefulset="statefulset3"} 9
			kube_statefulset_metadata_generation{namespace="ns3",statefulset="statefulset3"} 36
			kube_statefulset_status_current_revision{namespace="ns3",revision="cr3",statefulset="statefulset3"} 1`},
		{name: "statefulset4 retention policy", obj: s4, families: statefulSetCounts, want: `
			kube_statefulset_status_update_revision{namespace="ns4",revision="ur3",statefulset="statefulset4"} 1
			kube_statefulset_status_replicas{namespace="ns4",statefulset="statefulset4"} 7
			kube_statefulset_status_replicas_available{namespace="ns4",statefulset="statefulset4"} 0
			kube_statefulset_status_replicas_current{namespace="ns4",statefulset="statefulset4"} 0
			kube_statefulset_status_replicas_ready{namespace="ns4",statefulset="statefulset4"} 0
			kube_statefulset_status_replicas_updated{namespace="ns4",statefulset="statefulset4"} 0
			kube_statefulset_status_observed_generation{namespace="ns4",statefulset="statefulset4"} 0
			kube_statefulset_replicas{namespace="ns4",statefulset="statefulset4"} 3
			kube_statefulset_metadata_generation{namespace="ns4",statefulset="statefulset4"} 1
			kube_statefulset_persistentvolumeclaim_retention_policy{namespace="ns4",statefulset="statefulset4",when_deleted="Retain",when_scaled="Delete"} 1
			kube_statefulset_status_current_revision{namespace="ns4",revision="cr3",statefulset="statefulset4"} 1`},
		{name: "statefulset5 ordinals", obj: s5, families: statefulSetCounts, want: `
			kube_statefulset_status_update_revision{namespace="ns5",revision="ur5",statefulset="statefulset5"} 1
			kube_statefulset_status_replicas{namespace="ns5",statefulset="statefulset5"} 3
			kube_statefulset_status_replicas_available{namespace="ns5",statefulset="statefulset5"} 0
			kube_statefulset_status_replicas_current{namespace="ns5",statefulset="statefulset5"} 0
			kube_statefulset_status_replicas_ready{namespace="ns5",statefulset="statefulset5"} 0
			kube_statefulset_status_replicas_updated{namespace="ns5",statefulset="statefulset5"} 0
			kube_statefulset_status_observed_generation{namespace="ns5",statefulset="statefulset5"} 0
			kube_statefulset_replicas{namespace="ns5",statefulset="statefulset5"} 3
			kube_statefulset_ordinals_start{namespace="ns5",statefulset="statefulset5"} 2
			kube_statefulset_metadata_generation{namespace="ns5",statefulset="statefulset5"} 1
			kube_statefulset_status_current_revision{namespace="ns5",revision="cr5",statefulset="statefulset5"} 1`},
		{name: "statefulset6 deletion timestamp", obj: s6, families: []string{"kube_statefulset_deletion_timestamp"}, want: `
			kube_statefulset_deletion_timestamp{namespace="ns6",statefulset="statefulset6"} 1.8e+09`},
		{name: "allowlists", obj: s6,
			opts:     FamilyOptions{LabelsAllowlist: []string{"app"}, AnnotationsAllowlist: []string{"team"}},
			families: []string{"kube_statefulset_labels", "kube_statefulset_annotations"}, want: `
			kube_statefulset_annotations{annotation_team="db",namespace="ns6",statefulset="statefulset6"} 1
			kube_statefulset_labels{label_app="example-statefulset6",namespace="ns6",statefulset="statefulset6"} 1`},
		{name: "retention policy with one rule", obj: halfPolicy,
			families: []string{"kube_statefulset_persistentvolumeclaim_retention_policy"}, want: `
			kube_statefulset_persistentvolumeclaim_retention_policy{namespace="ns7",statefulset="statefulset7",when_scaled="Delete"} 1`},
		{name: "malformed: empty object", obj: &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{UID: "u"},
			Spec: appsv1.StatefulSetSpec{
				Ordinals:                             &appsv1.StatefulSetOrdinals{},
				PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{},
			},
		}, opts: FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}}, want: `
			kube_statefulset_annotations{} 1
			kube_statefulset_labels{} 1
			kube_statefulset_metadata_generation{} 0
			kube_statefulset_ordinals_start{} 0
			kube_statefulset_status_current_revision{} 1
			kube_statefulset_status_observed_generation{} 0
			kube_statefulset_status_replicas{} 0
			kube_statefulset_status_replicas_available{} 0
			kube_statefulset_status_replicas_current{} 0
			kube_statefulset_status_replicas_ready{} 0
			kube_statefulset_status_replicas_updated{} 0
			kube_statefulset_status_update_revision{} 1`},
	})
}
