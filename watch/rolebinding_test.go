package watch

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// testRoleRef is the role reference of kube-state-metrics' binding tests.
var testRoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "role"}

func TestRoleBindingFamilies(t *testing.T) {
	type B = *rbacv1.RoleBinding
	runRBACCases(t, roleBindingResource, []rbacCase[B]{
		{name: "allowlists", opts: rbacAllowlists, obj: &rbacv1.RoleBinding{ObjectMeta: rbacMeta("rolebinding1", "ns1"), RoleRef: testRoleRef},
			names: []string{"kube_rolebinding_annotations", "kube_rolebinding_labels", "kube_rolebinding_info", "kube_rolebinding_metadata_resource_version"},
			want: `
			kube_rolebinding_annotations{annotation_app_k8s_io_owner="@foo",namespace="ns1",rolebinding="rolebinding1"} 1
			kube_rolebinding_labels{label_app="mysql-server",namespace="ns1",rolebinding="rolebinding1"} 1
			kube_rolebinding_info{namespace="ns1",rolebinding="rolebinding1",roleref_kind="Role",roleref_name="role"} 1`},
		{name: "created", obj: &rbacv1.RoleBinding{ObjectMeta: rbacCreatedMeta("rolebinding2", "ns2"), RoleRef: testRoleRef},
			want: `
			kube_rolebinding_info{namespace="ns2",rolebinding="rolebinding2",roleref_kind="Role",roleref_name="role"} 1
			kube_rolebinding_created{namespace="ns2",rolebinding="rolebinding2"} 1.501569018e+09
			kube_rolebinding_metadata_resource_version{namespace="ns2",rolebinding="rolebinding2"} 10596`},
		{name: "cluster role reference",
			obj:   &rbacv1.RoleBinding{ObjectMeta: rbacCreatedMeta("rb", "ns"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}},
			names: []string{"kube_rolebinding_info"},
			want:  `kube_rolebinding_info{namespace="ns",rolebinding="rb",roleref_kind="ClusterRole",roleref_name="view"} 1`},
		{name: "malformed", opts: rbacAll, obj: &rbacv1.RoleBinding{ObjectMeta: rbacMalformed},
			want: `
			kube_rolebinding_annotations{} 1
			kube_rolebinding_labels{} 1
			kube_rolebinding_info{} 1`},
	})
}
