package customresource

import (
	"errors"
	"maps"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
	"github.com/kube-state-push/kube-state-push/watch"
)

// crsLabel prefixes the labels naming the group, version and kind, which
// every series carries (kube-state-metrics' customResourceState).
const crsLabel = "customresource"

// defaultPrefix is the metric name prefix when metricNamePrefix is unset.
const defaultPrefix = "kube_" + crsLabel

var metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// compiledResource is one resource of the document, compiled.
type compiledResource struct {
	// index is the resource's position in spec.resources.
	index int
	// res is the resource as configured.
	res *Resource
	// families are compiled with the configured group, version and kind;
	// forGVK compiles them again for a resolved one.
	families []*family
}

// family is one compiled metric family.
type family struct {
	name, help string
	typ        watch.MetricType
	// common are the constant labels: the resource's, the metric's, and
	// the group, version and kind.
	common labelSet
	// fromPath are the labels from the object, the metric's replacing the
	// resource's.
	fromPath pathLabels
	// each finds the series under the metric's path.
	each each
}

// each is a compiled metric type: it returns the series found at the
// metric's path (v) with their own labels.
type each interface {
	path() path
	values(v any) []eachValue
	// takeErrors returns how many values did not render since the last
	// call.
	takeErrors() int
}

// eachValue is one series before the family's labels are added.
type eachValue struct {
	labels labelSet
	value  float64
}

// compileDocument compiles every resource; errors name the key.
func compileDocument(d *Document) ([]*compiledResource, error) {
	var out []*compiledResource
	var errs []error
	for i := range d.Spec.Resources {
		key := confkey.Index("spec.resources", i)
		r := &d.Spec.Resources[i]
		if r.GroupVersionKind.Group == "" || r.GroupVersionKind.Group == "*" {
			errs = append(errs, errorf(key+".groupVersionKind.group", "group is required in the defined GVK %v", schema.GroupVersionKind(r.GroupVersionKind)))
			continue
		}
		fs, err := compileResource(r, r.GroupVersionKind, key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, &compiledResource{index: i, res: r, families: fs})
	}
	if d.Kind != "" && d.Kind != "CustomResourceStateMetrics" {
		errs = append(errs, errorf("kind", "must be CustomResourceStateMetrics, not %q", d.Kind))
	}
	return out, errors.Join(errs...)
}

// forGVK compiles the resource's families for one resolved group, version
// and kind, which their labels carry.
func (c *compiledResource) forGVK(gvk GroupVersionKind) []*family {
	fs, err := compileResource(c.res, gvk, "")
	if err != nil {
		// Validate compiled the same resource without error.
		panic("customresource: compiling a validated resource: " + err.Error())
	}
	return fs
}

// prefix is the resource's metric name prefix (GetMetricNamePrefix).
func (r *Resource) prefix() string {
	if r.MetricNamePrefix == nil {
		return defaultPrefix
	}
	return *r.MetricNamePrefix
}

func compileResource(r *Resource, gvk GroupVersionKind, key string) ([]*family, error) {
	common := maps.Clone(r.CommonLabels)
	if common == nil {
		common = map[string]string{}
	}
	common[crsLabel+"_group"] = gvk.Group
	common[crsLabel+"_version"] = gvk.Version
	common[crsLabel+"_kind"] = gvk.Kind
	var out []*family
	var errs []error
	for j := range r.Metrics {
		g := &r.Metrics[j]
		mkey := joinKey(key, confkey.Index("metrics", j))
		f, err := compileFamily(g, r, common, mkey)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, f)
	}
	return out, errors.Join(errs...)
}

func compileFamily(g *Generator, r *Resource, common map[string]string, key string) (*family, error) {
	var errs []error
	name := g.Name
	if p := r.prefix(); p != "" {
		name = p + "_" + g.Name
	}
	if g.Name == "" || !metricNameRE.MatchString(name) {
		errs = append(errs, errorf(joinKey(key, "name"), "%q is not a valid metric name", name))
	}
	cl := maps.Clone(common)
	maps.Copy(cl, g.CommonLabels)
	f := &family{name: name, help: g.Help, common: labelSetOf(cl)}
	fromPath := maps.Clone(r.LabelsFromPath)
	if fromPath == nil {
		fromPath = map[string][]string{}
	}
	maps.Copy(fromPath, g.LabelsFromPath)
	var err error
	if f.fromPath, err = compilePaths(fromPath, joinKey(key, "labelsFromPath")); err != nil {
		errs = append(errs, err)
	}
	if f.each, f.typ, err = compileEach(&g.Each, joinKey(key, "each")); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

// compilePaths compiles a labelsFromPath map; key is the map's.
func compilePaths(m map[string][]string, key string) (pathLabels, error) {
	out := make(map[string]path, len(m))
	var errs []error
	for k, v := range m {
		p, err := compilePath(v)
		if err != nil {
			errs = append(errs, errorf(joinKey(key, k), "%v", err))
			continue
		}
		out[k] = p
	}
	return pathLabelsOf(out), errors.Join(errs...)
}

func compileMeta(m *Meta, key string) (path, pathLabels, error) {
	p, err := compilePath(m.Path)
	if err != nil {
		return nil, pathLabels{}, errorf(joinKey(key, "path"), "%v", err)
	}
	lp, err := compilePaths(m.LabelsFromPath, joinKey(key, "labelsFromPath"))
	return p, lp, err
}

// compileEach compiles the metric type that each.type names, with
// kube-state-metrics' messages.
func compileEach(m *Metric, key string) (each, watch.MetricType, error) {
	switch strings.ToLower(m.Type) {
	case "gauge":
		if m.Gauge == nil {
			return nil, 0, errorf(key, "expected each.gauge to not be nil")
		}
		key += ".gauge"
		p, lp, err := compileMeta(&m.Gauge.Meta, key)
		if err != nil {
			return nil, 0, err
		}
		vf, err := compilePath(m.Gauge.ValueFrom)
		if err != nil {
			return nil, 0, errorf(key+".valueFrom", "%v", err)
		}
		g := &gauge{common: common{at: p, fromPath: lp}, valueFrom: vf, nilIsZero: m.Gauge.NilIsZero,
			labelFromKey: m.Gauge.LabelFromKey, constant: m.Gauge.Value, parse: toFloat64}
		switch m.Gauge.ValueType {
		case "":
		case "duration":
			g.parse = durationSeconds
		default:
			return nil, 0, errorf(key+".valueType", "unknown value type %q (known: duration)", m.Gauge.ValueType)
		}
		g.nestedKeys = m.Gauge.LabelsFromKeys
		if len(g.nestedKeys) > 0 && g.labelFromKey != "" {
			return nil, 0, errorf(key+".labelsFromKeys", "labelFromKey and labelsFromKeys are mutually exclusive: set only one")
		}
		if m.Gauge.Value != nil && len(m.Gauge.ValueFrom) > 0 {
			return nil, 0, errorf(key+".value", "a constant value and valueFrom are mutually exclusive: set only one")
		}
		return g, watch.Gauge, nil
	case "info":
		if m.Info == nil {
			return nil, 0, errorf(key, "expected each.info to not be nil")
		}
		p, lp, err := compileMeta(&m.Info.Meta, key+".info")
		if err != nil {
			return nil, 0, err
		}
		return &info{common: common{at: p, fromPath: lp}, labelFromKey: m.Info.LabelFromKey}, watch.Info, nil
	case "stateset":
		if m.StateSet == nil {
			return nil, 0, errorf(key, "expected each.stateSet to not be nil")
		}
		key += ".stateSet"
		p, lp, err := compileMeta(&m.StateSet.Meta, key)
		if err != nil {
			return nil, 0, err
		}
		vf, err := compilePath(m.StateSet.ValueFrom)
		if err != nil {
			return nil, 0, errorf(key+".valueFrom", "%v", err)
		}
		if m.StateSet.LabelName == "" {
			return nil, 0, errorf(key+".labelName", "is required")
		}
		return &stateSet{common: common{at: p, fromPath: lp}, valueFrom: vf, list: m.StateSet.List, labelName: m.StateSet.LabelName}, watch.StateSet, nil
	}
	return nil, 0, errorf(key+".type", "unknown metric type %s", strings.ToLower(m.Type))
}
