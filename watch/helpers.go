package watch

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Shared helpers of the resource files. Each mirrors a rule of
// kube-state-metrics (internal/store/utils.go) exactly, since series must be
// identical to its own.

// Resource units as kube-state-metrics names them in the `unit` label.
const (
	unitByte    = "byte"
	unitCore    = "core"
	unitInteger = "integer"
)

var (
	matchAllCap = regexp.MustCompile("([a-z0-9])([A-Z])")
	// conditionStatuses is the order in which condition state sets are
	// rendered.
	conditionStatuses = []v1.ConditionStatus{v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown}
)

// boolFloat64 is 1 for true and 0 for false.
func boolFloat64(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// emitConditionStatus renders a condition as a state set in the `status`
// label (see emitConditionState); kv are the family's other labels.
func emitConditionStatus(e *Emitter, cs v1.ConditionStatus, kv ...string) {
	emitConditionState(e, "status", cs, kv...)
}

// sanitizeLabelName replaces every character that is invalid in a Prometheus
// label name with an underscore, as kube-state-metrics' regular expression
// [^a-zA-Z0-9_] does (one underscore per character, or per byte of invalid
// UTF-8). It runs at every render of a pod's resources, whose names are
// nearly always valid already: those come back without a copy.
func sanitizeLabelName(s string) string {
	for i := 0; i < len(s); i++ {
		if !labelNameByte(s[i]) {
			return strings.Map(func(r rune) rune {
				if r < utf8.RuneSelf && labelNameByte(byte(r)) {
					return r
				}
				return '_'
			}, s)
		}
	}
	return s
}

// labelNameByte reports whether c may appear in a label name.
func labelNameByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// toSnakeCase turns camelCase into snake_case, as kube-state-metrics does
// for label keys.
func toSnakeCase(s string) string {
	return strings.ToLower(matchAllCap.ReplaceAllString(s, "${1}_${2}"))
}

// quantityFloat converts a quantity to a float, in whole units, keeping
// precision for values too large for milli-units.
func quantityFloat(q *resource.Quantity) float64 {
	if q.Value() > resource.MaxMilliValue {
		return float64(q.Value())
	}
	return float64(q.MilliValue()) / 1000
}

// timestampSeconds returns a time as Unix seconds, as a float.
func timestampSeconds(t metav1.Time) float64 { return float64(t.Unix()) }

func isHugePageResourceName(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

func isAttachableVolumeResourceName(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceAttachableVolumesPrefix)
}

func isNativeResource(name v1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || isPrefixedNativeResource(name)
}

func isPrefixedNativeResource(name v1.ResourceName) bool {
	return strings.Contains(string(name), v1.ResourceDefaultNamespacePrefix)
}

// isExtendedResourceName reports whether a resource name is an extended
// resource (e.g. nvidia.com/gpu), using the same rule as the API server.
func isExtendedResourceName(name v1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// resourceUnit returns the `unit` label kube-state-metrics gives a resource
// list entry (requests, limits, capacity, allocatable), and false for
// resources it does not export. Hugepages, attachable volumes and extended
// resources each follow their own rule; see emitResourceList.
func resourceUnit(name v1.ResourceName) (string, bool) {
	switch name {
	case v1.ResourceCPU:
		return unitCore, true
	case v1.ResourceStorage, v1.ResourceEphemeralStorage, v1.ResourceMemory:
		return unitByte, true
	case v1.ResourcePods:
		return unitInteger, true
	}
	return "", false
}

// resourceVersionFloat parses a resourceVersion as a number, as
// kube-state-metrics' *_metadata_resource_version families do.
func resourceVersionFloat(rv string) (float64, bool) {
	v, err := strconv.ParseFloat(rv, 64)
	return v, err == nil
}

// wildcard is the allowlist entry that selects every key.
const wildcard = "*"

// maxPartialWildcards is how many "*" one allowlist pattern may hold
// (kube-state-metrics' options.MaxPartialWildcardsPerLabel).
const maxPartialWildcards = 1

// allowPatterns caches compiled partial-wildcard patterns; nil marks a
// pattern that was rejected.
var allowPatterns sync.Map

// allowedLabels selects the Kubernetes labels (or annotations) that an
// allowlist names and turns them into Prometheus label names with the given
// prefix ("label" or "annotation"): sanitised, snake_cased, and made unique
// with _conflictN suffixes exactly as kube-state-metrics does. An empty
// allowlist selects nothing; "*" as the first entry selects all but
// kubectl.kubernetes.io/last-applied-configuration, which only its exact
// name selects (onlyByName).
func allowedLabels(prefix string, kube map[string]string, allow []string) (keys, values []string) {
	if len(allow) == 0 {
		return nil, nil
	}
	selected := make(map[string]string)
	for i, l := range allow {
		if l == wildcard {
			if i == 0 {
				if _, ok := kube[onlyByName]; ok {
					kube = maps.Clone(kube)
					delete(kube, onlyByName)
				}
				return mapToPrometheusLabels(prefix, kube)
			}
			continue
		}
		if !strings.Contains(l, wildcard) {
			if v, ok := kube[l]; ok {
				selected[l] = v
			}
			continue
		}
		re := allowPattern(l)
		if re == nil {
			continue
		}
		for k, v := range kube {
			if k != onlyByName && re.MatchString(k) {
				selected[k] = v
			}
		}
	}
	return mapToPrometheusLabels(prefix, selected)
}

// onlyByName is the one key an allowlist selects only by its exact name,
// never by "*" or a pattern: `kubectl apply` copies the whole object into
// it, so that a ConfigMap's data or a Deployment's environment would leave
// through an allowlist meant for a few annotations. (A Secret's never
// leaves, by name or not: secretAnnotations.)
const onlyByName = v1.LastAppliedConfigAnnotation

func allowPattern(p string) *regexp.Regexp {
	if strings.Count(p, wildcard) > maxPartialWildcards {
		return nil
	}
	var b strings.Builder
	for i, lit := range strings.Split(p, wildcard) {
		if i > 0 {
			b.WriteString(".*")
		}
		b.WriteString(regexp.QuoteMeta(lit))
	}
	expanded := "^" + b.String() + "$"
	if v, ok := allowPatterns.Load(expanded); ok {
		re, _ := v.(*regexp.Regexp)
		return re
	}
	re, err := regexp.Compile(expanded)
	if err != nil {
		re = nil
	}
	allowPatterns.Store(expanded, re)
	return re
}

// mapToPrometheusLabels turns a Kubernetes map into label names and values,
// in key order, renaming names that collide after sanitising to
// name_conflict1, name_conflict2, ...
func mapToPrometheusLabels(prefix string, m map[string]string) (keys, values []string) {
	sorted := make([]string, 0, len(m))
	for k := range m {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	keys = make([]string, 0, len(m))
	values = make([]string, 0, len(m))
	used := make(map[string]int, len(m))
	conflicts := make(map[string]int)
	next := func(base string, count *int) string {
		for {
			*count++
			c := base + "_conflict" + strconv.Itoa(*count)
			if _, taken := used[c]; !taken {
				return c
			}
		}
	}
	for _, k := range sorted {
		base := prefix + "_" + toSnakeCase(sanitizeLabelName(k))
		name := base
		if count, seen := conflicts[base]; seen {
			name = next(base, &count)
			conflicts[base] = count
		} else if idx, taken := used[name]; taken {
			count := 0
			renamed := next(base, &count)
			delete(used, name)
			keys[idx] = renamed
			used[renamed] = idx
			name = next(base, &count)
			conflicts[base] = count
		}
		used[name] = len(keys)
		keys = append(keys, name)
		values = append(values, m[k])
	}
	return keys, values
}
