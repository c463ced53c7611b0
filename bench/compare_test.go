package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fourSides returns made-up results of every setup, in the default order,
// over a 120 s window: kube-state-push, the pair with the Prometheus agent,
// and the two pairs with vmagent.
func fourSides() []*sideResult {
	w := 120 * time.Second
	pair := func(key, title, second string, ksmCPU, cpu float64, ksmPeak, peak uint64, wire, zstd int64) *sideResult {
		return &sideResult{
			key: key, title: title, window: w, cpuWindow: cpu, peak: peak, steady: peak - 1<<20, perInterval: 1_167,
			procs: []procResult{
				{name: "kube-state-metrics", cpuWindow: ksmCPU, peak: ksmPeak, steady: ksmPeak - 1<<20},
				{name: second, cpuWindow: cpu - ksmCPU, peak: peak - ksmPeak},
			},
			delivered: counters{requests: 4, zstdRequests: zstd, samples: 4 * 1_167, wireBytes: wire},
		}
	}
	return []*sideResult{
		{
			key: "agent", title: "kube-state-push", window: w, cpuWindow: 0.1, peak: 30 << 20, steady: 29 << 20, perInterval: 1_160,
			procs:     []procResult{{name: "kube-state-push", cpuWindow: 0.1, peak: 30 << 20}},
			delivered: counters{requests: 4, samples: 4 * 1_160, wireBytes: 4 * 1_160 * 16},
		},
		pair("ksm", "KSM + Prometheus agent", "prometheus-agent", 0.09, 0.5, 56<<20, 150<<20, 4*1_167*40, 0),
		pair("vmagent", "KSM + vmagent", "vmagent", 0.1, 0.4, 60<<20, 120<<20, 4*1_167*25, 0),
		pair("vmagent-vm", "KSM + vmagent, VictoriaMetrics protocol", "vmagent", 0.08, 0.3, 55<<20, 118<<20, 4*1_167*12, 4),
	}
}

func TestSizeClass(t *testing.T) {
	for _, tc := range []struct {
		pods    int
		churn   float64
		class   string
		heading string
	}{
		{pods: 12, churn: 1, class: "edge", heading: "## Latest run at edge size"},
		{pods: 200, churn: 0, class: "edge", heading: "## Latest run at edge size"},
		{pods: 201, churn: 10, class: "", heading: "## Latest run"},
		{pods: 10_000, churn: 10, class: "10k", heading: "## Latest run"},
		{pods: 10_000, churn: 0, class: "", heading: "## Latest run"},
		{pods: 50_000, churn: 10, class: "10k", heading: "## Latest run"},
	} {
		rep := &report{spec: clusterSpec{pods: tc.pods}, churn: tc.churn}
		require.Equal(t, tc.class, rep.sizeClass(), "%d pods, churn %g", tc.pods, tc.churn)
		require.Equal(t, tc.heading, rep.heading(), "%d pods", tc.pods)
	}
}

// TestTargetsEdge checks the edge targets at their limits: peak RSS 0.5
// and CPU 1 times kube-state-metrics alone's (the one in the pair with
// vmagent) are met, a little more is not.
func TestTargetsEdge(t *testing.T) {
	for _, tc := range []struct {
		peakMiB     uint64
		cpu         float64
		peak, cpuOK string
	}{
		{peakMiB: 30, cpu: 0.1, peak: "yes", cpuOK: "yes"},
		{peakMiB: 31, cpu: 0.11, peak: "**no**", cpuOK: "**no**"},
		{peakMiB: 58, cpu: 0.2, peak: "**no**", cpuOK: "**no**"},
	} {
		rs := fourSides()
		rs[0].peak, rs[0].cpuWindow = tc.peakMiB<<20, tc.cpu
		got := targets("edge", rs)
		require.Len(t, got, 2)
		require.Equal(t, target{goal: "peak RSS ≤ 0.5 × kube-state-metrics alone", ours: mib(tc.peakMiB << 20), theirs: "60.0 MiB",
			ratio: ratioOf(float64(tc.peakMiB), 60), met: tc.peak}, got[0])
		require.Equal(t, "CPU ≤ 1 × kube-state-metrics alone", got[1].goal)
		require.Equal(t, []string{cpuSecs(tc.cpu), "0.10 s", tc.cpuOK}, []string{got[1].ours, got[1].theirs, got[1].met}, "CPU %g s", tc.cpu)
	}

	// Without the vmagent pair, kube-state-metrics alone is the one in
	// the Prometheus pair.
	rs := fourSides()
	rs = []*sideResult{rs[0], rs[1]}
	got := targets("edge", rs)
	require.Equal(t, []string{"56.0 MiB", "0.54", "**no**"}, []string{got[0].theirs, got[0].ratio, got[0].met})
	require.Equal(t, []string{"0.09 s", "**no**"}, []string{got[1].theirs, got[1].met})

	// kube-state-push not run: nothing to check.
	got = targets("edge", fourSides()[1:])
	require.Equal(t, []string{"—", "—"}, []string{got[0].met, got[1].met})
}

// TestTargets10k checks the 10k targets at their limits: CPU 0.05 and peak
// RSS 0.12 times KSM + vmagent's (Remote-Write 1.0, not the zstd row).
func TestTargets10k(t *testing.T) {
	for _, tc := range []struct {
		cpu         float64
		peakMiB     uint64
		cpuOK, peak string
		ratio       string
	}{
		{cpu: 2, peakMiB: 120, cpuOK: "yes", peak: "yes", ratio: "0.050"},
		{cpu: 2.04, peakMiB: 121, cpuOK: "**no**", peak: "**no**", ratio: "0.051"},
	} {
		rs := fourSides()
		rs[2].cpuWindow, rs[2].peak = 40, 1000<<20
		rs[3].cpuWindow, rs[3].peak = 1000, 100_000<<20
		rs[0].cpuWindow, rs[0].peak = tc.cpu, tc.peakMiB<<20
		got := targets("10k", rs)
		require.Equal(t, target{goal: "CPU ≤ 0.05 × KSM + vmagent", ours: cpuSecs(tc.cpu), theirs: "40.00 s", ratio: tc.ratio, met: tc.cpuOK}, got[0])
		require.Equal(t, []string{"peak RSS ≤ 0.12 × KSM + vmagent", "1000.0 MiB", tc.peak}, []string{got[1].goal, got[1].theirs, got[1].met})
	}
	// No vmagent pair: unknown, not met.
	rs := fourSides()
	got := targets("10k", []*sideResult{rs[0], rs[1]})
	require.Equal(t, []string{"—", "—"}, []string{got[0].met, got[1].met})
	require.Empty(t, targets("", rs), "no targets between the classes")
}

func TestCompareTable(t *testing.T) {
	out := compareTable(fourSides())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2+4+1, "header, separator, four setups, kube-state-metrics alone")
	// 4 requests of 1,160 samples at 16 bytes in 120 s: 2.12 MiB an hour.
	require.Equal(t, "| kube-state-push | 0.10 s | 0.05 s | 30.0 MiB | 29.0 MiB | 1,160 | 16.00 | 2.1 MiB | snappy | 1.00 | 1.00 | 1.00 |", lines[2])
	// vmagent: 0.4 s, 120 MiB, 25 bytes a sample; ours 0.1 s, 30 MiB, 16.
	require.Equal(t, "| KSM + vmagent | 0.40 s | 0.20 s | 120.0 MiB | 119.0 MiB | 1,167 | 25.00 | 3.3 MiB | snappy | 0.25 | 0.25 | 0.64 |", lines[4])
	require.Equal(t, "| KSM + vmagent, VictoriaMetrics protocol | 0.30 s | 0.15 s | 118.0 MiB | 117.0 MiB | 1,167 | 12.00 | 1.6 MiB | zstd | 0.33 | 0.25 | 1.33 |", lines[5])
	require.Equal(t, "| kube-state-metrics alone (in KSM + vmagent) | 0.10 s | 0.05 s | 60.0 MiB | 59.0 MiB | — | — | — | — | 1.00 | 0.50 | — |", lines[6])

	// Without kube-state-push there is nothing to divide by.
	out = compareTable(fourSides()[1:2])
	require.Contains(t, out, "| KSM + Prometheus agent | 0.50 s | 0.25 s | 150.0 MiB | 149.0 MiB | 1,167 | 40.00 | 5.3 MiB | snappy | — | — | — |")
}

func TestProtocolOf(t *testing.T) {
	require.Equal(t, "—", protocolOf(counters{}))
	require.Equal(t, "snappy", protocolOf(counters{requests: 3}))
	require.Equal(t, "zstd", protocolOf(counters{requests: 3, zstdRequests: 3}))
	require.Equal(t, "zstd 1, snappy 2", protocolOf(counters{requests: 3, zstdRequests: 1}), "a downgrade shows")
	require.InDelta(t, 3600.0, perHour(&sideResult{window: time.Minute, delivered: counters{wireBytes: 60}}), 1e-9)
	require.Zero(t, perHour(&sideResult{}))
}

// TestOrdersBoth checks that -first both runs every setup forwards and
// then backwards, and that the report finds each order's results.
func TestOrdersBoth(t *testing.T) {
	o, err := parseFlags([]string{"-first", "both"})
	require.NoError(t, err)
	order := o.order()
	require.Equal(t, []string{"agent", "ksm", "vmagent", "vmagent-vm", "vmagent-vm", "vmagent", "ksm", "agent"}, keys(order))

	var results []*sideResult
	for _, s := range order {
		results = append(results, &sideResult{key: s.key, title: s.title})
	}
	rep := &report{results: results}
	rep.setOrders(o.orders(results))
	require.Len(t, rep.orders, 2)
	require.Same(t, results[0], rep.agent)
	require.Same(t, results[1], rep.ksm)
	require.Same(t, results[7], rep.agent2)
	require.Same(t, results[6], rep.ksm2)
	require.Equal(t, "KSM + vmagent, VictoriaMetrics protocol first", orderName(rep.orders[1]))

	o, err = parseFlags([]string{"-first", "ksm", "-only", "vmagent,agent"})
	require.NoError(t, err)
	require.Equal(t, []string{"vmagent", "agent"}, keys(o.order()), "the others first, in the order of sides")
	require.Len(t, o.orders(make([]*sideResult, 2)), 1)
	o, err = parseFlags([]string{"-first", "both", "-only", "agent"})
	require.NoError(t, err)
	require.Equal(t, []string{"agent"}, keys(o.order()), "one setup runs once")

	_, err = parseFlags([]string{"-only", "agent,prometheus"})
	require.ErrorContains(t, err, `-only: want agent, ksm, vmagent, vmagent-vm (comma-separated), all or both, not "agent,prometheus"`)
	_, err = parseFlags([]string{"-only", ""})
	require.ErrorContains(t, err, "-only: want")
}

func TestParseFlagsProfile(t *testing.T) {
	o, err := parseFlags([]string{"-profile", "edge"})
	require.NoError(t, err)
	require.Equal(t, edgeSpec, o.spec)
	require.Equal(t, 1.0, o.churn)
	_, err = parseFlags([]string{"-profile", "edge", "-pods", "150", "-churn", "5"})
	require.ErrorContains(t, err, "-pods: -profile edge sets it")
	require.ErrorContains(t, err, "-churn: -profile edge sets it")
	_, err = parseFlags([]string{"-profile", "tiny"})
	require.ErrorContains(t, err, `-profile: want edge or nothing, not "tiny"`)
	o, err = parseFlags([]string{"-pods", "150", "-nodes", "3"})
	require.NoError(t, err)
	require.Equal(t, clusterSpec{pods: 150, nodes: 3, containers: 2, namespaces: 20}, o.spec)
}

func TestRenderEveryOrder(t *testing.T) {
	rep := sampleReport()
	rep.spec = edgeSpec
	fwd := fourSides()
	back := fourSides()
	back[0].peak = 20 << 20
	rep.results = append(fwd, back[3], back[2], back[1], back[0])
	rep.setOrders([][]*sideResult{fwd, rep.results[4:]})
	out := rep.render()
	require.True(t, strings.HasPrefix(out, "## Latest run at edge size\n"))
	for _, want := range []string{
		"### Every setup",
		"Order 1, kube-state-push first:",
		"Order 2, KSM + vmagent, VictoriaMetrics protocol first:",
		"| target (edge) | order | kube-state-push | the other | ratio | met? |",
		"| peak RSS ≤ 0.5 × kube-state-metrics alone | 1: kube-state-push first | 30.0 MiB | 60.0 MiB | 0.50 | yes |",
		"| peak RSS ≤ 0.5 × kube-state-metrics alone | 2: KSM + vmagent, VictoriaMetrics protocol first | 20.0 MiB | 60.0 MiB | 0.33 | yes |",
		"| CPU ≤ 1 × kube-state-metrics alone | 2: KSM + vmagent, VictoriaMetrics protocol first | 0.10 s | 0.10 s | 1.00 | yes |",
		"Every size target is met in every order.",
		"(2 containers per pod, one more in every fourth, an init container in every second; 9 of 12 pods running and ready, the others in the states of every hundred pods, spread)",
		"### Against KSM + Prometheus agent",
		// At edge size no target against the pair; against
		// kube-state-metrics alone CPU ≤ 1.
		"| CPU seconds in the window | 0.1 s | 0.5 s | 0.20 | — | — |",
		"| vs kube-state-metrics alone: CPU seconds in the window | 0.1 s | 0.1 s | 1.11 | ≤ 1 | **no** |",
	} {
		require.Contains(t, out, want)
	}

	rep.results[7].cpuWindow = 0.2
	require.Contains(t, rep.render(), "Not every size target is met: see the rows marked **no**.")

	rep.spec = clusterSpec{pods: 500}
	require.Contains(t, rep.render(), "No size targets at this size: the edge targets apply up to 200 pods, the 10k ones from 10,000 pods with churn.")
}

func TestWriteDocSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "performance.md")
	head := "# Performance\n\nBy hand.\n\n"
	require.NoError(t, os.WriteFile(path, []byte(head+docMarker+"\n\n## Latest run\n\nold 10k\n"), 0o644))

	// A new size class is added after the others.
	require.NoError(t, writeDocSection(path, "## Latest run at edge size", "## Latest run at edge size\n\nedge 1\n"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, head+docMarker+"\n\n## Latest run\n\nold 10k\n\n## Latest run at edge size\n\nedge 1\n", string(b))

	// Each run replaces its own section only; the hand-written part stays.
	require.NoError(t, writeDocSection(path, "## Latest run", "## Latest run\n\nnew 10k\n"))
	require.NoError(t, writeDocSection(path, "## Latest run at edge size", "## Latest run at edge size\n\nedge 2\n"))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, head+docMarker+"\n\n## Latest run\n\nnew 10k\n\n## Latest run at edge size\n\nedge 2\n", string(b))

	// Subsections (###) belong to their section.
	require.NoError(t, writeDocSection(path, "## Latest run", "## Latest run\n\n### Every setup\n\nx\n"))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, head+docMarker+"\n\n## Latest run\n\n### Every setup\n\nx\n\n## Latest run at edge size\n\nedge 2\n", string(b))

	// A missing file starts with the intro.
	fresh := filepath.Join(t.TempDir(), "new.md")
	require.NoError(t, writeDocSection(fresh, "## Latest run", "## Latest run\n\nfirst\n"))
	b, err = os.ReadFile(fresh)
	require.NoError(t, err)
	require.Equal(t, docIntro+"\n"+docMarker+"\n\n## Latest run\n\nfirst\n", string(b))
}

func TestVMAgentArgs(t *testing.T) {
	env := sideEnv{writeURL: "http://127.0.0.1:9/api/v1/write", interval: 30 * time.Second}
	prom := vmagentArgs("/d", "/d/vmagent.yml", 8429, env, false)
	require.Contains(t, prom, "-remoteWrite.forcePromProto", "Remote-Write 1.0, like for like")
	require.Contains(t, prom, "-promscrape.maxScrapeSize=1GiB", "kube-state-metrics' page at 10,000 pods is about 100 MiB")
	require.Contains(t, prom, "-remoteWrite.url=http://127.0.0.1:9/api/v1/write")
	require.Contains(t, prom, "-remoteWrite.tmpDataPath=/d/vmagent-data")
	require.Contains(t, prom, "-httpListenAddr=127.0.0.1:8429")
	vm := vmagentArgs("/d", "/d/vmagent.yml", 8429, env, true)
	require.NotContains(t, vm, "-remoteWrite.forcePromProto", "left to negotiate VictoriaMetrics' protocol")
	require.NotContains(t, vm, "-remoteWrite.forceVMProto", "negotiated, as against a real receiver")
	cfg := scrapeConfig(env, "127.0.0.1:8081")
	require.Contains(t, cfg, "scrape_interval: 30s\n  scrape_timeout: 30s\n")
	require.Contains(t, cfg, "honor_labels: true")
	require.Contains(t, cfg, `- targets: ["127.0.0.1:8081"]`)
}
