package watch

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cases of kube-state-metrics' daemonset_test.go, and more.
func TestDaemonSetFamilies(t *testing.T) {
	ds := func(ns, name string, generation int64, status appsv1.DaemonSetStatus) *appsv1.DaemonSet {
		d := &appsv1.DaemonSet{ObjectMeta: workloadMeta(ns, name), Status: status}
		d.Generation = generation
		d.Labels = map[string]string{"app": "example-" + name}
		return d
	}
	ds1 := ds("ns1", "ds1", 21, appsv1.DaemonSetStatus{
		CurrentNumberScheduled: 15, NumberMisscheduled: 10, DesiredNumberScheduled: 5, NumberReady: 5, ObservedGeneration: 2,
	})
	ds1.Annotations = map[string]string{"app": "mysql-server", "app.k8s.io/owner": "@foo"}
	ds2 := ds("ns2", "ds2", 14, appsv1.DaemonSetStatus{CurrentNumberScheduled: 10, NumberMisscheduled: 5})
	ds2.CreationTimestamp = unixTime(1500000000)
	ds3 := ds("ns3", "ds3", 15, appsv1.DaemonSetStatus{
		CurrentNumberScheduled: 10, NumberMisscheduled: 5, DesiredNumberScheduled: 15, NumberReady: 5,
		NumberAvailable: 5, NumberUnavailable: 5, UpdatedNumberScheduled: 5,
	})
	ds3.CreationTimestamp = unixTime(1500000000)
	ds4 := ds("ns4", "ds4", 14, appsv1.DaemonSetStatus{CurrentNumberScheduled: 10, NumberMisscheduled: 5})
	ds4.CreationTimestamp = unixTime(1500000000)
	ds4.DeletionTimestamp = new(unixTime(1800000000))

	runWorkloadCases(t, daemonSetResource(), []workloadCase[*appsv1.DaemonSet]{
		{name: "ds1 annotations allowlist", obj: ds1, opts: FamilyOptions{AnnotationsAllowlist: []string{"app.k8s.io/owner"}}, want: `
			kube_daemonset_metadata_generation{daemonset="ds1",namespace="ns1"} 21
			kube_daemonset_status_current_number_scheduled{daemonset="ds1",namespace="ns1"} 15
			kube_daemonset_status_desired_number_scheduled{daemonset="ds1",namespace="ns1"} 5
			kube_daemonset_status_number_available{daemonset="ds1",namespace="ns1"} 0
			kube_daemonset_status_number_misscheduled{daemonset="ds1",namespace="ns1"} 10
			kube_daemonset_status_number_ready{daemonset="ds1",namespace="ns1"} 5
			kube_daemonset_status_number_unavailable{daemonset="ds1",namespace="ns1"} 0
			kube_daemonset_status_observed_generation{daemonset="ds1",namespace="ns1"} 2
			kube_daemonset_status_updated_number_scheduled{daemonset="ds1",namespace="ns1"} 0
			kube_daemonset_annotations{annotation_app_k8s_io_owner="@foo",daemonset="ds1",namespace="ns1"} 1`},
		{name: "ds2", obj: ds2, want: `
			kube_daemonset_metadata_generation{daemonset="ds2",namespace="ns2"} 14
			kube_daemonset_status_current_number_scheduled{daemonset="ds2",namespace="ns2"} 10
			kube_daemonset_status_desired_number_scheduled{daemonset="ds2",namespace="ns2"} 0
			kube_daemonset_status_number_available{daemonset="ds2",namespace="ns2"} 0
			kube_daemonset_status_number_misscheduled{daemonset="ds2",namespace="ns2"} 5
			kube_daemonset_status_number_ready{daemonset="ds2",namespace="ns2"} 0
			kube_daemonset_status_number_unavailable{daemonset="ds2",namespace="ns2"} 0
			kube_daemonset_status_observed_generation{daemonset="ds2",namespace="ns2"} 0
			kube_daemonset_status_updated_number_scheduled{daemonset="ds2",namespace="ns2"} 0
			kube_daemonset_created{daemonset="ds2",namespace="ns2"} 1.5e+09`},
		{name: "ds3", obj: ds3, opts: FamilyOptions{LabelsAllowlist: []string{"app"}}, want: `
			kube_daemonset_created{daemonset="ds3",namespace="ns3"} 1.5e+09
			kube_daemonset_labels{daemonset="ds3",label_app="example-ds3",namespace="ns3"} 1
			kube_daemonset_metadata_generation{daemonset="ds3",namespace="ns3"} 15
			kube_daemonset_status_current_number_scheduled{daemonset="ds3",namespace="ns3"} 10
			kube_daemonset_status_desired_number_scheduled{daemonset="ds3",namespace="ns3"} 15
			kube_daemonset_status_number_available{daemonset="ds3",namespace="ns3"} 5
			kube_daemonset_status_number_misscheduled{daemonset="ds3",namespace="ns3"} 5
			kube_daemonset_status_number_ready{daemonset="ds3",namespace="ns3"} 5
			kube_daemonset_status_number_unavailable{daemonset="ds3",namespace="ns3"} 5
			kube_daemonset_status_observed_generation{daemonset="ds3",namespace="ns3"} 0
			kube_daemonset_status_updated_number_scheduled{daemonset="ds3",namespace="ns3"} 5`},
		{name: "ds4 deletion timestamp", obj: ds4, families: []string{"kube_daemonset_deletion_timestamp"}, want: `
			kube_daemonset_deletion_timestamp{daemonset="ds4",namespace="ns4"} 1.8e+09`},
		{name: "malformed: empty object", obj: &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			opts: FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}}, want: `
			kube_daemonset_annotations{} 1
			kube_daemonset_labels{} 1
			kube_daemonset_metadata_generation{} 0
			kube_daemonset_status_current_number_scheduled{} 0
			kube_daemonset_status_desired_number_scheduled{} 0
			kube_daemonset_status_number_available{} 0
			kube_daemonset_status_number_misscheduled{} 0
			kube_daemonset_status_number_ready{} 0
			kube_daemonset_status_number_unavailable{} 0
			kube_daemonset_status_observed_generation{} 0
			kube_daemonset_status_updated_number_scheduled{} 0`},
	})
}
