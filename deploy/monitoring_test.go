package deploy_test

// Checks of deploy/monitoring: the dashboards and alert rules query only the
// series the agent emits (its own kube_state_push_* self-metrics, found by
// reading agent/metrics.go and queue/metrics.go, and the kube-state-metrics
// families of docs/labels.json), with labels those series have.
//
// The PromQL is read by a small lexer and a matcher of its structure, not by
// github.com/prometheus/prometheus/promql/parser: that package imports parts
// of the prometheus module whose dependencies are not in go.sum.

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// externalLabels are added to every series by the agent's external_labels
// (or by the receiver), so any query may use them.
var externalLabels = map[string]bool{"cluster": true}

// family is a metric name and the labels its series carry.
type family struct {
	labels   []string // may hold patterns such as label_*
	selfMade bool     // a kube_state_push_ self-metric
}

func (f family) has(label string) bool {
	if externalLabels[label] || label == model.MetricNameLabel {
		return true
	}
	for _, l := range f.labels {
		if l == label || (strings.HasSuffix(l, "*") && strings.HasPrefix(label, strings.TrimSuffix(l, "*"))) {
			return true
		}
	}
	return false
}

// selfMetrics reads the Namespace/Subsystem/Name of every metric created in
// the packages agent, queue, pull and leader, with its variable labels. Histograms
// give their _bucket (with le), _sum and _count series.
func selfMetrics(t *testing.T) map[string]family {
	t.Helper()
	out := map[string]family{}
	// Every non-test file of the packages that define self-metrics, each
	// package's constants first: they carry over from one file to the next
	// (agent/reload.go uses agent/metrics.go's namespace).
	var files []*ast.File
	var names []string
	var consts map[string]string
	parsePackage := func(dir string) {
		consts = map[string]string{}
		files, names = nil, nil
		paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			require.NoError(t, err)
			files, names = append(files, f), append(names, path)
			collectConsts(f, consts)
		}
	}
	for _, dir := range []string{"../agent", "../queue", "../pull", "../leader"} {
		parsePackage(dir)
		for i, f := range files {
			file := names[i]
			inspectMetrics(t, f, file, consts, out)
		}
	}
	return out
}

// collectConsts adds f's string constants to consts.
func collectConsts(f *ast.File, consts map[string]string) {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					if v, ok := stringLit(vs.Values[i], nil); ok {
						consts[n.Name] = v
					}
				}
			}
		}
	}
}

// inspectMetrics adds to out the self-metrics f defines: calls of
// prometheus.NewXxx(opts[, labels]) and of the queue's counter and gauge
// helpers (name, help, labels...).
func inspectMetrics(t *testing.T, f *ast.File, file string, consts map[string]string, out map[string]family) {
	add := func(name string, histogram bool, labels []string) {
		if histogram {
			out[name+"_bucket"] = family{labels: append(append([]string{}, labels...), "le"), selfMade: true}
			out[name+"_sum"] = family{labels: labels, selfMade: true}
			out[name+"_count"] = family{labels: labels, selfMade: true}
			return
		}
		out[name] = family{labels: labels, selfMade: true}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		switch fun := call.Fun.(type) {
		case *ast.SelectorExpr: // prometheus.NewXxx(opts[, labels])
			if !strings.HasPrefix(fun.Sel.Name, "New") {
				return true
			}
			opts, ok := call.Args[0].(*ast.CompositeLit)
			if !ok {
				return true
			}
			fields := map[string]string{}
			for _, e := range opts.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, _ := kv.Key.(*ast.Ident)
				if key == nil {
					continue
				}
				if v, ok := stringLit(kv.Value, consts); ok {
					fields[key.Name] = v
				} else if key.Name == "Name" {
					return true // a helper's parameter: its callers are handled below
				}
			}
			if fields["Name"] == "" {
				return true
			}
			var labels []string
			if len(call.Args) > 1 {
				if lit, ok := call.Args[1].(*ast.CompositeLit); ok {
					for _, e := range lit.Elts {
						v, ok := stringLit(e, consts)
						require.True(t, ok, "%s: label of %s", file, fields["Name"])
						labels = append(labels, v)
					}
				}
			}
			add(prometheus.BuildFQName(fields["Namespace"], fields["Subsystem"], fields["Name"]),
				strings.Contains(fun.Sel.Name, "Histogram"), labels)
		case *ast.Ident: // queue's counter and gauge(name, help, labels...)
			if fun.Name != "counter" && fun.Name != "gauge" {
				return true
			}
			name, ok := stringLit(call.Args[0], consts)
			require.True(t, ok, "%s: counter name", file)
			var labels []string
			for _, e := range call.Args[2:] {
				v, ok := stringLit(e, consts)
				require.True(t, ok, "%s: label of %s", file, name)
				labels = append(labels, v)
			}
			add(prometheus.BuildFQName(consts["namespace"], consts["subsystem"], name), false, labels)
		}
		return true
	})
}

func stringLit(e ast.Expr, consts map[string]string) (string, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind == token.STRING {
			s, err := strconv.Unquote(v.Value)
			return s, err == nil
		}
	case *ast.Ident:
		s, ok := consts[v.Name]
		return s, ok
	}
	return "", false
}

// knownFamilies are the self-metrics and the kube-state-metrics families.
func knownFamilies(t *testing.T) map[string]family {
	t.Helper()
	fams := selfMetrics(t)
	data, err := os.ReadFile("../docs/labels.json")
	require.NoError(t, err)
	var ksm map[string][]string
	require.NoError(t, json.Unmarshal(data, &ksm))
	require.Greater(t, len(ksm), 300)
	for name, labels := range ksm {
		require.NotContains(t, fams, name)
		fams[name] = family{labels: labels}
	}
	return fams
}

// The Go source reading finds what the code registers.
func TestSelfMetricsFromSource(t *testing.T) {
	self := selfMetrics(t)
	require.Equal(t, family{labels: []string{"endpoint", "reason"}, selfMade: true}, self["kube_state_push_remote_samples_dropped_total"])
	require.Equal(t, family{labels: []string{"resource", "event"}, selfMade: true}, self["kube_state_push_events_total"])
	require.Equal(t, family{labels: []string{"endpoint", "le"}, selfMade: true}, self["kube_state_push_remote_batch_send_duration_seconds_bucket"])
	require.Contains(t, self, "kube_state_push_snapshot_duration_seconds_count")
	require.Contains(t, self, "kube_state_push_snapshot_last_timestamp_seconds")
	require.Contains(t, self, "kube_state_push_remote_queue_length")
	for name := range self {
		require.True(t, strings.HasPrefix(name, "kube_state_push_"), name)
	}
	// 10 agent and 9 queue metrics today, 2 of them histograms (3 series names each).
	require.GreaterOrEqual(t, len(self), 23)
}

// ---------------------------------------------------------------- PromQL

type tokKind int

const (
	tIdent tokKind = iota
	tString
	tNumber
	tRange // [5m], [5m:1m]
	tPunct
)

type tok struct {
	kind tokKind
	text string
}

// grafanaVars replaces Grafana's variables with valid PromQL.
var grafanaVars = regexp.MustCompile(`\$\{?(__[a-z_]+|[A-Za-z_][A-Za-z0-9_]*)(:[a-z]+)?\}?|\[\[[A-Za-z0-9_]+\]\]`)

func substituteVars(expr string) string {
	return grafanaVars.ReplaceAllStringFunc(expr, func(v string) string {
		if strings.HasPrefix(v, "$__") || strings.HasPrefix(v, "${__") {
			return "5m" // $__rate_interval, $__interval, $__range
		}
		return "x"
	})
}

func lex(expr string) ([]tok, error) {
	var out []tok
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			out = append(out, tok{tIdent, expr[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(expr) && (isIdent(expr[j]) || expr[j] == '.') && expr[j] != ':' {
				j++
			}
			out = append(out, tok{tNumber, expr[i:j]})
			i = j
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			s := expr[i : j+1]
			if c == '\'' {
				s = `"` + strings.ReplaceAll(s[1:len(s)-1], `"`, `\"`) + `"`
			}
			v, err := strconv.Unquote(s)
			if err != nil {
				return nil, fmt.Errorf("string %s: %w", expr[i:j+1], err)
			}
			out = append(out, tok{tString, v})
			i = j + 1
		case c == '[':
			j := strings.IndexByte(expr[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unterminated [ at %d", i)
			}
			r := expr[i+1 : i+j]
			for _, part := range strings.Split(r, ":") {
				if part == "" {
					continue
				}
				if _, err := model.ParseDuration(strings.TrimSpace(part)); err != nil {
					return nil, fmt.Errorf("range [%s]: %w", r, err)
				}
			}
			out = append(out, tok{tRange, r})
			i += j + 1
		default:
			two := ""
			if i+1 < len(expr) {
				two = expr[i : i+2]
			}
			switch two {
			case "==", "!=", "=~", "!~", "<=", ">=":
				out = append(out, tok{tPunct, two})
				i += 2
				continue
			}
			if !strings.ContainsRune("(){},=<>+-*/%^@", rune(c)) {
				return nil, fmt.Errorf("unexpected %q at %d", c, i)
			}
			out = append(out, tok{tPunct, string(c)})
			i++
		}
	}
	return out, nil
}

var (
	aggregations = set("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
		"bottomk", "topk", "quantile", "limitk", "limit_ratio")
	functions = set("abs", "absent", "absent_over_time", "avg_over_time", "ceil", "changes", "clamp", "clamp_max",
		"clamp_min", "count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "delta",
		"deriv", "exp", "floor", "histogram_quantile", "holt_winters", "idelta", "increase", "irate",
		"label_join", "label_replace", "last_over_time", "ln", "log10", "log2", "max_over_time", "min_over_time",
		"predict_linear", "present_over_time", "quantile_over_time", "rate", "resets", "round", "scalar", "sgn",
		"sort", "sort_desc", "sqrt", "stddev_over_time", "stdvar_over_time", "sum_over_time", "time", "timestamp",
		"vector", "year", "month", "hour", "minute")
	keywords = set("by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
		"unless", "offset", "atan2", "inf", "nan", "Inf", "NaN")
	labelAdders = set("group_left", "group_right", "label_replace", "label_join")
)

func set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return m
}

// selector is one vector selector of an expression.
type selector struct {
	name     string
	pos      int      // token index
	matchers []string // label names
}

// query is what an expression uses.
type query struct {
	selectors []selector
	// grouping labels of aggregations, with the token range of their operand.
	groupings []grouping
	// labels of on(), ignoring(), group_left() and group_right().
	joinLabels []string
	addsLabels bool
}

type grouping struct {
	labels     []string
	start, end int
}

// analyse reads the selectors, matchers and grouping labels of expr.
func analyse(expr string) (query, error) {
	var q query
	toks, err := lex(substituteVars(expr))
	if err != nil {
		return q, err
	}
	if len(toks) == 0 {
		return q, fmt.Errorf("empty expression")
	}
	// match parentheses and braces
	match := make([]int, len(toks))
	var stack []int
	for i, tk := range toks {
		if tk.kind != tPunct {
			continue
		}
		switch tk.text {
		case "(", "{":
			stack = append(stack, i)
		case ")", "}":
			if len(stack) == 0 {
				return q, fmt.Errorf("unbalanced %s", tk.text)
			}
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if (toks[o].text == "(") != (tk.text == ")") {
				return q, fmt.Errorf("mismatched %s and %s", toks[o].text, tk.text)
			}
			match[o], match[i] = i, o
		}
	}
	if len(stack) > 0 {
		return q, fmt.Errorf("unclosed %s", toks[stack[0]].text)
	}
	is := func(i int, kind tokKind, text string) bool {
		return i >= 0 && i < len(toks) && toks[i].kind == kind && (text == "" || toks[i].text == text)
	}
	// labelList reads "( a, b )" at i, returning the labels and the index after it.
	labelList := func(i int) ([]string, int, error) {
		if !is(i, tPunct, "(") {
			return nil, i, fmt.Errorf("expected ( after %s", toks[i-1].text)
		}
		var labels []string
		for j := i + 1; j < match[i]; j++ {
			switch {
			case toks[j].kind == tIdent:
				labels = append(labels, toks[j].text)
			case is(j, tPunct, ","):
			default:
				return nil, i, fmt.Errorf("unexpected %q in label list", toks[j].text)
			}
		}
		return labels, match[i] + 1, nil
	}
	// matchers reads "{ l op "v", ... }" at i.
	matchers := func(i int) ([]string, error) {
		var labels []string
		for j := i + 1; j < match[i]; {
			if !is(j, tIdent, "") || !is(j+1, tPunct, "") || !is(j+2, tString, "") {
				return nil, fmt.Errorf("bad matcher at %q", toks[j].text)
			}
			switch toks[j+1].text {
			case "=", "!=", "=~", "!~":
			default:
				return nil, fmt.Errorf("bad matcher operator %q", toks[j+1].text)
			}
			if strings.HasSuffix(toks[j+1].text, "~") {
				if _, err := regexp.Compile(toks[j+2].text); err != nil {
					return nil, fmt.Errorf("matcher %s: %w", toks[j].text, err)
				}
			}
			labels = append(labels, toks[j].text)
			j += 3
			if is(j, tPunct, ",") {
				j++
			}
		}
		return labels, nil
	}
	for i := 0; i < len(toks); i++ {
		tk := toks[i]
		switch {
		case tk.kind == tPunct && tk.text == "{": // {__name__="..."}
			m, err := matchers(i)
			if err != nil {
				return q, err
			}
			q.selectors = append(q.selectors, selector{pos: i, matchers: m})
			i = match[i]
		case tk.kind != tIdent:
		case aggregations[tk.text]:
			g := grouping{}
			j := i + 1
			if is(j, tIdent, "by") || is(j, tIdent, "without") {
				labels, next, err := labelList(j + 1)
				if err != nil {
					return q, err
				}
				g.labels, j = labels, next
			}
			if !is(j, tPunct, "(") {
				return q, fmt.Errorf("expected ( after %s", tk.text)
			}
			g.start, g.end = j, match[j]
			if g.labels == nil && (is(g.end+1, tIdent, "by") || is(g.end+1, tIdent, "without")) {
				labels, _, err := labelList(g.end + 2)
				if err != nil {
					return q, err
				}
				g.labels = labels
				toks[g.end+1].text = "by_done" // read: skip below
			}
			q.groupings = append(q.groupings, g)
			i = j // continue inside the operand
		case tk.text == "by_done":
			i = match[i+1]
		case functions[tk.text]:
			if !is(i+1, tPunct, "(") {
				return q, fmt.Errorf("expected ( after %s", tk.text)
			}
			if labelAdders[tk.text] {
				q.addsLabels = true
			}
		case tk.text == "on" || tk.text == "ignoring" || tk.text == "group_left" || tk.text == "group_right":
			if labelAdders[tk.text] {
				q.addsLabels = true
			}
			if !is(i+1, tPunct, "(") {
				if tk.text == "on" || tk.text == "ignoring" {
					return q, fmt.Errorf("expected ( after %s", tk.text)
				}
				continue
			}
			labels, next, err := labelList(i + 1)
			if err != nil {
				return q, err
			}
			q.joinLabels = append(q.joinLabels, labels...)
			i = next - 1
		case tk.text == "by" || tk.text == "without":
			return q, fmt.Errorf("%s outside an aggregation", tk.text)
		case keywords[tk.text]:
		case is(i+1, tPunct, "("):
			return q, fmt.Errorf("unknown function %s", tk.text)
		default: // a metric name
			s := selector{name: tk.text, pos: i}
			if is(i+1, tPunct, "{") {
				m, err := matchers(i + 1)
				if err != nil {
					return q, err
				}
				s.matchers = m
				i = match[i+1]
			}
			q.selectors = append(q.selectors, s)
		}
	}
	return q, nil
}

func TestAnalyse(t *testing.T) {
	q, err := analyse(`100 * sum(kube_pod_container_resource_requests{resource="cpu", cluster=~"$cluster"}) by (node) / sum by (node) (kube_node_status_allocatable{resource='cpu'}[$__rate_interval])`)
	require.NoError(t, err)
	require.Len(t, q.selectors, 2)
	require.Equal(t, "kube_pod_container_resource_requests", q.selectors[0].name)
	require.Equal(t, []string{"resource", "cluster"}, q.selectors[0].matchers)
	require.Equal(t, "kube_node_status_allocatable", q.selectors[1].name)
	require.Len(t, q.groupings, 2)
	require.Equal(t, []string{"node"}, q.groupings[0].labels)
	require.Equal(t, []string{"node"}, q.groupings[1].labels)

	q, err = analyse(`histogram_quantile(0.9, sum by (le) (rate(a_bucket[5m]))) / on (x) group_left (y) time() - b offset 5m`)
	require.NoError(t, err)
	require.Len(t, q.selectors, 2)
	require.Equal(t, []string{"x", "y"}, q.joinLabels)
	require.True(t, q.addsLabels)

	for _, bad := range []string{`rat(x[5m])`, `sum(x`, `x{a="b"`, `x{a=b}`, `x[5q]`, `x by (a)`, `sum(x) by`} {
		_, err := analyse(bad)
		require.Error(t, err, bad)
	}
}

// ---------------------------------------------------------------- checks

// checkExpr requires expr to use only known families and their labels, and
// returns the families it uses.
func checkExpr(t *testing.T, fams map[string]family, where, expr string) []string {
	t.Helper()
	q, err := analyse(expr)
	require.NoError(t, err, "%s: %s", where, expr)
	require.NotEmpty(t, q.selectors, "%s: no selector in %s", where, expr)
	var used []string
	famAt := map[int]family{}
	for _, s := range q.selectors {
		require.NotEmpty(t, s.name, "%s: selector without a metric name in %s", where, expr)
		f, ok := fams[s.name]
		require.True(t, ok, "%s: %s is neither a kube_state_push_ self-metric nor a kube-state-metrics family in docs/labels.json\n%s", where, s.name, expr)
		for _, l := range s.matchers {
			require.True(t, f.has(l), "%s: %s has no label %s (%v)\n%s", where, s.name, l, f.labels, expr)
		}
		famAt[s.pos] = f
		used = append(used, s.name)
	}
	for _, g := range q.groupings {
		var inside []selector
		for _, s := range q.selectors {
			if s.pos > g.start && s.pos < g.end {
				inside = append(inside, s)
			}
		}
		for _, l := range g.labels {
			n := 0
			for _, s := range inside {
				if famAt[s.pos].has(l) {
					n++
				}
			}
			if q.addsLabels {
				require.NotZero(t, n, "%s: no series aggregated by %s has it\n%s", where, l, expr)
			} else {
				require.Equal(t, len(inside), n, "%s: a series aggregated by %s lacks it\n%s", where, l, expr)
			}
		}
	}
	for _, l := range q.joinLabels {
		found := false
		for _, s := range q.selectors {
			found = found || famAt[s.pos].has(l)
		}
		require.True(t, found, "%s: no series has the matching label %s\n%s", where, l, expr)
	}
	return used
}

var labelValues = regexp.MustCompile(`^\s*label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)

// checkVariable checks a Grafana query variable: label_values(selector, label).
func checkVariable(t *testing.T, fams map[string]family, where, query string) {
	t.Helper()
	m := labelValues.FindStringSubmatch(query)
	require.NotNil(t, m, "%s: only label_values(selector, label) variables are checked: %s", where, query)
	for _, name := range checkExpr(t, fams, where, m[1]) {
		require.True(t, fams[name].has(m[2]), "%s: %s has no label %s", where, name, m[2])
	}
}

type dashboard struct {
	UID           string            `json:"uid"`
	Title         string            `json:"title"`
	SchemaVersion int               `json:"schemaVersion"`
	Panels        []json.RawMessage `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource json.RawMessage `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	GridPos    *struct{ H, W, X, Y int }
	Panels     []json.RawMessage `json:"panels"`
	Targets    []struct {
		RefID      string          `json:"refId"`
		Expr       string          `json:"expr"`
		Datasource json.RawMessage `json:"datasource"`
	} `json:"targets"`
}

const datasourceVar = `{"type":"prometheus","uid":"${datasource}"}`

// loadDashboard checks the dashboard file and returns the families its
// queries use, with the variables it defines.
func loadDashboard(t *testing.T, fams map[string]family, file string) (map[string]bool, map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(data, &d), file)
	require.NotEmpty(t, d.UID, file)
	require.NotEmpty(t, d.Title, file)
	require.GreaterOrEqual(t, d.SchemaVersion, 36, file)

	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		where := file + " variable " + v.Name
		switch v.Type {
		case "datasource":
			require.Equal(t, `"prometheus"`, string(v.Query), where)
		case "query":
			require.JSONEq(t, datasourceVar, string(v.Datasource), where)
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil {
				require.NoError(t, json.Unmarshal(v.Query, &q.Query), where)
			}
			checkVariable(t, fams, where, q.Query)
		default:
			t.Fatalf("%s: unexpected variable type %s", where, v.Type)
		}
	}
	require.True(t, vars["datasource"], "%s: a datasource variable", file)

	used := map[string]bool{}
	ids := map[int]bool{}
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			require.NoError(t, json.Unmarshal(r, &p), file)
			where := fmt.Sprintf("%s panel %d %q", file, p.ID, p.Title)
			require.False(t, ids[p.ID], "%s: duplicate id", where)
			ids[p.ID] = true
			require.NotNil(t, p.GridPos, where)
			require.NotEmpty(t, p.Title, where)
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			require.NotEmpty(t, p.Targets, where)
			require.JSONEq(t, datasourceVar, string(p.Datasource), where)
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				require.False(t, refs[tg.RefID], "%s: duplicate refId %s", where, tg.RefID)
				refs[tg.RefID] = true
				require.JSONEq(t, datasourceVar, string(tg.Datasource), where)
				for _, ref := range grafanaVars.FindAllString(tg.Expr, -1) {
					name := strings.Trim(ref, "${}[]")
					name, _, _ = strings.Cut(name, ":")
					require.True(t, strings.HasPrefix(name, "__") || vars[name], "%s: undefined variable %s", where, ref)
				}
				for _, n := range checkExpr(t, fams, where, tg.Expr) {
					used[n] = true
				}
			}
		}
	}
	walk(d.Panels)
	require.NotEmpty(t, used, file)
	return used, vars
}

// The agent dashboard queries only the agent's self-metrics, and all of them.
func TestAgentDashboard(t *testing.T) {
	fams := knownFamilies(t)
	used, vars := loadDashboard(t, fams, "monitoring/agent-dashboard.json")
	require.True(t, vars["endpoint"], "templated on endpoint")
	for n := range used {
		require.True(t, fams[n].selfMade, "%s is not a self-metric", n)
	}
	var missing []string
	for n, f := range fams {
		if f.selfMade && !used[n] && !strings.HasSuffix(n, "_sum") && !strings.HasSuffix(n, "_count") {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "self-metrics the agent dashboard does not show")
}

// The cluster dashboard queries the kube-state-metrics families the agent
// pushes, by their v2 names and labels, and covers the 13105 panels.
func TestClusterDashboard(t *testing.T) {
	fams := knownFamilies(t)
	used, vars := loadDashboard(t, fams, "monitoring/cluster-dashboard.json")
	require.True(t, vars["cluster"])
	for n := range used {
		require.False(t, fams[n].selfMade, "%s: a self-metric in the cluster dashboard", n)
	}
	for _, n := range []string{
		"kube_node_status_allocatable", "kube_node_status_capacity", "kube_pod_container_resource_requests",
		"kube_pod_container_resource_limits", "kube_node_status_condition", "kube_node_spec_taint", "kube_node_info",
		"kube_pod_status_phase", "kube_pod_container_status_running", "kube_pod_container_status_waiting_reason",
		"kube_pod_container_status_terminated_reason", "kube_pod_container_status_restarts_total",
		"kube_pod_info", "kube_pod_container_info", "kube_service_info", "kube_secret_info", "kube_configmap_info",
		"kube_deployment_status_replicas_available", "kube_deployment_status_replicas_unavailable",
		"kube_daemonset_status_number_misscheduled", "kube_statefulset_status_replicas_updated",
		"kube_job_status_succeeded", "kube_job_failed", "kube_cronjob_next_schedule_time",
		"kube_cronjob_status_last_schedule_time", "kube_persistentvolume_capacity_bytes",
		"kube_persistentvolume_status_phase", "kube_persistentvolumeclaim_resource_requests_storage_bytes",
		"kube_persistentvolumeclaim_status_phase",
	} {
		require.True(t, used[n], "the cluster dashboard shows %s", n)
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// The alert rules query only self-metrics, with their labels.
func TestAlertRules(t *testing.T) {
	fams := knownFamilies(t)
	data, err := os.ReadFile("monitoring/alerts.yaml")
	require.NoError(t, err)
	var rf ruleFile
	require.NoError(t, yaml.UnmarshalStrict(data, &rf))
	require.Len(t, rf.Groups, 1)
	alerts := map[string]bool{}
	for _, g := range rf.Groups {
		require.NotEmpty(t, g.Name)
		for _, r := range g.Rules {
			where := "alerts.yaml " + r.Alert
			require.NotEmpty(t, r.Alert, "only alerting rules")
			require.Empty(t, r.Record)
			require.False(t, alerts[r.Alert], "%s: duplicate", where)
			alerts[r.Alert] = true
			require.Regexp(t, `^[A-Z][A-Za-z0-9]*$`, r.Alert, where)
			if r.For != "" {
				d, err := model.ParseDuration(r.For)
				require.NoError(t, err, where)
				require.Greater(t, time.Duration(d), time.Duration(0), where)
			}
			require.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], where)
			require.NotEmpty(t, r.Annotations["summary"], where)
			require.NotEmpty(t, r.Annotations["description"], where)
			for _, n := range checkExpr(t, fams, where, r.Expr) {
				require.True(t, fams[n].selfMade, "%s: %s is not a self-metric", where, n)
			}
		}
	}
	for _, a := range []string{
		"KubeStatePushDown", "KubeStatePushSnapshotsStale", "KubeStatePushSamplesDropped",
		"KubeStatePushHighFailureRate", "KubeStatePushHighRetryRate", "KubeStatePushQueueBackingUp",
		"KubeStatePushResourceNotSynced", "KubeStatePushRenderErrors", "KubeStatePushDiskBufferGrowing",
		"KubeStatePushProtocolFallback", "KubeStatePushConfigReloadFailed",
	} {
		require.True(t, alerts[a], "alert %s", a)
	}
}
