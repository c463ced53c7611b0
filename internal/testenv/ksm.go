package testenv

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// KubeStateMetrics is a running kube-state-metrics, the program whose
// series the agent must match.
type KubeStateMetrics struct {
	// URL is where it serves /metrics.
	URL string
	// Proc is the running process.
	Proc *Process
}

// StartKubeStateMetrics runs kube-state-metrics against a kubeconfig with
// extra flags (--resources, allowlists, ...) and waits until it serves.
func StartKubeStateMetrics(ctx context.Context, dir, kubeconfig string, flags ...string) (*KubeStateMetrics, error) {
	bin, err := Binary("kube-state-metrics")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	tport, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--host=127.0.0.1", "--port=" + strconv.Itoa(port),
		"--telemetry-host=127.0.0.1", "--telemetry-port=" + strconv.Itoa(tport),
	}, flags...)
	k := &KubeStateMetrics{URL: "http://127.0.0.1:" + strconv.Itoa(port)}
	if k.Proc, err = Start(dir, "kube-state-metrics", bin, args...); err != nil {
		return nil, err
	}
	// /readyz is served on the telemetry port; the metrics port has /healthz.
	if err := k.Proc.waitReady(ctx, httpOK(http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(tport)+"/readyz", nil)); err != nil {
		k.Proc.Kill()
		return nil, err
	}
	return k, nil
}

// Scrape returns the text of /metrics.
func (k *KubeStateMetrics) Scrape(ctx context.Context) (string, error) {
	s, err := ScrapeWith(ctx, k.URL+"/metrics", nil)
	return s.Body, err
}

// Stop stops it.
func (k *KubeStateMetrics) Stop() { k.Proc.Stop(10 * time.Second) }
