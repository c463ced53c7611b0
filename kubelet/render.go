package kubelet

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/kube-state-push/kube-state-push/encode"
)

// target is what a read's series depend on besides the body.
type target struct {
	// path is the path read, with its filters.
	path *PathConfig
	// cfg holds the limits and the family prefixes.
	cfg *Config
	// owned are the labels the agent sets: job, metrics_path, node,
	// instance and the external labels. They win over the body's: a body
	// label of such a name moves to exported_<name>, as Prometheus does
	// without honor_labels, unless its value is the same (the kubelet's
	// own kubelet_node_name{node} keeps its label).
	owned []encode.Label
	// honored are target_labels, added to a series that has no label of
	// the name in the body, as Prometheus does with honor_labels (which
	// kube-prometheus-stack's kubelet endpoints set): a label the body
	// gives, even empty, wins, so the node total id="/", which cAdvisor
	// writes with namespace="", gets no namespace label, and a container's
	// namespace is its pod's.
	honored []encode.Label
	// minT and maxT bound the sample timestamps kept, in milliseconds.
	minT, maxT int64
}

// ownedValue returns the value of the owned label name.
func (t *target) ownedValue(name string) (string, bool) {
	for _, l := range t.owned {
		if l.Name == name {
			return l.Value, true
		}
	}
	return "", false
}

// Why the samples dropped_samples_total counts were dropped.
const (
	// DropFamily is a metric whose name starts with none of
	// family_prefixes: not the kubelet's.
	DropFamily = "family"
	// DropKube is a kube_ series: the agent's own state series, which a
	// kubelet body may not forge.
	DropKube = "kube_prefix"
	// DropTooOld and DropTooNew are samples whose timestamp is outside
	// max_sample_age or max_sample_future of the read.
	DropTooOld = "too_old"
	DropTooNew = "too_new"
)

// Indexes of renderCounts.dropped, in the order of dropReasons.
const (
	dropFamily = iota
	dropKube
	dropTooOld
	dropTooNew
	numDrops
)

// dropReasons are the reasons of dropped_samples_total by index.
var dropReasons = [numDrops]string{DropFamily, DropKube, DropTooOld, DropTooNew}

// renderCounts are the samples of a body that were not kept, by why.
type renderCounts struct {
	// filtered are the samples the path's lists and the empty-container
	// drop left out.
	filtered int
	// dropped are the samples dropped as not the kubelet's to give.
	dropped [numDrops]int
}

// renderer turns exposition bodies into series sets. It keeps scratch
// space between calls and is not safe for concurrent use.
type renderer struct {
	// b builds each series' labels.
	b encode.LabelsBuilder
	// st interns label strings across the parser's calls.
	st *labels.SymbolTable
	// lbls is the parser's scratch label set.
	lbls labels.Labels
	// set is the scratch set each render fills; callers keep a copy made
	// by compact, which stores the labels its series share (a container's,
	// a pod's) once.
	set     encode.SeriesSet
	compact encode.Compactor
	// lastName and lastDrop cache the family check of the last metric
	// name (valid when haveLast): a family's series come one after the
	// other.
	lastName string
	lastDrop int
	haveLast bool
}

func newRenderer() *renderer {
	return &renderer{st: labels.NewSymbolTable()}
}

// ErrParse is wrapped by render's errors about a body that is not valid
// Prometheus text.
var ErrParse = errors.New("parsing kubelet metrics")

// ErrSampleLimit and ErrLabelLimit are wrapped by render's errors about a
// body that breaks sample_limit, or label_limit,
// label_name_length_limit or label_value_length_limit: the whole read
// fails, as a scrape does in Prometheus.
var (
	ErrSampleLimit = errors.New("sample_limit exceeded")
	ErrLabelLimit  = errors.New("label limit exceeded")
)

// render parses body (Prometheus text format 0.0.4, which the kubelet
// serves) and returns the series kept, each with its own timestamp (def,
// in milliseconds, for a sample without one), and the samples not kept.
// On error the set is empty: no part of a body that fails is kept. The
// set does not alias body, but is the renderer's scratch space, valid
// until the next render: keep a Clone.
func (r *renderer) render(body []byte, t *target, def int64) (*encode.SeriesSet, renderCounts, error) {
	set := &r.set
	set.Reset()
	if set.Timestamps == nil {
		set.Timestamps = []int64{}
	}
	r.b.SetExternal(nil) // the external labels are owned: t.owned has them
	r.haveLast = false
	p := textparse.NewPromParser(body, r.st, false)
	var c renderCounts
	fail := func(err error) (*encode.SeriesSet, renderCounts, error) {
		set.Reset()
		return set, c, err
	}
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(fmt.Errorf("%w: %w", ErrParse, err))
		}
		if e != textparse.EntrySeries {
			continue
		}
		_, ts, v := p.Series()
		p.Labels(&r.lbls)
		name := r.lbls.Get(model.MetricNameLabel)
		if d := r.familyDrop(name, t.cfg.FamilyPrefixes); d >= 0 {
			c.dropped[d]++
			continue
		}
		if !t.path.selected(name) || !t.path.KeepEmptyContainer && t.path.Path == PathCadvisor && emptyDuplicate(name, &r.lbls) {
			c.filtered++
			continue
		}
		at := def
		if ts != nil {
			at = *ts
		}
		switch {
		case at < t.minT:
			c.dropped[dropTooOld]++
			continue
		case at > t.maxT:
			c.dropped[dropTooNew]++
			continue
		}
		if err := r.labels(t, name); err != nil {
			return fail(err)
		}
		if t.cfg.SampleLimit > 0 && set.Len() >= t.cfg.SampleLimit {
			return fail(fmt.Errorf("%w: more than %d samples", ErrSampleLimit, t.cfg.SampleLimit))
		}
		r.b.AppendTo(set, v)
		set.Timestamps = append(set.Timestamps, at)
	}
	return set, c, nil
}

// familyDrop returns the drop index of a metric name that is not the
// kubelet's to give, or -1.
func (r *renderer) familyDrop(name string, prefixes []string) int {
	if r.haveLast && name == r.lastName {
		return r.lastDrop
	}
	d := dropFamily
	switch {
	case strings.HasPrefix(name, kubePrefix):
		d = dropKube
	default:
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				d = -1
				break
			}
		}
	}
	r.lastName, r.lastDrop, r.haveLast = name, d, true
	return d
}

// labels fills the builder with the labels of the series the parser is
// at: the owned labels, the body's (moved to exported_<name> where they
// clash with an owned one), and the honored ones the body lacks. It
// checks the label limits on the whole set, as Prometheus does after
// adding the target labels.
func (r *renderer) labels(t *target, metric string) error {
	r.b.Reset()
	n := 0
	var err error
	add := func(name, value string) {
		if value == "" {
			return // the builder leaves it out
		}
		r.b.Add(name, value)
		n++
		if err == nil {
			err = t.cfg.checkLabel(metric, name, value)
		}
	}
	for _, l := range t.owned {
		add(l.Name, l.Value)
	}
	r.lbls.Range(func(l labels.Label) {
		name := l.Name
		if v, ok := t.ownedValue(name); ok && l.Value != "" {
			if v == l.Value {
				return
			}
			name = r.exported(t, name)
		}
		add(name, l.Value)
	})
	for _, l := range t.honored {
		if _, owned := t.ownedValue(l.Name); !owned && !r.lbls.Has(l.Name) {
			add(l.Name, l.Value)
		}
	}
	if err != nil {
		return err
	}
	if t.cfg.LabelLimit > 0 && n > t.cfg.LabelLimit {
		return fmt.Errorf("%w: label_limit: metric %.50s has %d labels, limit %d", ErrLabelLimit, metric, n, t.cfg.LabelLimit)
	}
	return nil
}

// exported returns the name a body label that clashes with an owned one
// moves to: exported_<name>, prefixed again while that is taken, as
// Prometheus names it.
func (r *renderer) exported(t *target, name string) string {
	for {
		name = model.ExportedLabelPrefix + name
		if _, owned := t.ownedValue(name); !owned && !r.lbls.Has(name) {
			return name
		}
	}
}

// checkLabel checks one label against label_name_length_limit and
// label_value_length_limit, which count bytes, as Prometheus does.
func (c *Config) checkLabel(metric, name, value string) error {
	if c.LabelNameLengthLimit > 0 && len(name) > c.LabelNameLengthLimit {
		return fmt.Errorf("%w: label_name_length_limit: metric %.50s, label name %.50s has %d bytes, limit %d", ErrLabelLimit, metric, name, len(name), c.LabelNameLengthLimit)
	}
	if c.LabelValueLengthLimit > 0 && len(value) > c.LabelValueLengthLimit {
		return fmt.Errorf("%w: label_value_length_limit: metric %.50s, label %.50s has %d bytes, limit %d", ErrLabelLimit, metric, name, len(value), c.LabelValueLengthLimit)
	}
	return nil
}

// emptyDuplicate reports whether a cAdvisor series is one that Grafana's
// k8s-monitoring drops (dropEmptyContainerLabels, dropEmptyImageLabels;
// google/cadvisor#2688): container_cpu_*, container_fs_* and
// container_memory_* without a container label, and those and
// container_network_* without an image. These are the pod and
// system-slice cgroups, which double every sum by pod or namespace. The
// node totals, id="/", are kept: the dashboard's node usage reads them.
func emptyDuplicate(name string, ls *labels.Labels) bool {
	rest, ok := strings.CutPrefix(name, "container_")
	if !ok {
		return false
	}
	usage := strings.HasPrefix(rest, "cpu_") || strings.HasPrefix(rest, "fs_") || strings.HasPrefix(rest, "memory_")
	network := strings.HasPrefix(rest, "network_")
	if !usage && !network {
		return false
	}
	if ls.Get("id") == "/" {
		return false
	}
	return usage && ls.Get("container") == "" || ls.Get("image") == ""
}
