package watch

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// leaseResource describes leases: kube-state-metrics' internal/store/lease.go.
// Both families read the spec (holder, renew time), so leases are watched
// whole.
func leaseResource() *Resource {
	return newResource("leases", true, &coordinationv1.Lease{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CoordinationV1().Leases(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CoordinationV1().Leases(ns).Watch(ctx, o)
		},
		// kube-state-metrics' identity for leases is the name alone; each
		// family adds the namespace itself.
		func(l *coordinationv1.Lease, e *Emitter) {
			e.Identity("lease", l.Name)
		},
		leaseFamilies,
	)
}

// leaseFamilies lists the lease families, in kube-state-metrics' order.
func leaseFamilies(FamilyOptions) []Family[*coordinationv1.Lease] {
	return []Family[*coordinationv1.Lease]{
		{
			Name: "kube_lease_owner", Help: "Information about the Lease's owner.",
			Type: Gauge, Stability: Alpha, Generate: leaseOwners,
		},
		{
			Name: "kube_lease_renew_time", Help: "Kube lease renew time.",
			Type: Gauge, Stability: Alpha, Generate: leaseRenewTime,
		},
	}
}

// leaseOwners renders one series per owner reference, or one without owner
// labels for a lease without owners. Unlike the other *_owner families
// (emitOwners) it has no owner_is_controller label, and it carries the
// holder.
func leaseOwners(l *coordinationv1.Lease, e *Emitter) {
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	refs := l.OwnerReferences
	if len(refs) == 0 {
		e.Emit(1, "owner_kind", "", "owner_name", "", "namespace", l.Namespace, "lease_holder", holder)
		return
	}
	for _, r := range refs {
		e.Emit(1, "owner_kind", r.Kind, "owner_name", r.Name, "namespace", l.Namespace, "lease_holder", holder)
	}
}

// leaseRenewTime renders the last renewal in whole seconds, when set.
func leaseRenewTime(l *coordinationv1.Lease, e *Emitter) {
	if t := l.Spec.RenewTime; !t.IsZero() {
		e.Emit(float64(t.Unix()), "namespace", l.Namespace)
	}
}
