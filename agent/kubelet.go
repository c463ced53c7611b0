package agent

import (
	"bytes"
	"context"

	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/kubelet"
)

// kubeletChanged reports whether a reload changes the kubelet section,
// which is read only at start, comparing the sections as they print.
func kubeletChanged(old, cur *config.Config) bool {
	a, errA := yaml.Marshal(old.Kubelet)
	b, errB := yaml.Marshal(cur.Kubelet)
	return errA != nil || errB != nil || !bytes.Equal(a, b)
}

// reloadKubelet hands a reloaded configuration's external labels to the
// kubelet source.
func (a *Agent) reloadKubelet(cfg *config.Config) {
	if a.kubelet != nil {
		a.kubelet.src.SetExternalLabels(externalLabels(cfg.ExternalLabels))
	}
}

// kubeletSource is the kubelet section at work: the source that reads the
// kubelets, and the series map it stores into, which every snapshot reads
// like the resources' maps.
type kubeletSource struct {
	src *kubelet.Source
	// m holds the series of every node and path.
	m *seriesMap
	// done is closed when src's Run has returned.
	done chan struct{}
}

// newKubelet builds the kubelet source of cfg, or nil when the section is
// off.
func (a *Agent) newKubelet(cfg *config.Config) (*kubeletSource, error) {
	if cfg.Kubelet == nil {
		return nil, nil
	}
	var rd kubelet.Reader
	var err error
	switch cfg.Kubelet.Mode {
	case kubelet.ModeAPIServer:
		rd, err = kubelet.NewProxyReader(a.clients.REST, cfg.Kubelet.BodySizeLimit)
	default:
		rd, err = kubelet.NewDirectReader(*cfg.Kubelet, a.clients.REST)
	}
	if err != nil {
		return nil, err
	}
	m := newSeriesMap("kubelet", nil, a.log, a.metrics.forResource("kubelet"))
	m.synced.Store(true) // nothing to list: ready from the start
	src := kubelet.New(*cfg.Kubelet, kubelet.Options{
		Reader:         rd,
		Store:          kubeletStore{m},
		Metrics:        kubelet.NewMetrics(a.reg),
		Logger:         a.log.With("source", "kubelet"),
		ExternalLabels: externalLabels(cfg.ExternalLabels),
	})
	return &kubeletSource{src: src, m: m, done: make(chan struct{})}, nil
}

// start runs the source until ctx ends.
func (k *kubeletSource) start(ctx context.Context) {
	go func() {
		defer close(k.done)
		k.src.Run(ctx)
	}()
}

// teeNodes makes a nodes group's reflectors tell the kubelet source about
// the nodes this replica owns, besides rendering them.
func (a *Agent) teeNodes(g *watchGroup) {
	if a.kubelet == nil || g.resource.Name != "nodes" {
		return
	}
	g.wrap = func(m *seriesMap) cache.ReflectorStore { return nodeTee{seriesMap: m, src: a.kubelet.src} }
}

// kubeletStore is the kubelet source's kubelet.Store: a series map whose
// keys are a node and a path rather than an object.
type kubeletStore struct{ m *seriesMap }

// Set stores the series of a node's path; nil deletes them.
func (s kubeletStore) Set(key types.UID, set *encode.SeriesSet) {
	s.m.mu.Lock()
	s.m.setLocked(key, set)
	s.m.mu.Unlock()
}

// nodeTee is the store of a nodes reflector when the kubelet section is
// on: every event goes to the series map, and the nodes the replica owns
// (seriesMap.foreign, which sharding sets) to the kubelet source.
type nodeTee struct {
	*seriesMap
	src *kubelet.Source
}

var _ cache.TransformingStore = nodeTee{}

// renderedNode is what the node tee's Transformer makes of a node this
// replica owns: what the series map makes of it, and what the kubelet
// source needs of it, which Replace hands on.
type renderedNode struct {
	renderedObject
	node kubelet.Node
}

// Transformer renders a node as the series map's does, and keeps what the
// kubelet source needs of it: the reflector's watch-list store holds no
// node objects either.
func (t nodeTee) Transformer() cache.TransformFunc {
	return func(obj any) (any, error) {
		switch obj.(type) {
		case *renderedObject, *renderedNode:
			return obj, nil // transformed already
		}
		r := t.renderObject(obj)
		n, ok := obj.(*v1.Node)
		if !ok || r.foreign {
			return &r, nil
		}
		return &renderedNode{renderedObject: r, node: t.src.NodeOf(n)}, nil
	}
}

// Add renders a node and has its kubelet read.
func (t nodeTee) Add(obj any) error { return t.seriesMap.Add(t.note(obj)) }

// Update renders a node again and updates its kubelet's address.
func (t nodeTee) Update(obj any) error { return t.seriesMap.Update(t.note(obj)) }

// Delete ends a node's series and its kubelet's.
func (t nodeTee) Delete(obj any) error {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if r, ok := obj.(*renderedNode); ok {
		obj = &r.renderedObject
	}
	if uid := uidOf(obj); uid != "" {
		t.src.Delete(uid)
	}
	return t.seriesMap.Delete(obj)
}

// Replace swaps in a whole list of nodes: node objects (a paginated list)
// or what Transformer made of them (a watch-list).
func (t nodeTee) Replace(list []any, rv string) error {
	nodes := make([]kubelet.Node, 0, len(list))
	for i, obj := range list {
		switch o := obj.(type) {
		case *v1.Node:
			if !t.foreign(obj) {
				nodes = append(nodes, t.src.NodeOf(o))
			}
		case *renderedNode:
			nodes = append(nodes, o.node)
			list[i] = &o.renderedObject
		}
	}
	t.src.Replace(nodes)
	return t.seriesMap.Replace(list, rv)
}

// note tells the source of an added or updated node: read it if this
// replica owns it, forget it otherwise. It returns what the series map
// takes: the node, or what it rendered to.
func (t nodeTee) note(obj any) any {
	switch o := obj.(type) {
	case *v1.Node:
		if t.foreign(obj) {
			t.src.Delete(o.UID)
		} else {
			t.src.Upsert(t.src.NodeOf(o))
		}
	case *renderedNode:
		t.src.Upsert(o.node)
		return &o.renderedObject
	case *renderedObject:
		if o.foreign {
			t.src.Delete(o.uid)
		}
	}
	return obj
}
