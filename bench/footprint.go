package main

// `bench footprint` measures the agent's fixed cost at a small size: one
// agent (and, with -ksm, kube-state-metrics alone, scraped at the same
// interval) against a small synthetic cluster, and where its memory goes:
// peak and steady RSS split into anonymous and file-backed pages, the
// mappings that hold the most, CPU seconds a minute, and optionally the
// agent's heap and goroutine profiles.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// footprintOptions are the flags of `bench footprint`.
type footprintOptions struct {
	spec             clusterSpec
	interval, window time.Duration
	churn            float64
	agentBin         string
	// ksm also measures kube-state-metrics alone, scraped every interval.
	ksm bool
	// diskBuffer gives the agent's endpoint a disk buffer.
	diskBuffer bool
	// profiles is a folder for the agent's CPU (over the window), heap and
	// goroutine profiles and its smaps; empty: none.
	profiles string
}

func parseFootprintFlags(args []string) (footprintOptions, error) {
	var o footprintOptions
	fs := flag.NewFlagSet("bench footprint", flag.ContinueOnError)
	fs.IntVar(&o.spec.pods, "pods", 150, "pods in the synthetic cluster")
	fs.IntVar(&o.spec.nodes, "nodes", 3, "nodes the pods are spread over")
	fs.IntVar(&o.spec.containers, "containers", 2, "containers per pod")
	fs.IntVar(&o.spec.namespaces, "namespaces", 3, "namespaces the deployments are spread over")
	fs.DurationVar(&o.interval, "interval", 30*time.Second, "snapshot interval, and scrape interval of kube-state-metrics")
	fs.DurationVar(&o.window, "window", 2*time.Minute, "measured window, after the first complete snapshot and one more interval")
	fs.Float64Var(&o.churn, "churn", 1, "pod status updates per second")
	fs.StringVar(&o.agentBin, "agent", "bin/kube-state-push", "the kube-state-push binary (make build)")
	fs.BoolVar(&o.ksm, "ksm", true, "also measure kube-state-metrics alone, scraped every interval")
	fs.BoolVar(&o.diskBuffer, "disk-buffer", true, "run kube-state-push with a disk buffer")
	fs.StringVar(&o.profiles, "profiles", "", "folder for the agent's CPU profile over the window, heap and goroutine profiles, smaps and resident pages; empty: none")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	var errs []error
	if o.interval < time.Second {
		errs = append(errs, fmt.Errorf("-interval: must be at least 1s, not %s", o.interval))
	}
	if o.window < o.interval {
		errs = append(errs, fmt.Errorf("-window: must be at least one interval (%s), not %s", o.interval, o.window))
	}
	if o.churn < 0 {
		errs = append(errs, fmt.Errorf("-churn: must not be negative, not %g", o.churn))
	}
	if o.spec.pods < 1 || o.spec.nodes < 1 || o.spec.containers < 1 || o.spec.namespaces < 1 {
		errs = append(errs, errors.New("-pods, -nodes, -containers and -namespaces must each be at least 1"))
	}
	return o, errors.Join(errs...)
}

// footprintMain runs `bench footprint` and returns the exit status.
func footprintMain(ctx context.Context, args []string) int {
	o, err := parseFootprintFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench footprint: %v\n", err)
		return 2
	}
	out, err := runFootprint(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench footprint: %v\n", err)
		return 1
	}
	fmt.Println(out)
	return 0
}

// footprintResult is what one process used.
type footprintResult struct {
	title string
	// peak is VmHWM at the end; steady the median RSS in the window.
	peak, steady uint64
	// end is the memory at the end of the window.
	end memory
	// cpuPerMinute is CPU seconds a minute in the window.
	cpuPerMinute float64
	maps         []mapping
	// goroutines and heapInuse are from the process' own metrics.
	goroutines, heapInuse float64
	// runtime is the Go runtime's memory beside the heap in use, from its
	// go_memstats_* metrics, in bytes, by name.
	runtime map[string]float64
}

// runtimeMemory are the go_memstats_* gauges that, with the heap in use,
// make up a Go program's anonymous memory.
var runtimeMemory = []string{"go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes", "go_memstats_stack_inuse_bytes",
	"go_memstats_mspan_sys_bytes", "go_memstats_gc_sys_bytes", "go_memstats_other_sys_bytes", "go_memstats_next_gc_bytes"}

// runFootprint does the whole measurement and returns the report.
func runFootprint(ctx context.Context, o footprintOptions) (string, error) {
	if _, err := os.Stat(o.agentBin); err != nil {
		return "", fmt.Errorf("the agent binary %s: %w (run make build)", o.agentBin, err)
	}
	workDir, err := os.MkdirTemp("", "ksp-footprint-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(workDir)
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	cp, err := testenv.StartControlPlane(startCtx, workDir)
	cancel()
	if err != nil {
		return "", fmt.Errorf("starting the control plane: %w", err)
	}
	defer cp.Stop()
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	cl, err := loadCluster(ctx, client, o.spec, 8, logf)
	if err != nil {
		return "", err
	}
	logf("loaded %v", cl.objects)
	recv := newReceiver("")
	writeURL, stopRecv, err := recv.serve()
	if err != nil {
		return "", err
	}
	defer stopRecv()
	ch := newChurner(client, recv, cl.churnable, o.churn)
	churnCtx, stopChurn := context.WithCancel(ctx)
	defer stopChurn()
	go ch.run(churnCtx)

	env := sideEnv{kubeconfig: cp.Kubeconfig, writeURL: writeURL, interval: o.interval, agentBin: o.agentBin, diskBuffer: o.diskBuffer}
	var results []footprintResult
	ag, err := footprintAgent(ctx, workDir, env, recv, o)
	if err != nil {
		return "", err
	}
	results = append(results, ag)
	if o.ksm {
		k, err := footprintKSM(ctx, workDir, env, o)
		if err != nil {
			return "", err
		}
		results = append(results, k)
	}
	return renderFootprint(o, results), nil
}

// footprintAgent runs the agent until its first complete snapshot and one
// more interval, then measures it for the window.
func footprintAgent(ctx context.Context, workDir string, env sideEnv, recv *receiver, o footprintOptions) (footprintResult, error) {
	dir, err := os.MkdirTemp(workDir, "agent-")
	if err != nil {
		return footprintResult{}, err
	}
	listenPort, err := testenv.FreePort()
	if err != nil {
		return footprintResult{}, err
	}
	listen := "127.0.0.1:" + strconv.Itoa(listenPort)
	cfgPath := filepath.Join(dir, "kube-state-push.yaml")
	buffer := ""
	if env.diskBuffer {
		buffer = filepath.Join(dir, "buffer")
	}
	cfg := fmt.Sprintf("kubeconfig: %q\nsnapshot_interval: %s\nlisten_address: %q\npush_self_metrics: false\nremote_write:\n  - url: %q\n",
		env.kubeconfig, env.interval, listen, env.writeURL)
	if buffer != "" {
		cfg += fmt.Sprintf("    disk_buffer: {directory: %q}\n", buffer)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return footprintResult{}, err
	}
	args := []string{"--config.file=" + cfgPath}
	if o.profiles != "" {
		args = append(args, "--web.enable-pprof")
	}
	p, err := testenv.Start(dir, "kube-state-push", env.agentBin, args...)
	if err != nil {
		return footprintResult{}, err
	}
	defer p.Stop(30 * time.Second)
	recv.reset()
	samp := newSampler(p.Pid())
	sampCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go samp.run(sampCtx, time.Second)
	logf("kube-state-push: waiting for the first complete snapshot")
	var full timestamp
	if err := poll(ctx, []*testenv.Process{p}, 5*time.Minute, func() bool {
		var ok bool
		full, ok = firstFull(recv.timestamps())
		return ok
	}); err != nil {
		return footprintResult{}, fmt.Errorf("kube-state-push: %w; log:\n%s", err, p.Tail())
	}
	if err := poll(ctx, []*testenv.Process{p}, 2*o.interval, func() bool { return time.Since(full.last) >= o.interval }); err != nil {
		return footprintResult{}, err
	}
	base := "http://" + listen + "/debug/pprof/"
	cpuDone := make(chan error, 1)
	if o.profiles != "" {
		if err := os.MkdirAll(o.profiles, 0o755); err != nil {
			return footprintResult{}, err
		}
		// The CPU profile covers the measured window, to show where the
		// CPU it reports went.
		go func() {
			url := fmt.Sprintf("%sprofile?seconds=%d", base, int(o.window.Seconds()))
			cpuDone <- download(ctx, url, filepath.Join(o.profiles, "cpu.pb.gz"))
		}()
	}
	res, err := measureFootprint(ctx, "kube-state-push", p, samp, "http://"+listen+"/metrics", o)
	if err != nil {
		return res, err
	}
	if o.profiles != "" {
		if err := <-cpuDone; err != nil {
			return res, err
		}
		for name, url := range map[string]string{"heap.pb.gz": base + "heap", "goroutine.txt": base + "goroutine?debug=1"} {
			if err := download(ctx, url, filepath.Join(o.profiles, name)); err != nil {
				return res, err
			}
		}
		if err := copyFile(fmt.Sprintf("/proc/%d/smaps", p.Pid()), filepath.Join(o.profiles, "smaps")); err != nil {
			return res, err
		}
		if err := residentPages(p.Pid(), env.agentBin, filepath.Join(o.profiles, "resident-pages.txt")); err != nil {
			return res, err
		}
		logf("profiles in %s", o.profiles)
	}
	return res, nil
}

// footprintKSM runs kube-state-metrics alone, read every interval as a
// scraper would, and measures it like the agent.
func footprintKSM(ctx context.Context, workDir string, env sideEnv, o footprintOptions) (footprintResult, error) {
	dir, err := os.MkdirTemp(workDir, "ksm-")
	if err != nil {
		return footprintResult{}, err
	}
	bin, err := testenv.Binary("kube-state-metrics")
	if err != nil {
		return footprintResult{}, err
	}
	var ports [2]int
	for i := range ports {
		if ports[i], err = testenv.FreePort(); err != nil {
			return footprintResult{}, err
		}
	}
	p, err := testenv.Start(dir, "kube-state-metrics", bin, "--kubeconfig="+env.kubeconfig,
		"--host=127.0.0.1", "--port="+strconv.Itoa(ports[0]),
		"--telemetry-host=127.0.0.1", "--telemetry-port="+strconv.Itoa(ports[1]))
	if err != nil {
		return footprintResult{}, err
	}
	defer p.Stop(30 * time.Second)
	samp := newSampler(p.Pid())
	sampCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go samp.run(sampCtx, time.Second)
	page := "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/metrics"
	logf("kube-state-metrics: waiting for its page")
	if err := poll(ctx, []*testenv.Process{p}, 5*time.Minute, func() bool {
		_, lines, err := readPage(ctx, page)
		return err == nil && lines > 0
	}); err != nil {
		return footprintResult{}, fmt.Errorf("kube-state-metrics: %w; log:\n%s", err, p.Tail())
	}
	scrape := func() { _, _, _ = readPage(ctx, page) }
	scrapeCtx, stopScrape := context.WithCancel(ctx)
	defer stopScrape()
	go func() {
		t := time.NewTicker(o.interval)
		defer t.Stop()
		for {
			select {
			case <-scrapeCtx.Done():
				return
			case <-t.C:
				scrape()
			}
		}
	}()
	time.Sleep(o.interval)
	return measureFootprint(ctx, "kube-state-metrics alone", p, samp, "http://127.0.0.1:"+strconv.Itoa(ports[1])+"/metrics", o)
}

// measureFootprint measures p over the window.
func measureFootprint(ctx context.Context, title string, p *testenv.Process, samp *sampler, metricsURL string, o footprintOptions) (footprintResult, error) {
	logf("%s: measuring for %s", title, o.window)
	before := samp.read()
	if err := poll(ctx, []*testenv.Process{p}, o.window+time.Second, func() bool { return time.Since(before.at) >= o.window }); err != nil {
		return footprintResult{}, err
	}
	after := samp.read()
	if !after.r[0].ok || !before.r[0].ok {
		return footprintResult{}, fmt.Errorf("%s: could not read /proc", title)
	}
	res := footprintResult{title: title, peak: after.r[0].hwm, steady: median(rssOf(samp.between(before.at, after.at), 0))}
	minutes := after.at.Sub(before.at).Minutes()
	res.cpuPerMinute = float64(after.r[0].cpuTicks-before.r[0].cpuTicks) / clockTicks() / minutes
	var err error
	if res.end, err = readMemory(p.Pid()); err != nil {
		return res, err
	}
	if res.maps, err = topMappings(p.Pid()); err != nil {
		return res, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return res, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	m, err := metricSums(resp.Body, append([]string{"go_goroutines", "go_memstats_heap_inuse_bytes"}, runtimeMemory...)...)
	if err != nil {
		return res, err
	}
	res.goroutines, res.heapInuse, res.runtime = m["go_goroutines"], m["go_memstats_heap_inuse_bytes"], m
	return res, nil
}

// renderFootprint is the markdown report.
func renderFootprint(o footprintOptions, rs []footprintResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "`go run ./bench footprint %s`: %d pods on %d nodes, interval %s, window %s, churn %g/s, disk buffer %t\n\n",
		strings.Join(os.Args[2:], " "), o.spec.pods, o.spec.nodes, o.interval, o.window, o.churn, o.diskBuffer)
	rows := [][]string{}
	for _, r := range rs {
		rows = append(rows, []string{r.title, mib(r.peak), mib(r.steady), mib(r.end.anon), mib(r.end.file),
			mib(uint64(r.heapInuse)), fmt.Sprintf("%.0f", r.goroutines), fmt.Sprintf("%.3f", r.cpuPerMinute)})
	}
	b.WriteString(table([]string{"process", "peak RSS (VmHWM)", "steady RSS (median)", "RssAnon", "RssFile", "heap in use", "goroutines", "CPU-s a minute"}, rows))
	if len(rs) == 2 && rs[1].peak > 0 {
		fmt.Fprintf(&b, "\nRatios, kube-state-push / kube-state-metrics alone: peak RSS %.2f×, CPU %.2f×.\n",
			float64(rs[0].peak)/float64(rs[1].peak), rs[0].cpuPerMinute/max(rs[1].cpuPerMinute, 1e-9))
	}
	for _, r := range rs {
		var parts []string
		for _, name := range runtimeMemory {
			parts = append(parts, fmt.Sprintf("%s %s", strings.TrimSuffix(strings.TrimPrefix(name, "go_memstats_"), "_bytes"), mib(uint64(r.runtime[name]))))
		}
		fmt.Fprintf(&b, "\n%s, Go runtime memory: %s.\n", r.title, strings.Join(parts, ", "))
		fmt.Fprintf(&b, "\n%s, resident by mapping:\n\n", r.title)
		var mrows [][]string
		for _, m := range r.maps[:min(6, len(r.maps))] {
			mrows = append(mrows, []string{m.name, mib(m.rss)})
		}
		b.WriteString(table([]string{"mapping", "RSS"}, mrows))
	}
	return b.String()
}
