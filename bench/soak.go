package main

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
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// `bench soak` runs the agent for a long time against the real API server
// and VictoriaMetrics, with a disk buffer, while pods, namespaces and a
// CRD churn, the receiver goes away for a while and the configuration is
// reloaded; it samples the agent's memory, goroutines, descriptors, series
// and disk buffer, judges whether each is flat over the second half, and
// checks at the end that the receiver holds the series the objects left
// give. Run it with `make soak` (SOAK_DURATION, SOAK_FLAGS).

// soakOptions are the soak's flags.
type soakOptions struct {
	spec clusterSpec
	// duration is the whole run, after loading; interval the agent's
	// snapshot_interval.
	duration, interval time.Duration
	// churn is pod writes per second.
	churn    float64
	agentBin string
	// out is the markdown file to write; empty: print only.
	out  string
	keep bool
}

func parseSoakFlags(args []string) (soakOptions, error) {
	var o soakOptions
	fs := flag.NewFlagSet("bench-e2e soak", flag.ContinueOnError)
	fs.IntVar(&o.spec.pods, "pods", 2000, "pods, kept at this number by the churn")
	fs.IntVar(&o.spec.nodes, "nodes", 20, "nodes the pods are bound to")
	fs.IntVar(&o.spec.containers, "containers", 2, "containers per pod (every fourth pod has one more, every second an init container)")
	fs.IntVar(&o.spec.namespaces, "namespaces", 20, "namespaces the pods are spread over")
	fs.DurationVar(&o.duration, "duration", time.Hour, "length of the run after loading; the outage, reloads, namespace and CRD cycles scale with it")
	fs.DurationVar(&o.interval, "interval", time.Second, "the agent's snapshot_interval")
	fs.Float64Var(&o.churn, "churn", 3, "pod writes per second: label updates, deletes and creates in turn")
	fs.StringVar(&o.agentBin, "agent", "bin/kube-state-push", "the kube-state-push binary (make build)")
	fs.StringVar(&o.out, "out", "docs/soak.md", "markdown file whose generated part is rewritten; empty: print only")
	fs.BoolVar(&o.keep, "keep", false, "keep the working folder with every program's log")
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
	if o.duration < 2*time.Minute {
		errs = append(errs, fmt.Errorf("-duration: must be at least 2m, not %s", o.duration))
	}
	if o.churn < 0 {
		errs = append(errs, fmt.Errorf("-churn: must not be negative, not %g", o.churn))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"pods", o.spec.pods}, {"nodes", o.spec.nodes}, {"containers", o.spec.containers}, {"namespaces", o.spec.namespaces}} {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("-%s: must be at least 1, not %d", f.name, f.v))
		}
	}
	return o, errors.Join(errs...)
}

// samplePeriod is how often the agent is sampled: every minute, more
// often in a run shorter than an hour, so that there are always 60.
func (o soakOptions) samplePeriod() time.Duration { return min(time.Minute, o.duration/60) }

// event is something the soak does at a point of the run.
type event struct {
	at   time.Duration
	name string
	do   func(context.Context) error
}

// schedule returns the run's events in time order, scaled to its length
// (the figures in brackets are for an hour): the receiver stops at 15 %
// and starts again a sixth of the run later (10 minutes); a reload every
// third (20 minutes); a namespace deleted and created again every twelfth
// (5 minutes); the CRD created at a quarter of every sixth and deleted at
// three quarters of it.
func schedule(d time.Duration, outageStart, outageEnd, reload func(context.Context) error, cycleNamespace func(context.Context, string) error, crdUp, crdDown func(context.Context) error, namespaces int) []event {
	frac := func(f float64) time.Duration { return time.Duration(f * float64(d)) }
	evs := []event{
		{frac(0.15), "receiver stopped", outageStart},
		{frac(0.15 + 1.0/6), "receiver started", outageEnd},
		{frac(1.0 / 3), "reload", reload},
		{frac(2.0 / 3), "reload", reload},
	}
	for k := 1; k < 12; k++ {
		ns := soakNamespace(k % namespaces)
		evs = append(evs, event{frac(float64(k) / 12), "namespace " + ns + " deleted and created", func(ctx context.Context) error { return cycleNamespace(ctx, ns) }})
	}
	for k := range 6 {
		evs = append(evs,
			event{frac((float64(k) + 0.25) / 6), "CRD created", crdUp},
			event{frac((float64(k) + 0.75) / 6), "CRD deleted", crdDown})
	}
	sortEvents(evs)
	return evs
}

// sortEvents sorts by time, keeping the order of events at the same time.
func sortEvents(evs []event) {
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].at < evs[j-1].at; j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}

// soakAgentConfig is the agent's configuration; reload n changes the
// endpoint (a header, so it is rebuilt on the same disk buffer) and, on
// odd reloads, the pod labels exported (so pods get new series maps).
func soakAgentConfig(kubeconfig, writeURL, listen, buffer string, interval time.Duration, reload int) string {
	labels := "[app, rev]"
	if reload%2 == 1 {
		labels = "[app, rev, tier]"
	}
	return fmt.Sprintf(`kubeconfig: %q
snapshot_interval: %s
listen_address: %q
push_self_metrics: false
resources: [namespaces, nodes, pods]
metric_labels_allowlist:
  pods: %s
custom_resource_state:%s
remote_write:
  - url: %q
    headers: {X-Soak-Reload: "%d"}
    disk_buffer: {directory: %q}
`, kubeconfig, interval, listen, labels, gearDocument, writeURL, reload, buffer)
}

// soakMain runs `bench soak`: exit status 2 for bad flags, 1 for a run
// that failed or found growth or a difference.
func soakMain(ctx context.Context, args []string) int {
	o, err := parseSoakFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		return 2
	}
	rep, err := runSoak(ctx, o)
	if rep != nil {
		out := rep.render()
		fmt.Println(out)
		if o.out != "" && rep.complete {
			if err := writeDocAt(o.out, soakDocIntro, soakDocMarker, out); err != nil {
				fmt.Fprintf(os.Stderr, "soak: %v\n", err)
				return 1
			}
			logf("wrote %s", o.out)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		return 1
	}
	if !rep.passed() {
		fmt.Fprintln(os.Stderr, "soak: FAILED: see the table above")
		return 1
	}
	fmt.Fprintln(os.Stderr, "soak: passed")
	return 0
}

// runSoak does the whole soak. The report is returned, as far as it got,
// even with an error.
func runSoak(ctx context.Context, o soakOptions) (*soakReport, error) {
	if _, err := os.Stat(o.agentBin); err != nil {
		return nil, fmt.Errorf("the agent binary %s: %w (run make build)", o.agentBin, err)
	}
	for _, b := range []string{"etcd", "kube-apiserver", "victoria-metrics"} {
		if _, err := testenv.Binary(b); err != nil {
			return nil, err
		}
	}
	rep := &soakReport{opts: o, command: soakCommandLine(), machine: readMachine(), versions: soakVersions(o.agentBin)}
	workDir, err := os.MkdirTemp("", "ksp-soak-")
	if err != nil {
		return nil, fmt.Errorf("creating the working folder: %w", err)
	}
	if o.keep {
		logf("working folder (kept): %s", workDir)
	} else {
		defer os.RemoveAll(workDir)
	}

	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	cp, err := testenv.StartControlPlane(startCtx, workDir)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	defer cp.Stop()
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	sc := newSoakCluster(client, dc, o.spec)
	logf("loading %d pods on %d nodes in %d namespaces", o.spec.pods, o.spec.nodes, o.spec.namespaces)
	if err := sc.load(ctx, 8); err != nil {
		return nil, err
	}

	vm, err := testenv.StartVictoriaMetrics(ctx, workDir)
	if err != nil {
		return nil, fmt.Errorf("starting VictoriaMetrics: %w", err)
	}
	defer func() { vm.Stop() }()

	ag, err := startSoakAgent(ctx, workDir, o.agentBin, cp.Kubeconfig, vm.WriteURL(), o.interval)
	if err != nil {
		return nil, err
	}
	defer ag.proc.Stop(30 * time.Second)
	logf("agent ready (pid %d); running for %s, sampling every %s", ag.proc.Pid(), o.duration, o.samplePeriod())

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc.churn(runCtx, o.churn)
	}()
	evs := schedule(o.duration,
		func(context.Context) error { vm.Stop(); return nil },
		func(ctx context.Context) error { return vm.Restart(ctx) },
		ag.reload, sc.cycleNamespace, sc.crdUp, sc.crdDown, o.spec.namespaces)

	start := time.Now()
	sampleT := time.NewTicker(o.samplePeriod())
	defer sampleT.Stop()
	takeSample := func() error {
		s, err := ag.sample(ctx)
		if err != nil {
			return err
		}
		rep.samples = append(rep.samples, s)
		logf("%s: RSS %s, heap %s, %v goroutines, %v fds, %v series, buffer %s", time.Since(start).Round(time.Second),
			mibOf(s.values[0]), mibOf(s.values[1]), s.values[2], s.values[3], s.values[4], mibOf(s.values[5]))
		return nil
	}
	if err := takeSample(); err != nil {
		return rep, err
	}
	end := time.NewTimer(o.duration)
	defer end.Stop()
	evTimer := time.NewTimer(0)
	defer evTimer.Stop()
	next := 0
	resetEvent := func() {
		if next < len(evs) {
			evTimer.Reset(time.Until(start.Add(evs[next].at)))
		}
	}
	resetEvent()
loop:
	for {
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-end.C:
			break loop
		case <-sampleT.C:
			if err := takeSample(); err != nil {
				return rep, err
			}
		case <-evTimer.C:
			if next >= len(evs) {
				continue
			}
			ev := evs[next]
			next++
			t0 := time.Now()
			if err := ev.do(runCtx); err != nil {
				return rep, fmt.Errorf("%s: %w", ev.name, err)
			}
			rep.events = append(rep.events, ev.name)
			logf("%s: %s (%s)", time.Since(start).Round(time.Second), ev.name, time.Since(t0).Round(100*time.Millisecond))
			resetEvent()
		}
		if ag.proc.Exited() {
			return rep, fmt.Errorf("the agent exited: %w; log %s:\n%s", ag.proc.Err(), ag.proc.Log, ag.proc.Tail())
		}
	}
	if err := takeSample(); err != nil {
		return rep, err
	}
	stopRun()
	<-done
	rep.counts = sc.counts()
	rep.ran = time.Since(start)
	logf("churn stopped: %+v; comparing the receiver with the objects", rep.counts)
	rep.checks, err = settle(ctx, client, dc, vm, ag, o.interval)
	if err != nil {
		return rep, err
	}
	// For whoever wonders where the memory went: go tool pprof reads it.
	if err := ag.saveHeapProfile(ctx, filepath.Join(workDir, "heap.pprof")); err != nil {
		logf("no heap profile: %v", err)
	} else if o.keep {
		logf("heap profile at the end: %s", filepath.Join(workDir, "heap.pprof"))
	}
	rep.reloads, rep.reloadFailures = ag.reloads, ag.reloadFailures
	rep.trends = trends(rep.samples)
	rep.complete = true
	return rep, nil
}

// soakAgent is the agent process under test.
type soakAgent struct {
	proc *testenv.Process
	// cfgPath is its configuration file; metricsURL its own /metrics.
	cfgPath, metricsURL string
	// write rewrites the configuration for reload n.
	write func(n int) error
	// reloads done, and those that did not take.
	reloads, reloadFailures int
}

// startSoakAgent starts the agent and waits until it is ready.
func startSoakAgent(ctx context.Context, dir, bin, kubeconfig, writeURL string, interval time.Duration) (*soakAgent, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	listen := "127.0.0.1:" + strconv.Itoa(port)
	ag := &soakAgent{cfgPath: filepath.Join(dir, "kube-state-push.yaml"), metricsURL: "http://" + listen + "/metrics"}
	buffer := filepath.Join(dir, "buffer")
	ag.write = func(n int) error {
		return os.WriteFile(ag.cfgPath, []byte(soakAgentConfig(kubeconfig, writeURL, listen, buffer, interval, n)), 0o600)
	}
	if err := ag.write(0); err != nil {
		return nil, fmt.Errorf("writing the agent's config: %w", err)
	}
	if ag.proc, err = testenv.Start(dir, "kube-state-push", bin, "--config.file="+ag.cfgPath, "--web.enable-pprof"); err != nil {
		return nil, err
	}
	err = retry(ctx, 3*time.Minute, func() error {
		if ag.proc.Exited() {
			return errors.New("exited")
		}
		resp, err := http.Get("http://" + listen + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %d", resp.StatusCode)
		}
		return nil
	})
	if err == nil {
		// Start the samples once snapshots flow, not before the first.
		err = retry(ctx, time.Minute, func() error {
			m, err := ag.metrics(ctx, "kube_state_push_snapshot_total")
			if err != nil {
				return err
			}
			if m["kube_state_push_snapshot_total"] < 3 {
				return errors.New("fewer than three snapshots")
			}
			return nil
		})
	}
	if err != nil {
		ag.proc.Kill()
		return nil, fmt.Errorf("waiting for the agent: %w; log %s:\n%s", err, ag.proc.Log, ag.proc.Tail())
	}
	return ag, nil
}

// saveHeapProfile writes the agent's heap profile to path.
func (ag *soakAgent) saveHeapProfile(ctx context.Context, path string) error {
	return download(ctx, strings.TrimSuffix(ag.metricsURL, "/metrics")+"/debug/pprof/heap", path)
}

// metrics reads the named metrics from the agent's own page.
func (ag *soakAgent) metrics(ctx context.Context, names ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ag.metricsURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the agent's metrics: %w", err)
	}
	defer resp.Body.Close()
	return metricSums(resp.Body, names...)
}

// sample reads /proc and the agent's metrics.
func (ag *soakAgent) sample(ctx context.Context) (soakSample, error) {
	pid := ag.proc.Pid()
	s := soakSample{at: time.Now()}
	r, err := readProc(pid)
	if err != nil {
		return s, fmt.Errorf("reading /proc of the agent: %w", err)
	}
	fds, err := countFDs(pid)
	if err != nil {
		return s, fmt.Errorf("counting the agent's descriptors: %w", err)
	}
	m, err := ag.metrics(ctx, "go_memstats_heap_inuse_bytes", "go_goroutines", "kube_state_push_series", "kube_state_push_remote_buffer_bytes")
	if err != nil {
		return s, err
	}
	s.values = [6]float64{float64(r.rss), m["go_memstats_heap_inuse_bytes"], m["go_goroutines"], float64(fds),
		m["kube_state_push_series"], m["kube_state_push_remote_buffer_bytes"]}
	return s, nil
}

// reload rewrites the configuration, sends SIGHUP and waits until the
// agent says the reload worked.
func (ag *soakAgent) reload(ctx context.Context) error {
	before, err := ag.metrics(ctx, "kube_state_push_config_last_reload_success_timestamp_seconds")
	if err != nil {
		return err
	}
	ag.reloads++
	if err := ag.write(ag.reloads); err != nil {
		return err
	}
	if err := syscall.Kill(ag.proc.Pid(), syscall.SIGHUP); err != nil {
		return fmt.Errorf("sending SIGHUP: %w", err)
	}
	key := "kube_state_push_config_last_reload_success_timestamp_seconds"
	err = retry(ctx, time.Minute, func() error {
		m, err := ag.metrics(ctx, key, "kube_state_push_config_last_reload_successful")
		if err != nil {
			return err
		}
		if m[key] <= before[key] || m["kube_state_push_config_last_reload_successful"] != 1 {
			return errors.New("not reloaded yet")
		}
		return nil
	})
	if err != nil {
		ag.reloadFailures++
		logf("reload %d did not take: %v", ag.reloads, err)
	}
	return nil
}
