// Command kube-state-push watches a Kubernetes cluster and pushes
// kube-state-metrics-compatible series to Prometheus remote-write endpoints.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/kube-state-push/kube-state-push/agent"
	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/internal/redact"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "check-config" {
		os.Exit(checkConfig(os.Args[2:]))
	}
	os.Exit(run())
}

// checkConfig implements `kube-state-push check-config FILE`: it loads and
// validates the file and prints the effective configuration, secrets
// masked.
func checkConfig(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: kube-state-push check-config FILE")
		return 2
	}
	cfg, err := config.LoadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out, err := cfg.Effective()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, _ = os.Stdout.Write(out)
	return 0
}

// reloadOn reloads the configuration file on every signal from hup until
// ctx ends. Reload logs the outcome; a refused configuration leaves the
// running one in place.
func reloadOn(ctx context.Context, hup <-chan os.Signal, a *agent.Agent) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_ = a.Reload(ctx)
		}
	}
}

func run() int {
	configFile := flag.String("config.file", "config.yaml", "Path of the configuration file.")
	logLevel := flag.String("log.level", "info", "Log level: debug, info, warn or error.")
	enableLifecycle := flag.Bool("web.enable-lifecycle", false, "Enable reloading via HTTP request (POST /-/reload); SIGHUP reloads without it.")
	enablePprof := flag.Bool("web.enable-pprof", false, "Serve Go's profiles under /debug/pprof/ on listen_address.")
	webConfigFile := flag.String("web.config.file", "", "Path of an exporter-toolkit web configuration (TLS, client certificates, basic auth) for listen_address; empty serves plain HTTP.")
	version := flag.Bool("version", false, "Print the version and exit.")
	flag.Parse()
	if *version {
		fmt.Println("kube-state-push", agent.Version)
		return 0
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "kube-state-push: --log.level: %v\n", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	klog.SetSlogLogger(logger.With("component", "client-go"))

	cfg, err := config.LoadFile(*configFile)
	if err != nil {
		// Plain text, one problem a line: a log line would quote and escape
		// the messages a person has to read.
		fmt.Fprintf(os.Stderr, "kube-state-push: invalid configuration:\n%v\n", err)
		return 1
	}
	if pct := agent.SetGCPercentDefault(); pct > 0 {
		logger.Debug("Go garbage collector target set", "gogc", pct)
	}
	// The garbage collector works harder as the container's memory limit
	// nears, instead of the kernel killing the agent.
	if limit, err := agent.SetMemoryLimitFromCgroup("/sys/fs/cgroup"); err != nil {
		logger.Warn("no Go memory limit from the cgroup", "err", err)
	} else if limit > 0 {
		logger.Info("Go memory limit set from the cgroup memory limit", "bytes", limit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// SIGHUP reloads the configuration; caught from here on, since its
	// default action would end the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	a, err := agent.New(cfg, agent.Options{Logger: logger, ConfigFile: *configFile, EnableLifecycle: *enableLifecycle, EnablePprof: *enablePprof, WebConfigFile: *webConfigFile})
	if err != nil {
		logger.Error("starting", "err", redact.Error(err))
		return 1
	}
	if addr := a.Addr(); addr != nil {
		logger.Info("serving self-metrics", "addr", addr.String(), "paths", "/metrics /healthz /readyz /-/reload", "lifecycle", *enableLifecycle)
	}
	go reloadOn(ctx, hup, a)
	if err := a.Run(ctx); err != nil {
		logger.Error("stopped with data loss", "err", redact.Error(err))
		return 1
	}
	return 0
}
