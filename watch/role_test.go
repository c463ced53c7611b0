package watch

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rbacCase is a golden case of the role and binding tests.
type rbacCase[T any] struct {
	name  string
	opts  FamilyOptions
	obj   T
	names []string
	want  string
}

// runRBACCases renders each case with r and compares it with its lines.
func runRBACCases[T any](t *testing.T, r func() *Resource, cases []rbacCase[T]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, r(), c.opts, c.obj, c.names...))
		})
	}
}

// rbacAllowlists are the allowlists of kube-state-metrics' RBAC tests.
var rbacAllowlists = FamilyOptions{AnnotationsAllowlist: []string{"app.k8s.io/owner"}, LabelsAllowlist: []string{"app"}}

// rbacMeta is the metadata of the first object of kube-state-metrics' RBAC
// tests: a non-numeric resource version, and labels and annotations of
// which the allowlists select one each.
func rbacMeta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: namespace, UID: "u1", ResourceVersion: "BBBBB",
		Annotations: map[string]string{"app": "mysql-server", "app.k8s.io/owner": "@foo"},
		Labels:      map[string]string{"excluded": "me", "app": "mysql-server"},
	}
}

// rbacCreatedMeta is the metadata of the second object: a creation time and
// a numeric resource version.
func rbacCreatedMeta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: namespace, UID: "u2", ResourceVersion: "10596",
		CreationTimestamp: metav1.NewTime(time.Unix(1501569018, 0)),
	}
}

// rbacMalformed is metadata with nothing but a UID.
var rbacMalformed = metav1.ObjectMeta{UID: "u"}

// rbacAll are allowlists selecting every key.
var rbacAll = FamilyOptions{AnnotationsAllowlist: []string{"*"}, LabelsAllowlist: []string{"*"}}

func TestRoleFamilies(t *testing.T) {
	type M = *metav1.PartialObjectMetadata
	runRBACCases(t, roleResource, []rbacCase[M]{
		{name: "allowlists", opts: rbacAllowlists, obj: &metav1.PartialObjectMetadata{ObjectMeta: rbacMeta("role1", "ns1")},
			names: []string{"kube_role_annotations", "kube_role_labels", "kube_role_info", "kube_role_metadata_resource_version"},
			want: `
			kube_role_annotations{annotation_app_k8s_io_owner="@foo",namespace="ns1",role="role1"} 1
			kube_role_labels{label_app="mysql-server",namespace="ns1",role="role1"} 1
			kube_role_info{namespace="ns1",role="role1"} 1`},
		{name: "created", obj: &metav1.PartialObjectMetadata{ObjectMeta: rbacCreatedMeta("role2", "ns2")},
			want: `
			kube_role_info{namespace="ns2",role="role2"} 1
			kube_role_created{namespace="ns2",role="role2"} 1.501569018e+09
			kube_role_metadata_resource_version{namespace="ns2",role="role2"} 10596`},
		{name: "malformed", opts: rbacAll, obj: &metav1.PartialObjectMetadata{ObjectMeta: rbacMalformed},
			want: `
			kube_role_annotations{} 1
			kube_role_labels{} 1
			kube_role_info{} 1`},
	})
}
