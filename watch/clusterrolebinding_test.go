package watch

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestClusterRoleBindingFamilies(t *testing.T) {
	type B = *rbacv1.ClusterRoleBinding
	runRBACCases(t, clusterRoleBindingResource, []rbacCase[B]{
		{name: "allowlists", opts: rbacAllowlists, obj: &rbacv1.ClusterRoleBinding{ObjectMeta: rbacMeta("clusterrolebinding1", ""), RoleRef: testRoleRef},
			names: []string{"kube_clusterrolebinding_annotations", "kube_clusterrolebinding_labels", "kube_clusterrolebinding_info", "kube_clusterrolebinding_metadata_resource_version"},
			want: `
			kube_clusterrolebinding_annotations{annotation_app_k8s_io_owner="@foo",clusterrolebinding="clusterrolebinding1"} 1
			kube_clusterrolebinding_labels{clusterrolebinding="clusterrolebinding1",label_app="mysql-server"} 1
			kube_clusterrolebinding_info{clusterrolebinding="clusterrolebinding1",roleref_kind="Role",roleref_name="role"} 1`},
		{name: "created", obj: &rbacv1.ClusterRoleBinding{ObjectMeta: rbacCreatedMeta("clusterrolebinding2", ""), RoleRef: testRoleRef},
			want: `
			kube_clusterrolebinding_info{clusterrolebinding="clusterrolebinding2",roleref_kind="Role",roleref_name="role"} 1
			kube_clusterrolebinding_created{clusterrolebinding="clusterrolebinding2"} 1.501569018e+09
			kube_clusterrolebinding_metadata_resource_version{clusterrolebinding="clusterrolebinding2"} 10596`},
		{name: "malformed", opts: rbacAll, obj: &rbacv1.ClusterRoleBinding{ObjectMeta: rbacMalformed},
			want: `
			kube_clusterrolebinding_annotations{} 1
			kube_clusterrolebinding_labels{} 1
			kube_clusterrolebinding_info{} 1`},
	})
}
