package watch

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// roleBindingResource describes role bindings: kube-state-metrics'
// internal/store/rolebinding.go. kube_rolebinding_info reads the role
// reference, so role bindings are watched whole.
func roleBindingResource() *Resource {
	return newResource("rolebindings", true, &rbacv1.RoleBinding{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.RbacV1().RoleBindings(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.RbacV1().RoleBindings(ns).Watch(ctx, o)
		},
		func(b *rbacv1.RoleBinding, e *Emitter) {
			e.Identity("namespace", b.Namespace, "rolebinding", b.Name)
		},
		func(o FamilyOptions) []Family[*rbacv1.RoleBinding] {
			return rbacFamilies("rolebinding", "rolebinding", func(b *rbacv1.RoleBinding, e *Emitter) {
				emitRoleRef(e, b.RoleRef)
			}, o)
		},
	)
}

// emitRoleRef renders the _info series of role and cluster role bindings:
// the kind and name of the bound role.
func emitRoleRef(e *Emitter, r rbacv1.RoleRef) {
	e.Emit(1, "roleref_kind", r.Kind, "roleref_name", r.Name)
}
