package testenv

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// configFinalizer keeps a deleted fixture object in place, with its
// deletion timestamp set, since no controller removes it.
const configFinalizer = "fixtures.kube-state-push.invalid/hold"

// FixturesConfig creates objects that exercise every family of the
// configuration and access-control resources in namespace ns: service
// accounts (token automount on, off and unset, secrets, image pull secrets,
// one being deleted), leases (held with owners, free), roles, cluster roles
// and their bindings, limit ranges and resource quotas (with status written,
// and one without). Cluster roles and cluster role bindings are
// cluster-scoped, so their names start with ns.
//
// Limit ranges and quotas act on every object of the namespace, so they are
// made harmless to the fixtures of other resources: the limit range that
// carries every constraint applies to a made-up limit type, and the quotas
// either count only leases or apply only to pods of a priority class that
// does not exist. Quotas are created last, once the leases they count exist.
//
// Only the service account deletion time depends on the clock.
func FixturesConfig(ctx context.Context, c kubernetes.Interface, ns string) error {
	for _, step := range []func(context.Context, kubernetes.Interface, string) error{
		createConfigServiceAccounts,
		createConfigLeases,
		createConfigRBAC,
		createConfigLimitRanges,
		createConfigResourceQuotas,
	} {
		if err := step(ctx, c, ns); err != nil {
			return err
		}
	}
	return nil
}

func createConfigServiceAccounts(ctx context.Context, c kubernetes.Interface, ns string) error {
	sas := c.CoreV1().ServiceAccounts(ns)
	full := &v1.ServiceAccount{
		ObjectMeta:                   configMeta(ns, "sa-full"),
		AutomountServiceAccountToken: new(true),
		Secrets:                      []v1.ObjectReference{{Name: "sa-full-token"}, {Name: "sa-full-extra"}},
		ImagePullSecrets:             []v1.LocalObjectReference{{Name: "registry"}, {Name: "mirror"}},
	}
	deleting := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa-deleting", Namespace: ns, Finalizers: []string{configFinalizer}}}
	err := createConfigObjects(ctx, sas.Create,
		full,
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa-no-automount", Namespace: ns}, AutomountServiceAccountToken: new(false)},
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa-plain", Namespace: ns}},
		deleting,
	)
	if err != nil {
		return err
	}
	if err := sas.Delete(ctx, deleting.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting service account %s/%s: %w", ns, deleting.Name, err)
	}
	return nil
}

func createConfigLeases(ctx context.Context, c kubernetes.Interface, ns string) error {
	held := &coordinationv1.Lease{
		ObjectMeta: configMeta(ns, "lease-held"),
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       new(ns + "-node-a"),
			LeaseDurationSeconds: new(int32(40)),
			AcquireTime:          &metav1.MicroTime{Time: time.Unix(1700000000, 0)},
			// A fraction of a second, which the families drop.
			RenewTime:        &metav1.MicroTime{Time: time.Unix(1700000030, 500000000)},
			LeaseTransitions: new(int32(2)),
		},
	}
	held.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: ns + "-node-a", UID: "7f3c1c53-0000-4000-8000-000000000001"}}
	shared := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "lease-shared", Namespace: ns, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Pod", Name: "leader", UID: "7f3c1c53-0000-4000-8000-000000000002", Controller: new(true)},
			{APIVersion: "v1", Kind: "ConfigMap", Name: "election", UID: "7f3c1c53-0000-4000-8000-000000000003"},
		}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: new("leader_1"), RenewTime: &metav1.MicroTime{Time: time.Unix(1700000100, 0)}},
	}
	free := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "lease-free", Namespace: ns}}
	return createConfigObjects(ctx, c.CoordinationV1().Leases(ns).Create, held, shared, free)
}

func createConfigRBAC(ctx context.Context, c kubernetes.Interface, ns string) error {
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
	}
	reader := &rbacv1.ClusterRole{ObjectMeta: configMeta("", ns+"-reader"), Rules: rules}
	aggregate := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-aggregate"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"fixtures.kube-state-push.invalid/aggregate-to": ns}},
		}},
	}
	if err := createConfigObjects(ctx, c.RbacV1().ClusterRoles().Create, reader, aggregate); err != nil {
		return err
	}
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "sa-full", Namespace: ns}
	err := createConfigObjects(ctx, c.RbacV1().ClusterRoleBindings().Create,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: configMeta("", ns+"-reader"),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
			Subjects:   []rbacv1.Subject{sa, {Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "auditors"}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-aggregate"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: aggregate.Name},
		},
	)
	if err != nil {
		return err
	}
	role := &rbacv1.Role{ObjectMeta: configMeta(ns, "reader"), Rules: rules}
	empty := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: ns}}
	if err := createConfigObjects(ctx, c.RbacV1().Roles(ns).Create, role, empty); err != nil {
		return err
	}
	return createConfigObjects(ctx, c.RbacV1().RoleBindings(ns).Create,
		&rbacv1.RoleBinding{
			ObjectMeta: configMeta(ns, "reader"),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   []rbacv1.Subject{sa},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-reader", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "jane"}},
		},
	)
}

func createConfigLimitRanges(ctx context.Context, c kubernetes.Interface, ns string) error {
	// The made-up type lets one limit carry every constraint without
	// defaulting or rejecting the containers of other fixtures.
	every := v1.LimitRangeItem{
		Type:                 "fixtures.kube-state-push.invalid/widget",
		Min:                  configResources("cpu", "10m", "memory", "64Mi"),
		Max:                  configResources("cpu", "2", "memory", "1Gi"),
		Default:              configResources("cpu", "500m", "memory", "512Mi"),
		DefaultRequest:       configResources("cpu", "250m", "memory", "256Mi"),
		MaxLimitRequestRatio: configResources("cpu", "1.5", "memory", "2"),
	}
	// Wide enough for any claim another fixture makes.
	claims := v1.LimitRangeItem{
		Type: v1.LimitTypePersistentVolumeClaim,
		Min:  configResources("storage", "1Ki"),
		Max:  configResources("storage", "1Pi"),
	}
	return createConfigObjects(ctx, c.CoreV1().LimitRanges(ns).Create,
		&v1.LimitRange{ObjectMeta: configMeta(ns, "limits"), Spec: v1.LimitRangeSpec{Limits: []v1.LimitRangeItem{every, claims}}},
		&v1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "no-limits", Namespace: ns}},
	)
}

func createConfigResourceQuotas(ctx context.Context, c kubernetes.Interface, ns string) error {
	// No pod has this priority class, so the quotas scoped to it never
	// reject or count a pod of another fixture.
	unused := &v1.ScopeSelector{MatchExpressions: []v1.ScopedResourceSelectorRequirement{{
		ScopeName: v1.ResourceQuotaScopePriorityClass, Operator: v1.ScopeSelectorOpIn, Values: []string{ns + "-unused"},
	}}}
	quotas := []struct {
		quota *v1.ResourceQuota
		// used is the status' usage; nil leaves the status unwritten, as
		// before the quota controller's first pass.
		used v1.ResourceList
	}{
		{
			quota: &v1.ResourceQuota{ObjectMeta: configMeta(ns, "compute"), Spec: v1.ResourceQuotaSpec{
				Hard:          configResources("cpu", "4.3", "memory", "2.1G", "pods", "9", "requests.memory", "1Gi"),
				ScopeSelector: unused,
			}},
			used: configResources("cpu", "2.1", "memory", "500M", "pods", "8", "requests.memory", "0"),
		},
		{
			// Counts the leases created above: nothing else makes leases.
			quota: &v1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "objects", Namespace: ns}, Spec: v1.ResourceQuotaSpec{
				Hard: configResources("count/leases.coordination.k8s.io", "10"),
			}},
			used: configResources("count/leases.coordination.k8s.io", "3"),
		},
		{
			quota: &v1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: ns}, Spec: v1.ResourceQuotaSpec{
				Hard:          configResources("pods", "1"),
				ScopeSelector: unused,
			}},
		},
	}
	rqs := c.CoreV1().ResourceQuotas(ns)
	for _, q := range quotas {
		created, err := rqs.Create(ctx, q.quota, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating resource quota %s/%s: %w", ns, q.quota.Name, err)
		}
		if q.used == nil {
			continue
		}
		created.Status = v1.ResourceQuotaStatus{Hard: created.Spec.Hard, Used: q.used}
		if _, err := rqs.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("writing status of resource quota %s/%s: %w", ns, q.quota.Name, err)
		}
	}
	return nil
}

// createConfigObjects creates each object with create, naming the failing
// one in the error.
func createConfigObjects[T metav1.Object](ctx context.Context, create func(context.Context, T, metav1.CreateOptions) (T, error), objs ...T) error {
	for _, o := range objs {
		if _, err := create(ctx, o, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, configName(o), err)
		}
	}
	return nil
}

func configName(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// configMeta is the metadata of the fully described objects: labels and
// annotations for the _labels and _annotations families (ns is "" for
// cluster-scoped objects).
func configMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: ns,
		Labels:      map[string]string{"app.kubernetes.io/name": name, "team": "platform"},
		Annotations: map[string]string{"fixtures.kube-state-push.invalid/note": "config", "owner": "sre"},
	}
}

// configResources builds a resource list from name, quantity pairs.
func configResources(kv ...string) v1.ResourceList {
	rl := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		rl[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return rl
}
