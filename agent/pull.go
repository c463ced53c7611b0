package agent

import (
	"compress/gzip"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/watch"
)

// PullConfig serves the state series for scraping, as kube-state-metrics'
// /metrics serves them, from the same series maps the snapshots read.
type PullConfig struct {
	// ListenAddress serves /metrics with the state series; empty (the
	// default) serves nothing.
	ListenAddress string `yaml:"listen_address,omitempty"`
}

// pullView is what a scrape reads: the watched resources and the labels
// every series carries that kube-state-metrics' would not. refresh
// publishes a new one whenever the groups change.
type pullView struct {
	groups []pullGroup
	// external are the external labels, left out of the text.
	external []encode.Label
}

// pullGroup is one resource: its families in render order (each object's
// series come family by family in this order) and its series maps.
type pullGroup struct {
	resource string
	families []watch.FamilyInfo
	maps     []*seriesMap
}

// pullMetrics count the scrapes.
type pullMetrics struct {
	scrapes *prometheus.CounterVec
	series  prometheus.Counter
}

func newPullMetrics(reg prometheus.Registerer) *pullMetrics {
	m := &pullMetrics{
		scrapes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kube_state_push_pull_scrapes_total",
			Help: "Scrapes of the state series served on pull.listen_address, by exposition format.",
		}, []string{"format"}),
		series: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kube_state_push_pull_series_written_total",
			Help: "Series lines written to scrapes of pull.listen_address.",
		}),
	}
	reg.MustRegister(m.scrapes, m.series)
	return m
}

// unlearntLayout writes the labels of a family whose layout is not learnt
// yet in name order.
var unlearntLayout = encode.NewLayout(nil, true)

// pullFlush is how much text a scrape gathers before writing it out: the
// body is streamed, never held whole.
const pullFlush = 64 << 10

// pullScratch is one scrape's reusable state.
type pullScratch struct {
	buf  []byte
	sets []*encode.SeriesSet
	// cursors is, by set, the next series to write, and at its family's
	// index in the group (len(families) past the last series or for a
	// family not in the group), so that each series' name is read once.
	cursors []int
	at      []int
	// index maps the group's family names to their index.
	index map[string]int
	seen  map[string]struct{}
	text  encode.TextWriter
}

var pullScratchPool = sync.Pool{New: func() any {
	return &pullScratch{seen: map[string]struct{}{}, index: map[string]int{}}
}}

// gzipPool holds the scrapes' gzip writers. BestSpeed: a scrape is mostly
// repeated label names, which the fastest level already shrinks about
// tenfold, at a third of the default level's CPU.
var gzipPool = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// pullHandler serves the state series in kube-state-metrics' text format.
type pullHandler struct {
	view    func() *pullView
	metrics *pullMetrics
}

func (h *pullHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// kube-state-metrics' negotiation: OpenMetrics when asked for, the
	// text format otherwise.
	format := expfmt.NegotiateIncludingOpenMetrics(r.Header)
	openMetrics := format.FormatType() == expfmt.TypeOpenMetrics
	if !openMetrics {
		format = expfmt.NewFormat(expfmt.TypeTextPlain)
	}
	w.Header().Set("Content-Type", string(format))
	var out io.Writer = w
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(w)
		defer func() {
			_ = gz.Close()
			gzipPool.Put(gz)
		}()
		w.Header().Set("Content-Encoding", "gzip")
		out = gz
	}
	if openMetrics {
		h.metrics.scrapes.WithLabelValues("openmetrics").Inc()
	} else {
		h.metrics.scrapes.WithLabelValues("text").Inc()
	}
	only := resourceSet(r.URL.Query()["resources"])
	except := resourceSet(r.URL.Query()["exclude_resources"])

	s := pullScratchPool.Get().(*pullScratch)
	defer func() {
		clear(s.sets)
		s.buf, s.sets, s.cursors, s.at = s.buf[:0], s.sets[:0], s.cursors[:0], s.at[:0]
		clear(s.seen)
		pullScratchPool.Put(s)
	}()
	v := h.view()
	n := 0
	for _, g := range v.groups {
		if (only != nil && !only[g.resource]) || except[g.resource] {
			continue
		}
		var err error
		if n, err = s.writeGroup(out, g, v.external, openMetrics, n); err != nil {
			return // the scraper went away
		}
	}
	if openMetrics {
		s.buf = append(s.buf, "# EOF\n"...)
	}
	_, _ = out.Write(s.buf)
	h.metrics.series.Add(float64(n))
}

// writeGroup writes one resource's families as kube-state-metrics does:
// nothing when it has no objects, else every family's HELP and TYPE (once
// per name in the whole body) followed by the family's series, object after
// object. n counts the series written.
func (s *pullScratch) writeGroup(out io.Writer, g pullGroup, external []encode.Label, openMetrics bool, n int) (int, error) {
	s.sets = s.sets[:0]
	for _, m := range g.maps {
		m.mu.Lock()
		for _, set := range m.objects {
			s.sets = append(s.sets, set)
		}
		m.mu.Unlock()
	}
	if len(s.sets) == 0 {
		return n, nil
	}
	clear(s.index)
	for i, f := range g.families {
		s.index[f.Name] = i
	}
	s.cursors = slices.Grow(s.cursors[:0], len(s.sets))[:len(s.sets)]
	s.at = slices.Grow(s.at[:0], len(s.sets))[:len(s.sets)]
	for j, set := range s.sets {
		s.cursors[j] = 0
		s.at[j] = s.familyAt(set, 0, len(g.families))
	}
	for fi, f := range g.families {
		if _, dup := s.seen[f.Name]; !dup {
			s.seen[f.Name] = struct{}{}
			s.buf = appendHeader(s.buf, f, openMetrics)
		}
		layout := watch.LayoutOf(f.Name)
		if layout == nil {
			// Not one series rendered yet, so none to write; should one
			// appear in between, its labels are written in name order.
			layout = unlearntLayout
		}
		for j, set := range s.sets {
			if s.at[j] != fi {
				continue
			}
			c := s.cursors[j]
			for s.at[j] == fi {
				s.buf = s.text.AppendSeries(s.buf, f.Name, layout, set.Labels(c), set.Trailer(c), external, set.Refs[c].Value)
				n++
				c++
				s.at[j] = s.familyAt(set, c, len(g.families))
			}
			s.cursors[j] = c
			if len(s.buf) >= pullFlush {
				if _, err := out.Write(s.buf); err != nil {
					return n, err
				}
				s.buf = s.buf[:0]
			}
		}
	}
	return n, nil
}

// familyAt is the group's index of the family of set's series c, or none
// past the last series. A family the group does not list (possible only
// while a reload swaps renderers) is none too: the set's remaining series
// are left out of this scrape rather than written under another header.
func (s *pullScratch) familyAt(set *encode.SeriesSet, c, none int) int {
	if c >= set.Len() {
		return none
	}
	if i, ok := s.index[string(encode.MetricNameOf(set.Labels(c)))]; ok {
		return i
	}
	return none
}

// appendHeader appends a family's HELP and TYPE lines as kube-state-metrics
// writes them: the stability prefix and HELP escaping of helpText, and in
// the text format info and stateset written as gauge.
func appendHeader(b []byte, f watch.FamilyInfo, openMetrics bool) []byte {
	t := f.Type.String()
	if !openMetrics && (f.Type == watch.Info || f.Type == watch.StateSet) {
		t = watch.Gauge.String()
	}
	return encode.AppendHeader(b, f.Name, helpText(f), t)
}

// acceptsGzip reports whether an Accept-Encoding header lists gzip.
func acceptsGzip(h string) bool {
	for part := range strings.SplitSeq(h, ",") {
		part = strings.TrimSpace(part)
		if part == "gzip" || strings.HasPrefix(part, "gzip;") {
			return true
		}
	}
	return false
}

// resourceSet parses kube-state-metrics' ?resources= and
// ?exclude_resources= parameters (comma-separated, repeatable); nil when
// absent.
func resourceSet(params []string) map[string]bool {
	if params == nil {
		return nil
	}
	m := map[string]bool{}
	for _, p := range params {
		for res := range strings.SplitSeq(p, ",") {
			if res = strings.TrimSpace(res); res != "" {
				m[res] = true
			}
		}
	}
	return m
}

// pullView builds the view of the current groups (refresh calls it).
func (a *Agent) newPullView() *pullView {
	v := &pullView{external: externalLabels(a.cfg.ExternalLabels)}
	for _, g := range a.groups {
		v.groups = append(v.groups, pullGroup{resource: g.resource.Name, families: g.families, maps: g.maps})
	}
	return v
}
