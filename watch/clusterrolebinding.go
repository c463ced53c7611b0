package watch

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// clusterRoleBindingResource describes cluster role bindings:
// kube-state-metrics' internal/store/clusterrolebinding.go.
// kube_clusterrolebinding_info reads the role reference, so cluster role
// bindings are watched whole.
func clusterRoleBindingResource() *Resource {
	return newResource("clusterrolebindings", false, &rbacv1.ClusterRoleBinding{},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.RbacV1().ClusterRoleBindings().List(ctx, o)
		},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.RbacV1().ClusterRoleBindings().Watch(ctx, o)
		},
		func(b *rbacv1.ClusterRoleBinding, e *Emitter) {
			e.Identity("clusterrolebinding", b.Name)
		},
		func(o FamilyOptions) []Family[*rbacv1.ClusterRoleBinding] {
			return rbacFamilies("clusterrolebinding", "clusterrolebinding", func(b *rbacv1.ClusterRoleBinding, e *Emitter) {
				emitRoleRef(e, b.RoleRef)
			}, o)
		},
	)
}
