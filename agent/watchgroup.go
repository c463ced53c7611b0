package agent

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/watch"
)

// watchGroup is one watched resource: a reflector per scope, each writing
// to its own series map. A reload replaces a group whose key changed, and
// retires the group of a resource no longer watched.
type watchGroup struct {
	resource *watch.Resource
	// key says what the group renders (groupKey); a reload rebuilds the
	// group when it changes.
	key string
	// scopes are the watches, one per series map (maps[i] is scopes[i]'s).
	scopes []watch.Scope
	maps   []*seriesMap
	// families are the families the renderers render, in render order.
	families []watch.FamilyInfo
	// wrap, when set, gives the store a reflector writes to in place of
	// its series map (the kubelet source's node tee, kubelet.go).
	wrap func(*seriesMap) cache.ReflectorStore

	// cancel stops the reflectors; wg waits for them. Both are set by start.
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// newGroup builds the series maps of one resource as cfg says, rendering
// only what owns owns (nil: everything); start starts its reflectors.
func newGroup(cfg *config.Config, r *watch.Resource, key string, owns func(types.UID) bool, m *metrics, log *slog.Logger) *watchGroup {
	g := &watchGroup{resource: r, key: key, scopes: cfg.Watch.Scopes(r)}
	rm := m.forResource(r.Name)
	ext := externalLabels(cfg.ExternalLabels)
	for _, f := range r.Families(cfg.Watch.FamilyOptions(r.Name)) {
		if cfg.Watch.Selected(f) {
			g.families = append(g.families, f)
		}
	}
	for _, sc := range g.scopes {
		// A renderer per reflector: renderers keep scratch space.
		rr := r.NewRenderer(watch.RenderOptions{
			Families:       cfg.Watch.FamilyOptions(r.Name),
			Select:         cfg.Watch.Selected,
			ExternalLabels: ext,
		})
		sm := newSeriesMap(r.Name, rr, log.With("scope", sc.String()), rm)
		sm.owns = owns
		g.maps = append(g.maps, sm)
	}
	return g
}

// start runs the group's reflectors until stop or ctx's end.
func (g *watchGroup) start(ctx context.Context, c watch.Clients) {
	ctx, g.cancel = context.WithCancel(ctx)
	for i, sc := range g.scopes {
		var store cache.ReflectorStore = g.maps[i]
		if g.wrap != nil {
			store = g.wrap(g.maps[i])
		}
		rf := g.resource.NewReflector(c, sc.Namespace, sc.FieldSelector, store)
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			rf.RunWithContext(ctx)
		}()
	}
}

// stop stops the reflectors and waits until none writes to a map any more.
func (g *watchGroup) stop() {
	if g.cancel != nil {
		g.cancel()
	}
	g.wg.Wait()
}

// synced reports whether every map holds its initial list.
func (g *watchGroup) synced() bool {
	for _, m := range g.maps {
		if !m.synced.Load() {
			return false
		}
	}
	return true
}

// hashes returns the label hashes of every series the group holds now.
func (g *watchGroup) hashes() map[uint64]struct{} {
	out := map[uint64]struct{}{}
	for _, m := range g.maps {
		m.mu.Lock()
		for _, set := range m.objects {
			for _, r := range set.Refs {
				out[r.Hash] = struct{}{}
			}
		}
		m.mu.Unlock()
	}
	return out
}

// retire empties a map whose reflector has stopped: each series it held,
// and each it was about to mark stale, gets a staleness marker in the next
// snapshot, except those keep has (its replacement's, which go on). The
// snapshot then sends the markers once, and the map is dropped.
func retire(m *seriesMap, keep map[uint64]struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, set := range m.objects {
		for i, r := range set.Refs {
			m.stale[r.Hash] = staleEntry{labels: set.Labels(i)}
		}
		delete(m.objects, uid)
	}
	m.count = 0
	for h := range m.stale {
		if _, ok := keep[h]; ok {
			delete(m.stale, h)
		}
	}
}

// groupKey says what a resource's group renders under cfg: its watches,
// the families selected and their options, the external labels and the
// objects' shard. Groups with equal keys render the same series, so a
// reload keeps a group whose key did not change.
func groupKey(cfg *config.Config, r *watch.Resource, shard, total int) string {
	var b strings.Builder
	for _, sc := range cfg.Watch.Scopes(r) {
		fmt.Fprintf(&b, "scope %q %q\n", sc.Namespace, sc.FieldSelector)
	}
	fo := cfg.Watch.FamilyOptions(r.Name)
	fmt.Fprintf(&b, "labels %q\nannotations %q\nseries labels %q\nfamilies", fo.LabelsAllowlist, fo.AnnotationsAllowlist, fo.SeriesLabels)
	for _, f := range r.Families(fo) {
		if cfg.Watch.Selected(f) {
			b.WriteString(" " + f.Name)
		}
	}
	fmt.Fprintf(&b, "\nexternal %q\nshard %d/%d", externalLabels(cfg.ExternalLabels), shard, total)
	if d := r.Definition(); d != "" {
		b.WriteString("\ndefinition " + d) // a custom resource's
	}
	return b.String()
}

// externalLabels returns the external labels sorted by name.
func externalLabels(m map[string]string) []encode.Label {
	ls := make([]encode.Label, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		ls = append(ls, encode.Label{Name: k, Value: m[k]})
	}
	return ls
}
