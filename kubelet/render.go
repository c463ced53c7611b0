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

// target is what the labels of one read depend on besides the body.
type target struct {
	// path is the path read, with its filters.
	path *PathConfig
	// labels are the target's labels (job, metrics_path, node, instance
	// and target_labels), added to a series that has no label of the name
	// in the body, as Prometheus does with honor_labels (which
	// kube-prometheus-stack's kubelet endpoints set): a label the body
	// gives, even empty, wins, so the node total id="/", which cAdvisor
	// writes with namespace="", gets no namespace label.
	labels []encode.Label
	// external are the external labels, added to a series that has no
	// (non-empty) label of the name, as remote write adds them.
	external []encode.Label
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
}

func newRenderer() *renderer {
	return &renderer{st: labels.NewSymbolTable()}
}

// ErrParse is wrapped by render's errors about a body that is not valid
// Prometheus text.
var ErrParse = errors.New("parsing kubelet metrics")

// render parses body (Prometheus text format 0.0.4, which the kubelet
// serves) and returns the series kept, each with its own timestamp (def,
// in milliseconds, for a sample without one), and the number of samples
// dropped by the filters. The set does not alias body, but is the
// renderer's scratch space, valid until the next render: keep a Clone.
func (r *renderer) render(body []byte, t *target, def int64) (*encode.SeriesSet, int, error) {
	set := &r.set
	set.Reset()
	if set.Timestamps == nil {
		set.Timestamps = []int64{}
	}
	r.b.SetExternal(t.external)
	p := textparse.NewPromParser(body, r.st, false)
	dropped := 0
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			set.Reset()
			return set, 0, fmt.Errorf("%w: %w", ErrParse, err)
		}
		if e != textparse.EntrySeries {
			continue
		}
		_, ts, v := p.Series()
		p.Labels(&r.lbls)
		name := r.lbls.Get(model.MetricNameLabel)
		if !t.path.selected(name) || !t.path.KeepEmptyContainer && t.path.Path == PathCadvisor && emptyDuplicate(name, &r.lbls) {
			dropped++
			continue
		}
		r.b.Reset()
		r.lbls.Range(func(l labels.Label) { r.b.Add(l.Name, l.Value) })
		for _, l := range t.labels {
			if !r.lbls.Has(l.Name) {
				r.b.Add(l.Name, l.Value)
			}
		}
		r.b.AppendTo(set, v)
		at := def
		if ts != nil {
			at = *ts
		}
		set.Timestamps = append(set.Timestamps, at)
	}
	return set, dropped, nil
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
