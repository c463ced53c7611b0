package customresource

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
	"github.com/kube-state-push/kube-state-push/watch"
)

// Document is kube-state-metrics' CustomResourceStateMetrics document
// (pkg/customresourcestate/config.go, config_metrics_types.go), field for
// field and with the same YAML keys, so that a document written for
// kube-state-metrics' --custom-resource-state-config(-file) loads unchanged.
// Fields marked "extension" are kube-state-push's own: kube-state-metrics
// has no such keys, so a document written for it never sets them.
type Document struct {
	// Kind is "CustomResourceStateMetrics" in kube-state-metrics' examples;
	// kube-state-metrics ignores it.
	Kind string `yaml:"kind,omitempty"`
	// Spec holds the resources.
	Spec Spec `yaml:"spec"`
}

// Spec lists the custom resources to render.
type Spec struct {
	// Resources are rendered each on its own; a GroupVersionKind listed
	// twice is rendered by its last entry, as kube-state-metrics replaces
	// the store of the earlier one.
	Resources []Resource `yaml:"resources"`
}

// Labels are the labels added to every series of a resource or a metric.
type Labels struct {
	// CommonLabels are constant labels.
	CommonLabels map[string]string `yaml:"commonLabels,omitempty"`
	// LabelsFromPath take their value from a field of the object; a name
	// starting or ending in "*" copies every key of the map at the path
	// (the part before a trailing "*" is the names' prefix).
	LabelsFromPath map[string][]string `yaml:"labelsFromPath,omitempty"`
}

// Resource is one custom resource and its metrics.
type Resource struct {
	// Labels apply to every metric of the resource; a metric's own
	// replace them key by key.
	Labels `yaml:",inline"`
	// MetricNamePrefix prefixes every metric name with "<prefix>_"; nil
	// means "kube_customresource", "" no prefix.
	MetricNamePrefix *string `yaml:"metricNamePrefix,omitempty"`
	// GroupVersionKind selects the resource; version and kind may be "" or
	// "*" for every served one of the group.
	GroupVersionKind GroupVersionKind `yaml:"groupVersionKind"`
	// ResourcePlural is accepted as kube-state-metrics does; like it, the
	// plural is taken from the CRD.
	ResourcePlural string `yaml:"resourcePlural,omitempty"`
	// Metrics are the families rendered from each object.
	Metrics []Generator `yaml:"metrics"`
	// ErrorLogV is kube-state-metrics' log verbosity for render errors;
	// accepted and ignored (render errors are counted, not logged).
	ErrorLogV int32 `yaml:"errorLogV,omitempty"`
	// LabelSelector (extension) restricts the list and watch of the
	// resource to objects matching this Kubernetes label selector.
	LabelSelector string `yaml:"labelSelector,omitempty"`
}

// GroupVersionKind names a custom resource kind.
type GroupVersionKind struct {
	// Group is the API group; required.
	Group string `yaml:"group"`
	// Version is the API version, or "" / "*" for every served one.
	Version string `yaml:"version"`
	// Kind is the kind, or "" / "*" for every kind of the group.
	Kind string `yaml:"kind"`
}

// String is group_version_kind, as kube-state-metrics writes it.
func (g GroupVersionKind) String() string { return g.Group + "_" + g.Version + "_" + g.Kind }

// Generator is one metric family.
type Generator struct {
	// Name is the metric name, after the resource's prefix.
	Name string `yaml:"name"`
	// Help is the family's HELP text.
	Help string `yaml:"help"`
	// Each says how the series are found in an object.
	Each Metric `yaml:"each"`
	// Labels are added to the family's series, replacing the resource's.
	Labels `yaml:",inline"`
	// ErrorLogV is accepted and ignored, as Resource.ErrorLogV.
	ErrorLogV int32 `yaml:"errorLogV,omitempty"`
}

// Metric is a family's type and its settings: exactly the one named by
// Type is used.
type Metric struct {
	// Type is gauge, stateSet or info, in any case.
	Type string `yaml:"type"`
	// Gauge is used when Type is gauge.
	Gauge *Gauge `yaml:"gauge,omitempty"`
	// StateSet is used when Type is stateset.
	StateSet *StateSet `yaml:"stateSet,omitempty"`
	// Info is used when Type is info.
	Info *Info `yaml:"info,omitempty"`
}

// Meta is what every metric type has.
type Meta struct {
	// Path locates the value(s) in the object.
	Path []string `yaml:"path,omitempty"`
	// LabelsFromPath are labels taken from under Path.
	LabelsFromPath map[string][]string `yaml:"labelsFromPath,omitempty"`
}

// Gauge renders numbers: one series for a value, one per element of a list
// or a map at Path.
type Gauge struct {
	Meta `yaml:",inline"`
	// ValueFrom is the path of the number under Path (or each element).
	ValueFrom []string `yaml:"valueFrom,omitempty"`
	// LabelFromKey, for a map at Path, is the label holding each key.
	LabelFromKey string `yaml:"labelFromKey,omitempty"`
	// NilIsZero renders a missing value as 0 instead of nothing.
	NilIsZero bool `yaml:"nilIsZero,omitempty"`
	// Value (extension) is a constant value for every series: ValueFrom is
	// then not read, and the series exist whenever Path resolves.
	Value *float64 `yaml:"value,omitempty"`
	// LabelsFromKeys (extension, kube-state-metrics #2589) walks nested
	// maps at Path, one level per name: each level's key becomes the
	// label of that name, and each value at the last level is a series.
	// Mutually exclusive with LabelFromKey.
	LabelsFromKeys []string `yaml:"labelsFromKeys,omitempty"`
	// ValueType (extension) "duration" parses string values as Go
	// durations ("2160h", "1m30s") into seconds; "" is kube-state-metrics'
	// parsing.
	ValueType string `yaml:"valueType,omitempty"`
}

// StateSet renders one series per entry of List, 1 for the entry equal to
// the string at ValueFrom and 0 for the others.
type StateSet struct {
	Meta `yaml:",inline"`
	// List are the states.
	List []string `yaml:"list"`
	// LabelName is the label holding the state.
	LabelName string `yaml:"labelName"`
	// ValueFrom is the path of the state under Path.
	ValueFrom []string `yaml:"valueFrom,omitempty"`
}

// Info renders series of value 1 carrying labels.
type Info struct {
	Meta `yaml:",inline"`
	// LabelFromKey, for a map at Path, is the label holding each key.
	LabelFromKey string `yaml:"labelFromKey,omitempty"`
}

// Config is the custom_resource_state key: the document inline, or the path
// of a file holding it (relative to the configuration file).
type Config struct {
	// File is the path of the document when it is not inline.
	File string
	// Doc is the document, read from File when set.
	Doc Document

	// node is the document as parsed, for unknown keys and their lines.
	node *yaml.Node
	// dir is the directory a relative File is read from.
	dir string
	// compiled is set by Validate.
	compiled []*compiledResource
	// countErrors receives the values that did not render (CountErrors).
	countErrors func(resource string, n int)
}

// UnmarshalYAML takes a string (the path of a file) or a mapping (the
// document).
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	*c = Config{}
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return n.Decode(&c.File)
	}
	c.node = n
	return n.Decode(&c.Doc)
}

// MarshalYAML writes the path when the document came from a file, else the
// document.
func (c Config) MarshalYAML() (any, error) {
	if c.File != "" {
		return c.File, nil
	}
	return c.Doc, nil
}

// SetDirectory makes a relative File relative to dir.
func (c *Config) SetDirectory(dir string) { c.dir = dir }

// path returns the file to read.
func (c *Config) path() string {
	if filepath.IsAbs(c.File) || c.dir == "" {
		return c.File
	}
	return filepath.Join(c.dir, c.File)
}

// Validate reads the file if there is one, refuses unknown keys and
// compiles every resource as kube-state-metrics does, with its messages.
// Keys in errors are relative to the document; for a file, the error is
// about the key itself and names the file, line and path in the document.
func (c *Config) Validate() error {
	if c.File != "" {
		data, err := os.ReadFile(c.path())
		if err != nil {
			return fmt.Errorf("reading the custom resource state document: %w", err)
		}
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			return fmt.Errorf("%s: %s", c.File, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		c.node, c.Doc = &root, Document{}
		if err := root.Decode(&c.Doc); err != nil {
			return fmt.Errorf("%s: %s", c.File, strings.TrimPrefix(err.Error(), "yaml: "))
		}
	}
	errs := unknownKeys(c.node, &c.Doc)
	var err error
	c.compiled, err = compileDocument(&c.Doc)
	if err != nil {
		errs = append(errs, flatten(err)...)
	}
	if len(errs) == 0 {
		return nil
	}
	if c.File == "" {
		return errors.Join(errs...)
	}
	// The keys are in another file: name it, with the line.
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		var ke *confkey.Error
		if errors.As(e, &ke) {
			out = append(out, fmt.Errorf("%s:%d: %s: %w", c.File, confkey.Line(c.node, ke.Key), ke.Key, ke.Err))
			continue
		}
		out = append(out, fmt.Errorf("%s: %w", c.File, e))
	}
	return errors.Join(out...)
}

// Families lists every family the document renders, for metadata and the
// metric allowlist: names, help and types are known without the CRDs.
// Call it after Validate.
func (c *Config) Families() []watch.FamilyInfo {
	var out []watch.FamilyInfo
	seen := map[string]bool{}
	for _, r := range c.compiled {
		for _, f := range r.families {
			if !seen[f.name] {
				seen[f.name] = true
				out = append(out, watch.FamilyInfo{Name: f.name, Help: f.help, Type: f.typ})
			}
		}
	}
	return out
}

// flatten returns the errors a joined error holds.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// errorf is a key error: what confkey.Errorf makes, typed for callers.
func errorf(key, format string, args ...any) error {
	return &confkey.Error{Key: key, Err: fmt.Errorf(format, args...)}
}
