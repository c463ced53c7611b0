// Command bench-e2e measures kube-state-push side by side with the pair it
// replaces, kube-state-metrics scraped by Prometheus in agent mode, against
// one real kube-apiserver loaded with a synthetic cluster.
//
// It starts etcd and kube-apiserver, creates the cluster (nodes, namespaces,
// deployments with replica sets, services, config maps, secrets and pods in
// varied states), starts a Remote-Write receiver in this process (which
// decodes and counts, and optionally forwards to VictoriaMetrics), and keeps
// rewriting the restart count of some pods. Then it runs each setup in turn
// on the same objects, interval and receiver: after its first complete
// snapshot or scrape and one more interval, it measures CPU and RSS from
// /proc, what arrives at the receiver, and the time from a pod change to
// its sample at the receiver. It prints one markdown table with the ratios
// and writes it below the marker in docs/performance.md.
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
	// only is agent, ksm or both; first is the setup run first with both.
	only, first string
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
	fs.StringVar(&o.only, "only", "both", "which setup to run: agent, ksm or both")
	fs.StringVar(&o.first, "first", "agent", "with -only both, which setup runs first: agent, ksm, or both (agent, ksm, ksm, agent: each ratio measured in both orders)")
	fs.StringVar(&o.agentBin, "agent", "bin/kube-state-push", "the kube-state-push binary (make build)")
	fs.IntVar(&o.workers, "load-workers", 32, "concurrent requests while loading the cluster")
	fs.BoolVar(&o.keep, "keep", false, "keep the working folder with every program's log")
	fs.BoolVar(&o.diskBuffer, "disk-buffer", true, "run kube-state-push with a disk buffer, as deploy/ does (the Prometheus agent writes its WAL)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	var errs []error
	if o.receiver != "null" && o.receiver != "victoriametrics" {
		errs = append(errs, fmt.Errorf("-receiver: want null or victoriametrics, not %q", o.receiver))
	}
	if o.only != "agent" && o.only != "ksm" && o.only != "both" {
		errs = append(errs, fmt.Errorf("-only: want agent, ksm or both, not %q", o.only))
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

// order returns the setups to run, in order.
func (o options) order() []side {
	switch o.only {
	case "agent":
		return sides[:1]
	case "ksm":
		return sides[1:]
	}
	switch o.first {
	case "ksm":
		return []side{sides[1], sides[0]}
	case "both":
		// Ours first, then theirs first: a machine that gets busier (or
		// quieter) during the run favours neither.
		return []side{sides[0], sides[1], sides[1], sides[0]}
	}
	return sides
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
	need := []string{"etcd", "kube-apiserver", "kube-state-metrics", "prometheus"}
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
		switch {
		case len(rep.results) == 4:
			// -first both: the second pair, theirs first.
			rep.agent2, rep.ksm2 = rep.results[3], rep.results[2]
		case len(rep.results) > 2:
		case s.key == "agent":
			rep.agent = res
		case s.key == "ksm":
			rep.ksm = res
		}
	}
	rep.machine.loadEnd = loadAverage()

	out := rep.render()
	fmt.Println(out)
	if o.out != "" {
		if err := writeDoc(o.out, out); err != nil {
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
