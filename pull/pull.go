package pull

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
	"github.com/kube-state-push/kube-state-push/internal/confkey"
	"github.com/kube-state-push/kube-state-push/watch"
)

// Config is the `pull` block: it serves the state series for scraping, as
// kube-state-metrics' /metrics serves them, from the same series maps the
// snapshots read.
type Config struct {
	// ListenAddress serves /metrics with the state series; empty (the
	// default) serves nothing.
	ListenAddress string `yaml:"listen_address,omitempty"`
	// MaxConcurrentScrapes is how many scrapes are served at once; one
	// more is answered 503 at once. Each scrape renders the whole page
	// and holds the series sets it has not written yet.
	MaxConcurrentScrapes int `yaml:"max_concurrent_scrapes,omitempty"`
}

// DefaultConfig holds the pull block's defaults: two Prometheus replicas
// scraping in step and two other readers (a person with curl, a second
// tool) are served at once.
var DefaultConfig = Config{MaxConcurrentScrapes: 4}

// UnmarshalYAML starts from the defaults, so that keys left out keep them.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	*c = DefaultConfig
	type plain Config
	return unmarshal((*plain)(c))
}

// Validate checks the block. Keys in errors are relative to it.
func (c *Config) Validate() error {
	if c.MaxConcurrentScrapes < 1 {
		return confkey.Errorf("max_concurrent_scrapes", "must be at least 1, not %d", c.MaxConcurrentScrapes)
	}
	return nil
}

// Source is one series map as a scrape reads it.
type Source interface {
	// AppendSets appends the series set of every object the map holds to
	// dst and returns it. A set is never modified once stored, so the
	// scrape reads it after the call, without the map's lock.
	AppendSets(dst []*encode.SeriesSet) []*encode.SeriesSet
}

// View is what a scrape reads: the watched resources and the labels every
// series carries that kube-state-metrics' would not. The agent publishes a
// new one whenever its resources change.
type View struct {
	Groups []Group
	// External are the external labels, left out of the text.
	External []encode.Label
}

// Group is one resource: its families in render order (each object's
// series come family by family in this order) and its series maps.
type Group struct {
	Resource string
	Families []watch.FamilyInfo
	Maps     []Source
}

// metrics count the scrapes.
type metrics struct {
	scrapes *prometheus.CounterVec
	series  prometheus.Counter
	refused prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		scrapes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kube_state_push_pull_scrapes_total",
			Help: "Scrapes of the state series served on pull.listen_address, by exposition format.",
		}, []string{"format"}),
		series: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kube_state_push_pull_series_written_total",
			Help: "Series lines written to scrapes of pull.listen_address.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kube_state_push_pull_scrapes_refused_total",
			Help: "Scrapes of pull.listen_address answered 503 because pull.max_concurrent_scrapes were being served.",
		}),
	}
	reg.MustRegister(m.scrapes, m.series, m.refused)
	return m
}

// unlearntLayout writes the labels of a family whose layout is not learnt
// yet in name order.
var unlearntLayout = encode.NewLayout(nil, true)

// flushSize is how much text a scrape gathers before writing it out: the
// body is streamed, never held whole.
const flushSize = 64 << 10

// scratch is one scrape's reusable state.
type scratch struct {
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

var scratchPool = sync.Pool{New: func() any {
	return &scratch{seen: map[string]struct{}{}, index: map[string]int{}}
}}

// gzipPool holds the scrapes' gzip writers. BestSpeed: a scrape is mostly
// repeated label names, which the fastest level already shrinks well, for
// much less CPU than the default level.
var gzipPool = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// Handler serves the state series in kube-state-metrics' text format, or
// OpenMetrics when asked for.
type Handler struct {
	// view returns the current View; it is called once per scrape.
	view    func() *View
	metrics *metrics
	// slots holds a token for each scrape being served.
	slots chan struct{}
}

// NewHandler returns a handler that serves what view returns to at most
// maxConcurrent scrapes at once, and registers its scrape counters with
// reg.
func NewHandler(view func() *View, maxConcurrent int, reg prometheus.Registerer) *Handler {
	return &Handler{view: view, metrics: newMetrics(reg), slots: make(chan struct{}, max(1, maxConcurrent))}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		// Answered at once rather than queued: a scraper retries at its
		// next interval, and waiting scrapes would pile up behind slow ones.
		h.metrics.refused.Inc()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many concurrent scrapes", http.StatusServiceUnavailable)
		return
	}
	h.serve(w, r)
}

// serve writes the page.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	// kube-state-metrics' negotiation: OpenMetrics when asked for, the
	// text format otherwise.
	format := expfmt.NegotiateAccept(r.Header, expfmt.DefaultOpenMetricsAcceptedFormats()...)
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

	s := scratchPool.Get().(*scratch)
	defer func() {
		clear(s.sets)
		s.buf, s.sets, s.cursors, s.at = s.buf[:0], s.sets[:0], s.cursors[:0], s.at[:0]
		clear(s.seen)
		scratchPool.Put(s)
	}()
	v := h.view()
	n := 0
	for _, g := range v.Groups {
		if (only != nil && !only[g.Resource]) || except[g.Resource] {
			continue
		}
		var err error
		if n, err = s.writeGroup(out, g, v.External, openMetrics, n); err != nil {
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
func (s *scratch) writeGroup(out io.Writer, g Group, external []encode.Label, openMetrics bool, n int) (int, error) {
	s.sets = s.sets[:0]
	for _, m := range g.Maps {
		s.sets = m.AppendSets(s.sets)
	}
	if len(s.sets) == 0 {
		return n, nil
	}
	clear(s.index)
	for i, f := range g.Families {
		s.index[f.Name] = i
	}
	s.cursors = slices.Grow(s.cursors[:0], len(s.sets))[:len(s.sets)]
	s.at = slices.Grow(s.at[:0], len(s.sets))[:len(s.sets)]
	for j, set := range s.sets {
		s.cursors[j] = 0
		s.at[j] = s.familyAt(set, 0, len(g.Families))
	}
	for fi, f := range g.Families {
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
				s.at[j] = s.familyAt(set, c, len(g.Families))
			}
			s.cursors[j] = c
			if len(s.buf) >= flushSize {
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
func (s *scratch) familyAt(set *encode.SeriesSet, c, none int) int {
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
	return encode.AppendHeader(b, f.Name, f.HelpText(), t)
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
