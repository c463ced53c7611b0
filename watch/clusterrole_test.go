package watch

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClusterRoleFamilies(t *testing.T) {
	type M = *metav1.PartialObjectMetadata
	runRBACCases(t, clusterRoleResource, []rbacCase[M]{
		{name: "allowlists", opts: rbacAllowlists, obj: &metav1.PartialObjectMetadata{ObjectMeta: rbacMeta("role1", "")},
			names: []string{"kube_clusterrole_annotations", "kube_clusterrole_labels", "kube_clusterrole_info", "kube_clusterrole_metadata_resource_version"},
			want: `
			kube_clusterrole_annotations{annotation_app_k8s_io_owner="@foo",clusterrole="role1"} 1
			kube_clusterrole_labels{clusterrole="role1",label_app="mysql-server"} 1
			kube_clusterrole_info{clusterrole="role1"} 1`},
		{name: "created", obj: &metav1.PartialObjectMetadata{ObjectMeta: rbacCreatedMeta("role2", "")},
			want: `
			kube_clusterrole_info{clusterrole="role2"} 1
			kube_clusterrole_created{clusterrole="role2"} 1.501569018e+09
			kube_clusterrole_metadata_resource_version{clusterrole="role2"} 10596`},
		{name: "malformed", opts: rbacAll, obj: &metav1.PartialObjectMetadata{ObjectMeta: rbacMalformed},
			want: `
			kube_clusterrole_annotations{} 1
			kube_clusterrole_labels{} 1
			kube_clusterrole_info{} 1`},
	})
}
