// Command demo runs kube-state-push locally, end to end: a local control
// plane (etcd + kube-apiserver) with sample nodes and pods, a local
// Prometheus with its remote-write receiver, and the agent binary pushing
// into it. It prints a few dashboard queries and where to open Prometheus,
// then runs until Ctrl-C (or exits at once with -once).
//
// Run it with `make demo`, which first builds the real parts.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	once := flag.Bool("once", false, "print the queries and exit instead of running until Ctrl-C")
	dir := flag.String("dir", ".demo", "folder for data, logs and the agent's config")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.RemoveAll(*dir); err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	abs, _ := filepath.Abs(*dir)

	step("starting etcd and kube-apiserver")
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cp, err := testenv.StartControlPlane(startCtx, abs)
	if err != nil {
		return err
	}
	defer cp.Stop()
	step("starting Prometheus with its remote-write receiver")
	prom, err := testenv.StartPrometheus(startCtx, abs)
	if err != nil {
		return err
	}
	defer prom.Stop()

	step("creating sample nodes and pods")
	client, err := cp.Client()
	if err != nil {
		return err
	}
	if _, err := testenv.CreateSampleCluster(startCtx, client, "demo", "demo"); err != nil {
		return err
	}

	step("building and starting kube-state-push")
	bin := filepath.Join(abs, "kube-state-push")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kube-state-push")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the agent: %w", err)
	}
	port, err := testenv.FreePort()
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(abs, "config.yaml")
	cfg := fmt.Sprintf(`kubeconfig: %s
resources: [nodes, pods]
snapshot_interval: 5s
listen_address: 127.0.0.1:%d
external_labels:
  cluster: demo
remote_write:
  - url: %s
    name: local-prometheus
    queue_config:
      batch_send_deadline: 1s
`, cp.Kubeconfig, port, prom.WriteURL())
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	agent, err := testenv.Start(abs, "kube-state-push", bin, "--config.file="+cfgPath)
	if err != nil {
		return err
	}
	defer agent.Stop(40 * time.Second)
	agentURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitHTTP(ctx, agentURL+"/readyz", 60*time.Second); err != nil {
		return fmt.Errorf("agent not ready: %w; log:\n%s", err, agent.Tail())
	}
	step("waiting for two snapshots to land")
	select {
	case <-time.After(11 * time.Second):
	case <-ctx.Done():
		return nil
	}

	queries := []string{
		`sum(kube_pod_status_phase{phase="Running"})`,
		`sum(kube_pod_status_phase) by (phase)`,
		`kube_pod_container_status_waiting_reason == 1`,
		`kube_pod_container_status_terminated_reason == 1`,
		`sum(kube_pod_container_resource_requests{resource="cpu"}) by (node)`,
		`kube_node_status_allocatable{resource="pods"}`,
		`count(kube_pod_info) by (namespace, cluster)`,
	}
	for _, q := range queries {
		res, err := prom.Query(ctx, q)
		if err != nil {
			return err
		}
		fmt.Printf("\n$ %s\n", q)
		if len(res) == 0 {
			fmt.Println("  (no data)")
		}
		for _, s := range res {
			fmt.Printf("  %s  %g\n", formatLabels(s.Metric), s.Value)
		}
	}
	fmt.Printf("\nPrometheus UI:        %s/query\n", prom.URL)
	fmt.Printf("Agent self-metrics:   %s/metrics\n", agentURL)
	fmt.Printf("Agent config and logs: %s\n", abs)
	if *once {
		return nil
	}
	fmt.Println("\nRunning; press Ctrl-C to stop.")
	<-ctx.Done()
	step("stopping")
	return nil
}

func step(s string) { fmt.Printf("==> %s\n", s) }

func formatLabels(m map[string]string) string {
	var parts []string
	name := m["__name__"]
	for k, v := range m {
		if k != "__name__" {
			parts = append(parts, fmt.Sprintf("%s=%q", k, v))
		}
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ", ") + "}"
}

func waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url) //nolint:noctx // polling loopback
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s answered %d", url, resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
