package watch

import (
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Generators shared by the resource files: the families every resource
// renders from object metadata, and common shapes (state sets, conditions).

// emitCreated renders the creation time, when set.
func emitCreated[T metav1.Object](o T, e *Emitter) {
	if t := o.GetCreationTimestamp(); !t.IsZero() {
		e.Emit(timestampSeconds(t))
	}
}

// emitDeletionTimestamp renders the deletion time, when set.
func emitDeletionTimestamp[T metav1.Object](o T, e *Emitter) {
	if t := o.GetDeletionTimestamp(); t != nil && !t.IsZero() {
		e.Emit(timestampSeconds(*t))
	}
}

// emitResourceVersion renders the resource version as a number, when it is
// one (the *_metadata_resource_version families).
func emitResourceVersion[T metav1.Object](o T, e *Emitter) {
	if v, ok := resourceVersionFloat(o.GetResourceVersion()); ok {
		e.Emit(v)
	}
}

// emitOwners renders the *_owner families: one series per owner reference
// (owner_kind, owner_name, owner_is_controller), or one series with no
// owner labels for an object without owners, as kube-state-metrics does.
func emitOwners[T metav1.Object](o T, e *Emitter) {
	refs := o.GetOwnerReferences()
	if len(refs) == 0 {
		e.Emit(1, "owner_kind", "", "owner_name", "", "owner_is_controller", "")
		return
	}
	for _, r := range refs {
		controller := r.Controller != nil && *r.Controller
		e.Emit(1, "owner_kind", r.Kind, "owner_name", r.Name, "owner_is_controller", strconv.FormatBool(controller))
	}
}

// countGauge renders one series valued by the number get reads.
func countGauge[T any, N int32 | int64](get func(T) N) func(T, *Emitter) {
	return func(o T, e *Emitter) { e.Emit(float64(get(o))) }
}

// optionalCountGauge renders the number get points to, and nothing when it
// is nil (an unset optional field).
func optionalCountGauge[T any, N int32 | int64](get func(T) *N) func(T, *Emitter) {
	return func(o T, e *Emitter) {
		if p := get(o); p != nil {
			e.Emit(float64(*p))
		}
	}
}

// emitObjectGeneration renders metadata.generation (the
// *_metadata_generation families), zero included.
func emitObjectGeneration[T metav1.Object](o T, e *Emitter) {
	e.Emit(float64(o.GetGeneration()))
}

// mapFamily renders a kube_<resource>_labels or _annotations family:
// nothing without an allowlist, otherwise one series carrying the allowed
// keys (only the identity labels when none of them is set).
func mapFamily[T any](prefix string, get func(T) map[string]string, allow []string) func(T, *Emitter) {
	return func(o T, e *Emitter) {
		if len(allow) == 0 {
			return
		}
		keys, values := allowedLabels(prefix, get(o), allow)
		e.EmitKV(1, keys, values)
	}
}

// objectLabels returns an object's labels; objectAnnotations its
// annotations (for mapFamily).
func objectLabels[T metav1.Object](o T) map[string]string      { return o.GetLabels() }
func objectAnnotations[T metav1.Object](o T) map[string]string { return o.GetAnnotations() }

// emitOneOf renders a state set: one series per state with the state in
// label, 1 for current. An unset current renders nothing.
func emitOneOf[S ~string](e *Emitter, label string, current S, states []S) {
	if current == "" {
		return
	}
	for _, s := range states {
		e.Emit(boolFloat64(s == current), label, string(s))
	}
}

// emitConditionState renders a condition status as a state set over
// true/false/unknown in the given label; kv are the family's other labels.
func emitConditionState(e *Emitter, label string, cs v1.ConditionStatus, kv ...string) {
	n := len(kv)
	kv = append(kv, label, "")
	for _, s := range conditionStatuses {
		kv[n+1] = strings.ToLower(string(s))
		e.Emit(boolFloat64(cs == s), kv...)
	}
}
