package main

import (
	"fmt"
	"strings"
	"time"
)

// The size classes, whose targets the report checks.
const (
	// edgeMaxPods is the largest cluster of the edge class.
	edgeMaxPods = 200
	// largeMinPods is the smallest cluster of the 10k class, which also
	// needs churn.
	largeMinPods = 10_000
)

// sizeClass names the class of the run's cluster: "edge", "10k" or "".
func (rep *report) sizeClass() string {
	switch {
	case rep.spec.pods > 0 && rep.spec.pods <= edgeMaxPods:
		return "edge"
	case rep.spec.pods >= largeMinPods && rep.churn > 0:
		return "10k"
	}
	return ""
}

// heading is the report's section heading in docs/performance.md: each
// size class keeps a section of its own.
func (rep *report) heading() string {
	if rep.sizeClass() == "edge" {
		return "## Latest run at edge size"
	}
	return "## Latest run"
}

// setOrders records the results of each order and points agent, ksm,
// agent2 and ksm2 at the first and second order's.
func (rep *report) setOrders(orders [][]*sideResult) {
	rep.orders = orders
	if len(orders) > 0 {
		rep.agent, rep.ksm = byKey(orders[0], "agent"), byKey(orders[0], "ksm")
	}
	if len(orders) > 1 {
		rep.agent2, rep.ksm2 = byKey(orders[1], "agent"), byKey(orders[1], "ksm")
	}
}

// byKey returns the result of the setup with key, nil when it did not run.
func byKey(rs []*sideResult, key string) *sideResult {
	for _, r := range rs {
		if r.key == key {
			return r
		}
	}
	return nil
}

// ksmAlone returns the kube-state-metrics process of one of the pairs, the
// pair's title and its window: the pair with vmagent, the leanest, when it
// ran.
func ksmAlone(rs []*sideResult) (procResult, string, time.Duration, bool) {
	for _, key := range []string{"vmagent", "ksm", "vmagent-vm"} {
		if r := byKey(rs, key); r != nil && len(r.procs) > 0 {
			return r.procs[0], r.title, r.window, true
		}
	}
	return procResult{}, "", 0, false
}

// cpuSecs formats CPU seconds: two decimals, since a small cluster uses
// hundredths of a second a minute.
func cpuSecs(v float64) string { return fmt.Sprintf("%.2f s", v) }

// perHour is bytes on the wire per hour, from the window.
func perHour(r *sideResult) float64 {
	if r.window <= 0 {
		return 0
	}
	return float64(r.delivered.wireBytes) / r.window.Hours()
}

// protocolOf says what the setup's requests were: snappy (Remote-Write
// 1.0), zstd (VictoriaMetrics' protocol) or a mix.
func protocolOf(c counters) string {
	switch {
	case c.requests == 0:
		return "—"
	case c.zstdRequests == 0:
		return "snappy"
	case c.zstdRequests == c.requests:
		return "zstd"
	}
	return fmt.Sprintf("zstd %d, snappy %d", c.zstdRequests, c.requests-c.zstdRequests)
}

// compareTable renders one order's setups side by side, each with
// kube-state-push's ratio to it.
func compareTable(rs []*sideResult) string {
	agent := byKey(rs, "agent")
	ratio := func(x, y float64) string {
		if agent == nil {
			return "—"
		}
		return ratioOf(x, y)
	}
	var rows [][]string
	for _, r := range rs {
		rows = append(rows, []string{
			r.title, cpuSecs(r.cpuWindow), cpuSecs(60 * r.cpuWindow / r.window.Seconds()), mib(r.peak), mib(r.steady), count(r.perInterval),
			fmt.Sprintf("%.2f", perSample(r)), mib(uint64(perHour(r))), protocolOf(r.delivered),
			ratio(cpuOf(agent), r.cpuWindow), ratio(peakOf(agent), float64(r.peak)), ratio(bytesOf(agent), perSample(r)),
		})
	}
	if p, title, window, ok := ksmAlone(rs); ok {
		rows = append(rows, []string{
			p.name + " alone (in " + title + ")", cpuSecs(p.cpuWindow), cpuSecs(60 * p.cpuWindow / window.Seconds()), mib(p.peak), mib(p.steady), "—",
			"—", "—", "—", ratio(cpuOf(agent), p.cpuWindow), ratio(peakOf(agent), float64(p.peak)), "—",
		})
	}
	return table([]string{"setup", "CPU in the window", "CPU a minute", "peak RSS", "steady RSS", "samples per interval",
		"bytes on the wire per sample", "bytes on the wire per hour", "protocol",
		"kube-state-push ÷ it: CPU", "peak RSS", "bytes per sample"}, rows)
}

// cpuOf, peakOf and bytesOf are r's CPU seconds in the window, peak RSS
// and bytes on the wire per sample; 0 for nil.
func cpuOf(r *sideResult) float64 {
	if r == nil {
		return 0
	}
	return r.cpuWindow
}

func peakOf(r *sideResult) float64 {
	if r == nil {
		return 0
	}
	return float64(r.peak)
}

func bytesOf(r *sideResult) float64 {
	if r == nil {
		return 0
	}
	return perSample(r)
}

// target is one size target checked in one order.
type target struct {
	// goal says what is compared, against what, and the limit.
	goal string
	// ours and theirs are the two values; ratio ours/theirs.
	ours, theirs, ratio string
	// met is yes, **no**, or — when a setup did not run.
	met string
}

// targets checks the size class's targets in one order's results.
// At edge size kube-state-push's peak RSS is at most 0.5 and its CPU at
// most 1 times kube-state-metrics alone's; at 10k pods with churn its CPU
// is at most 0.05 and its peak RSS at most 0.12 times kube-state-metrics +
// vmagent's.
func targets(class string, rs []*sideResult) []target {
	agent := byKey(rs, "agent")
	check := func(goal string, limit, ours, theirs float64, show func(float64) string, known bool) target {
		t := target{goal: goal, ours: "—", theirs: "—", ratio: "—", met: "—"}
		if !known || agent == nil || theirs <= 0 {
			return t
		}
		t.ours, t.theirs, t.ratio = show(ours), show(theirs), ratioOf(ours, theirs)
		t.met = "**no**"
		if ours <= limit*theirs {
			t.met = "yes"
		}
		return t
	}
	cpu := cpuSecs
	rss := func(v float64) string { return mib(uint64(v)) }
	switch class {
	case "edge":
		p, _, _, ok := ksmAlone(rs)
		return []target{
			check("peak RSS ≤ 0.5 × kube-state-metrics alone", 0.5, peakOf(agent), float64(p.peak), rss, ok),
			check("CPU ≤ 1 × kube-state-metrics alone", 1, cpuOf(agent), p.cpuWindow, cpu, ok),
		}
	case "10k":
		vm := byKey(rs, "vmagent")
		return []target{
			check("CPU ≤ 0.05 × KSM + vmagent", 0.05, cpuOf(agent), cpuOf(vm), cpu, vm != nil),
			check("peak RSS ≤ 0.12 × KSM + vmagent", 0.12, peakOf(agent), peakOf(vm), rss, vm != nil),
		}
	}
	return nil
}

// targetsTable renders the size class's targets, one row per target and
// order.
func (rep *report) targetsTable() string {
	class := rep.sizeClass()
	if class == "" {
		return fmt.Sprintf("No size targets at this size: the edge targets apply up to %s pods, the 10k ones from %s pods with churn.\n",
			count(edgeMaxPods), count(largeMinPods))
	}
	var rows [][]string
	for i, rs := range rep.orders {
		name := orderName(rs)
		if len(rep.orders) > 1 {
			name = fmt.Sprintf("%d: %s", i+1, name)
		}
		for _, t := range targets(class, rs) {
			rows = append(rows, []string{t.goal, name, t.ours, t.theirs, t.ratio, t.met})
		}
	}
	return table([]string{"target (" + class + ")", "order", "kube-state-push", "the other", "ratio", "met?"}, rows)
}

// orderName names an order by the setup that ran first.
func orderName(rs []*sideResult) string {
	if len(rs) == 0 {
		return "—"
	}
	return rs[0].title + " first"
}

// metAll says whether every target of every order was met, for the
// closing line: "yes", "no", or "" when none was checked.
func (rep *report) metAll() string {
	seen, all := false, true
	for _, rs := range rep.orders {
		for _, t := range targets(rep.sizeClass(), rs) {
			if t.met == "—" {
				continue
			}
			seen = true
			all = all && t.met == "yes"
		}
	}
	switch {
	case !seen:
		return ""
	case all:
		return "yes"
	}
	return "no"
}

// comparisons renders every order's table of all setups and the size
// targets.
func (rep *report) comparisons() string {
	var b strings.Builder
	orders := rep.orders
	if orders == nil {
		orders = [][]*sideResult{rep.results}
	}
	b.WriteString("### Every setup\n\n")
	b.WriteString("Each setup's cost and bytes, and kube-state-push's ratio to it (below 1: kube-state-push uses less). " +
		"Bytes on the wire are the request bodies as sent: snappy for Remote-Write 1.0, zstd for VictoriaMetrics' protocol.\n\n")
	for i, rs := range orders {
		if len(orders) > 1 {
			fmt.Fprintf(&b, "Order %d, %s:\n\n", i+1, orderName(rs))
		}
		b.WriteString(compareTable(rs))
		b.WriteString("\n")
	}
	b.WriteString("### Size targets\n\n")
	b.WriteString(rep.targetsTable())
	switch rep.metAll() {
	case "yes":
		b.WriteString("\nEvery size target is met in every order.\n")
	case "no":
		b.WriteString("\nNot every size target is met: see the rows marked **no**.\n")
	}
	return b.String()
}
