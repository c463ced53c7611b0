// Command bench-e2e measures kube-state-push side by side with the pairs it
// replaces, kube-state-metrics scraped by Prometheus in agent mode or by
// vmagent, against one real kube-apiserver loaded with a synthetic cluster.
//
// It starts etcd and kube-apiserver, creates the cluster (nodes, namespaces,
// deployments with replica sets, services, config maps, secrets and pods in
// varied states), starts a Remote-Write receiver in this process (which
// decodes and counts, and optionally forwards to VictoriaMetrics), and keeps
// rewriting the restart count of some pods. Then it runs each setup in turn
// on the same objects, interval and receiver: after its first complete
// snapshot or scrape and one more interval, it measures CPU and RSS from
// /proc, what arrives at the receiver, and the time from a pod change to
// its sample at the receiver. It prints markdown tables with the ratios
// and writes them below the marker in docs/performance.md, in the section
// of the cluster's size (edge or not).
//
// Run it with `make bench-e2e` (BENCH_FLAGS passes flags); it is not part
// of `make test`. `bench soak` (`make soak`) is the long run: see soak.go.
// `bench footprint` measures the fixed cost at edge size: see footprint.go.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// options are the command-line flags.
type options struct {
	// spec sizes the synthetic cluster.
	spec clusterSpec
	// interval is the snapshot and scrape interval; window the measured
	// time after warm-up.
	interval, window time.Duration
	// churn is pod status updates per second.
	churn float64
	// receiver is null or victoriametrics.
	receiver string
	// out is the markdown file to write; empty: print only.
	out string
	// only is the comma-separated keys of the setups to run, "all", or
	// "both" (agent and ksm); first is agent, ksm or both.
	only, first string
	// profile is "" or edge (edgeSpec).
	profile string
	// agentBin is the kube-state-push binary.
	agentBin string
	// workers is the number of concurrent requests while loading.
	workers int
	// keep keeps the working folder (logs, data) instead of removing it.
	keep bool
	// diskBuffer runs kube-state-push with a disk buffer.
	diskBuffer bool
}

// parseFlags reads the flags from args.
func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench-e2e", flag.ContinueOnError)
	fs.IntVar(&o.spec.pods, "pods", 10000, "pods in the synthetic cluster")
	fs.IntVar(&o.spec.nodes, "nodes", 1000, "nodes the pods are spread over")
	fs.IntVar(&o.spec.containers, "containers", 2, "containers per pod (every fourth pod has one more, every second an init container)")
	fs.IntVar(&o.spec.namespaces, "namespaces", 20, "namespaces the deployments are spread over")
	fs.DurationVar(&o.interval, "interval", 30*time.Second, "snapshot interval of kube-state-push and scrape interval of the Prometheus agent")
	fs.DurationVar(&o.window, "window", 5*time.Minute, "measured window, after the first complete interval and one more")
	fs.Float64Var(&o.churn, "churn", 10, "pod status updates per second (each one a lag marker); 0 turns churn and lag off")
	fs.StringVar(&o.receiver, "receiver", "null", "null (decode and count in this process) or victoriametrics (also forward to VictoriaMetrics)")
	fs.StringVar(&o.out, "out", "docs/performance.md", "markdown file whose generated part is rewritten; empty: print only")
	fs.StringVar(&o.only, "only", "all", "setups to run, comma-separated: "+strings.Join(sideKeys(), ", ")+"; all, or both (agent and ksm)")
	fs.StringVar(&o.first, "first", "agent", "with several setups, which runs first: agent (then the others in order), ksm (the others, then agent), "+
		"or both (agent, the others, the others backwards, agent: each ratio measured in both orders)")
	fs.StringVar(&o.profile, "profile", "", "edge: about 100 objects (3 namespaces, 3 nodes, 16 pods) and 1 pod update a second, instead of -pods, -nodes, -namespaces and -churn")
	fs.StringVar(&o.agentBin, "agent", "bin/kube-state-push", "the kube-state-push binary (make build)")
	fs.IntVar(&o.workers, "load-workers", 32, "concurrent requests while loading the cluster")
	fs.BoolVar(&o.keep, "keep", false, "keep the working folder with every program's log")
	fs.BoolVar(&o.diskBuffer, "disk-buffer", true, "run kube-state-push with a disk buffer, as deploy/ does (the Prometheus agent writes its WAL)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	if o.profile == "edge" {
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "pods", "nodes", "namespaces", "containers", "churn":
				errs = append(errs, fmt.Errorf("-%s: -profile edge sets it", f.Name))
			}
		})
		o.spec, o.churn = edgeSpec, 1
	} else if o.profile != "" {
		errs = append(errs, fmt.Errorf("-profile: want edge or nothing, not %q", o.profile))
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if o.receiver != "null" && o.receiver != "victoriametrics" {
		errs = append(errs, fmt.Errorf("-receiver: want null or victoriametrics, not %q", o.receiver))
	}
	if _, err := selectSides(o.only); err != nil {
		errs = append(errs, err)
	}
	if o.first != "agent" && o.first != "ksm" && o.first != "both" {
		errs = append(errs, fmt.Errorf("-first: want agent, ksm or both, not %q", o.first))
	}
	if o.interval < time.Second {
		errs = append(errs, fmt.Errorf("-interval: must be at least 1s, not %s", o.interval))
	}
	if o.window < o.interval {
		errs = append(errs, fmt.Errorf("-window: must be at least one interval (%s), not %s", o.interval, o.window))
	}
	if o.churn < 0 {
		errs = append(errs, fmt.Errorf("-churn: must not be negative, not %g", o.churn))
	}
	if o.workers < 1 {
		errs = append(errs, fmt.Errorf("-load-workers: must be at least 1, not %d", o.workers))
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

// selectSides returns the setups -only names, in the order of sides.
func selectSides(only string) ([]side, error) {
	switch only {
	case "all":
		return sides, nil
	case "both":
		return sides[:2], nil
	}
	want := map[string]bool{}
	for k := range strings.SplitSeq(only, ",") {
		want[strings.TrimSpace(k)] = true
	}
	var out []side
	for _, s := range sides {
		if want[s.key] {
			out = append(out, s)
			delete(want, s.key)
		}
	}
	if len(want) > 0 || len(out) == 0 {
		return nil, fmt.Errorf("-only: want %s (comma-separated), all or both, not %q", strings.Join(sideKeys(), ", "), only)
	}
	return out, nil
}

// order returns the setups to run, in order.
func (o options) order() []side {
	sel, err := selectSides(o.only)
	if err != nil || len(sel) < 2 {
		return sel
	}
	switch o.first {
	case "ksm":
		return slices.Concat(sel[1:], sel[:1])
	case "both":
		// Ours first, then theirs first: a machine that gets busier (or
		// quieter) during the run favours neither.
		back := slices.Clone(sel)
		slices.Reverse(back)
		return slices.Concat(sel, back)
	}
	return sel
}

// orders splits the results of a run into its orders: one, or two with
// -first both (the second half ran backwards).
func (o options) orders(results []*sideResult) [][]*sideResult {
	if o.first != "both" || len(results) < 4 {
		return [][]*sideResult{results}
	}
	n := len(results) / 2
	return [][]*sideResult{results[:n], results[n:]}
}

// main parses the flags and runs the benchmark: exit status 2 for bad
// flags, 1 for a run that failed.
func main() {
	if len(os.Args) > 1 && os.Args[1] == "soak" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := soakMain(ctx, os.Args[2:])
		stop()
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == "footprint" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := footprintMain(ctx, os.Args[2:])
		stop()
		os.Exit(code)
	}
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-e2e: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "bench-e2e: %v\n", err)
		stop()
		os.Exit(1)
	}
}

// logf prints a progress line with the time.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format(time.TimeOnly), fmt.Sprintf(format, args...))
}

// run does the whole benchmark.
func run(ctx context.Context, o options) error {
	if _, err := os.Stat(o.agentBin); err != nil {
		return fmt.Errorf("the agent binary %s: %w (run make build)", o.agentBin, err)
	}
	need := []string{"etcd", "kube-apiserver", "kube-state-metrics", "prometheus", "vmagent"}
	if o.receiver == "victoriametrics" {
		need = append(need, "victoria-metrics")
	}
	for _, b := range need {
		if _, err := testenv.Binary(b); err != nil {
			return err
		}
	}
	rep := &report{
		command: commandLine(), machine: readMachine(), versions: versions(o.agentBin, o.receiver),
		receiver: o.receiver, interval: o.interval, window: o.window, churn: o.churn, spec: o.spec, diskBuffer: o.diskBuffer,
	}

	workDir, err := os.MkdirTemp("", "ksp-bench-")
	if err != nil {
		return fmt.Errorf("creating the working folder: %w", err)
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
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer cp.Stop()
	cfg := cp.RESTConfig()
	// No client-side rate limit while loading and churning; protobuf is
	// what the API server stores, so it costs least to decode.
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}

	logf("loading %d pods on %d nodes in %d namespaces", o.spec.pods, o.spec.nodes, o.spec.namespaces)
	cl, err := loadCluster(ctx, client, o.spec, o.workers, logf)
	if err != nil {
		return err
	}
	rep.objects, rep.loadTook = cl.objects, cl.took
	logf("loaded %v in %s", cl.objects, cl.took.Round(time.Second))

	forward := ""
	if o.receiver == "victoriametrics" {
		vm, err := testenv.StartVictoriaMetrics(ctx, workDir)
		if err != nil {
			return fmt.Errorf("starting VictoriaMetrics: %w", err)
		}
		defer vm.Stop()
		forward = vm.WriteURL()
	}
	recv := newReceiver(forward)
	writeURL, stopRecv, err := recv.serve()
	if err != nil {
		return err
	}
	defer stopRecv()

	ch := newChurner(client, recv, cl.churnable, o.churn)
	churnCtx, stopChurn := context.WithCancel(ctx)
	defer stopChurn()
	go ch.run(churnCtx)

	env := sideEnv{kubeconfig: cp.Kubeconfig, writeURL: writeURL, interval: o.interval, agentBin: o.agentBin, diskBuffer: o.diskBuffer}
	mo := measureOpts{window: o.window, interval: o.interval, ticksPerSecond: clockTicks(), logf: logf}
	for _, s := range o.order() {
		res, err := measureSide(ctx, s, workDir, env, recv, ch, mo)
		if err != nil {
			return err
		}
		logf("%s: CPU %.2f s in the window, peak RSS %s, %d samples per interval", s.title, res.cpuWindow, mib(res.peak), res.perInterval)
		rep.results = append(rep.results, res)
	}
	rep.setOrders(o.orders(rep.results))
	rep.machine.loadEnd = loadAverage()

	out := rep.render()
	fmt.Println(out)
	if o.out != "" {
		if err := writeDocSection(o.out, rep.heading(), out); err != nil {
			return err
		}
		logf("wrote %s", o.out)
	}
	return nil
}

// commandLine is how the program was invoked: `make bench-e2e` when make
// started it (with BENCH_FLAGS), else its arguments.
func commandLine() string {
	args := strings.Join(os.Args[1:], " ")
	if os.Getenv("MAKELEVEL") != "" {
		if f := os.Getenv("BENCH_FLAGS"); f != "" {
			return "make bench-e2e BENCH_FLAGS='" + f + "'"
		}
		return "make bench-e2e"
	}
	return strings.TrimSpace("go run ./bench " + args)
}
