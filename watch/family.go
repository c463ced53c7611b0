package watch

// MetricType is the OpenMetrics type of a family, as kube-state-metrics
// declares it.
type MetricType uint8

// The metric types kube-state-metrics uses.
const (
	Gauge MetricType = iota
	Counter
	Info
	StateSet
)

// String returns the type's OpenMetrics name.
func (t MetricType) String() string {
	switch t {
	case Counter:
		return "counter"
	case Info:
		return "info"
	case StateSet:
		return "stateset"
	default:
		return "gauge"
	}
}

// Stability is a family's stability level, as kube-state-metrics declares it.
type Stability uint8

// The stability levels kube-state-metrics uses.
const (
	Alpha Stability = iota
	Stable
)

// String returns the level as kube-state-metrics prints it in HELP text.
func (s Stability) String() string {
	if s == Stable {
		return "STABLE"
	}
	return "ALPHA"
}

// Family describes one metric family of objects of type T.
type Family[T any] struct {
	// Name is the metric name, e.g. kube_pod_info.
	Name string
	// Help is the HELP text, without the stability prefix.
	Help string
	// Type is the family's metric type.
	Type MetricType
	// Stability is the family's stability level.
	Stability Stability
	// OptIn families are rendered only when the configuration names them.
	OptIn bool
	// IdentityLabels, when positive, keeps only the first IdentityLabels of
	// the object's identity labels on the family's series: a v1 family
	// lacks those v2 added (a pod's uid).
	IdentityLabels int
	// Generate renders the family's series for one object. It must not keep
	// obj or e after it returns.
	Generate func(obj T, e *Emitter)
}

// FamilyInfo is what is known of a family without an object: used for
// metadata, filtering and documentation.
type FamilyInfo struct {
	// Name is the metric name.
	Name string
	// Help is the HELP text, without the stability prefix.
	Help string
	// Type is the family's metric type.
	Type MetricType
	// Stability is the family's stability level.
	Stability Stability
	// OptIn is true for families rendered only when asked for.
	OptIn bool
}

// HelpText is the family's HELP as kube-state-metrics prints it, with the
// "[STABLE] " prefix on stable families.
func (f FamilyInfo) HelpText() string {
	if f.Stability == Stable {
		return "[STABLE] " + f.Help
	}
	return f.Help
}

// Info returns the family's description.
func (f Family[T]) Info() FamilyInfo {
	return FamilyInfo{Name: f.Name, Help: f.Help, Type: f.Type, Stability: f.Stability, OptIn: f.OptIn}
}

// FamilyOptions configure the families of one resource.
type FamilyOptions struct {
	// LabelsAllowlist lists the Kubernetes label keys that the resource's
	// kube_<resource>_labels family exports ("*" first means all). Empty
	// means the family emits nothing, as in kube-state-metrics.
	LabelsAllowlist []string
	// AnnotationsAllowlist is the same for kube_<resource>_annotations.
	AnnotationsAllowlist []string
	// LegacyV1 names the kube-state-metrics v1.9.8 families to render as
	// well ("*" for all); see LegacyV1Families. Empty: none.
	LegacyV1 []string
	// SeriesLabels lists the Kubernetes label keys whose values every
	// series of an object carries (objectlabels.go). Empty: none.
	SeriesLabels []string
}
