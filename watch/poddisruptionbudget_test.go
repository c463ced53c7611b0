package watch

import (
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cases of kube-state-metrics' poddisruptionbudget_test.go, plus a
// malformed budget.
func TestPodDisruptionBudgetFamilies(t *testing.T) {
	cases := []struct {
		name  string
		opts  FamilyOptions
		pdb   *policyv1.PodDisruptionBudget
		names []string
		want  string
	}{
		{
			name: "created",
			pdb: &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Name: "pdb1", Namespace: "ns1", UID: "u1", Generation: 21, CreationTimestamp: metav1.NewTime(time.Unix(1500000000, 0))},
				Status:     policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 12, DesiredHealthy: 10, DisruptionsAllowed: 2, ExpectedPods: 15, ObservedGeneration: 111},
			},
			want: `
				kube_poddisruptionbudget_created{namespace="ns1",poddisruptionbudget="pdb1"} 1.5e+09
				kube_poddisruptionbudget_status_current_healthy{namespace="ns1",poddisruptionbudget="pdb1"} 12
				kube_poddisruptionbudget_status_desired_healthy{namespace="ns1",poddisruptionbudget="pdb1"} 10
				kube_poddisruptionbudget_status_pod_disruptions_allowed{namespace="ns1",poddisruptionbudget="pdb1"} 2
				kube_poddisruptionbudget_status_expected_pods{namespace="ns1",poddisruptionbudget="pdb1"} 15
				kube_poddisruptionbudget_status_observed_generation{namespace="ns1",poddisruptionbudget="pdb1"} 111`,
		},
		{
			name: "no disruptions allowed",
			pdb: &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Name: "pdb2", Namespace: "ns2", UID: "u2", Generation: 14},
				Status:     policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 8, DesiredHealthy: 9, ExpectedPods: 10, ObservedGeneration: 1111},
			},
			want: `
				kube_poddisruptionbudget_status_current_healthy{namespace="ns2",poddisruptionbudget="pdb2"} 8
				kube_poddisruptionbudget_status_desired_healthy{namespace="ns2",poddisruptionbudget="pdb2"} 9
				kube_poddisruptionbudget_status_pod_disruptions_allowed{namespace="ns2",poddisruptionbudget="pdb2"} 0
				kube_poddisruptionbudget_status_expected_pods{namespace="ns2",poddisruptionbudget="pdb2"} 10
				kube_poddisruptionbudget_status_observed_generation{namespace="ns2",poddisruptionbudget="pdb2"} 1111`,
		},
		{
			name: "allowlists",
			opts: FamilyOptions{LabelsAllowlist: []string{"app"}, AnnotationsAllowlist: []string{"app.k8s.io/owner"}},
			pdb: &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{
				Name: "pdb_with_allowed_labels_and_annotations", Namespace: "ns", UID: "u3",
				Annotations: map[string]string{"app.k8s.io/owner": "mysql-server", "foo": "bar"},
				Labels:      map[string]string{"app": "mysql-server", "hello": "world"},
			}},
			names: []string{"kube_poddisruptionbudget_annotations", "kube_poddisruptionbudget_labels"},
			want: `
				kube_poddisruptionbudget_annotations{annotation_app_k8s_io_owner="mysql-server",namespace="ns",poddisruptionbudget="pdb_with_allowed_labels_and_annotations"} 1
				kube_poddisruptionbudget_labels{label_app="mysql-server",namespace="ns",poddisruptionbudget="pdb_with_allowed_labels_and_annotations"} 1`,
		},
		{
			name: "deleted",
			pdb: &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Name: "pdb3", Namespace: "ns3", UID: "u4", Generation: 14, DeletionTimestamp: &metav1.Time{Time: time.Unix(1800000000, 0)}},
				Status:     policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 8, DesiredHealthy: 9},
			},
			names: []string{"kube_poddisruptionbudget_deletion_timestamp"},
			want:  `kube_poddisruptionbudget_deletion_timestamp{namespace="ns3",poddisruptionbudget="pdb3"} 1.8e+09`,
		},
		{
			// Nothing but a UID and a zero deletion time (not rendered).
			name: "malformed",
			opts: FamilyOptions{AnnotationsAllowlist: []string{"*"}},
			pdb:  &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{UID: "u0", DeletionTimestamp: &metav1.Time{}}},
			want: `
				kube_poddisruptionbudget_annotations{} 1
				kube_poddisruptionbudget_status_current_healthy{} 0
				kube_poddisruptionbudget_status_desired_healthy{} 0
				kube_poddisruptionbudget_status_pod_disruptions_allowed{} 0
				kube_poddisruptionbudget_status_expected_pods{} 0
				kube_poddisruptionbudget_status_observed_generation{} 0`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, podDisruptionBudgetResource(), c.opts, c.pdb, c.names...))
		})
	}
}
