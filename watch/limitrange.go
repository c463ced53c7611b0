package watch

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// limitRangeResource describes limit ranges: kube-state-metrics'
// internal/store/limitrange.go. kube_limitrange reads the spec, so limit
// ranges are watched whole.
func limitRangeResource() *Resource {
	return newResource("limitranges", true, &v1.LimitRange{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CoreV1().LimitRanges(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CoreV1().LimitRanges(ns).Watch(ctx, o)
		},
		func(r *v1.LimitRange, e *Emitter) {
			e.Identity("namespace", r.Namespace, "limitrange", r.Name)
		},
		limitRangeFamilies,
	)
}

// limitRangeFamilies lists the limit range families, in kube-state-metrics'
// order. It has no _labels or _annotations family.
func limitRangeFamilies(FamilyOptions) []Family[*v1.LimitRange] {
	return []Family[*v1.LimitRange]{
		{
			Name: "kube_limitrange", Help: "Information about limit range.",
			Type: Gauge, Stability: Stable, Generate: limitRangeLimits,
		},
		{
			Name: "kube_limitrange_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[*v1.LimitRange],
		},
	}
}

// limitRangeLimits renders every constraint of every limit: one series per
// resource, with the limit's type and the constraint's name as
// kube-state-metrics spells it (camelCase, e.g. defaultRequest).
func limitRangeLimits(r *v1.LimitRange, e *Emitter) {
	for i := range r.Spec.Limits {
		l := &r.Spec.Limits[i]
		typ := string(l.Type)
		for _, c := range []struct {
			name string
			rl   v1.ResourceList
		}{
			{"min", l.Min},
			{"max", l.Max},
			{"default", l.Default},
			{"defaultRequest", l.DefaultRequest},
			{"maxLimitRequestRatio", l.MaxLimitRequestRatio},
		} {
			emitQuantities(e, c.rl, "type", typ, "constraint", c.name)
		}
	}
}
