package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Prometheus is a Prometheus server with its remote-write receiver on.
type Prometheus struct {
	// URL is the server's base URL; remote write goes to URL+"/api/v1/write".
	URL string
	// Proc is the running process; Restart replaces it.
	Proc *Process

	// dir, bin and args start the process again on Restart, on the same
	// port with the same data folder.
	dir  string
	bin  string
	args []string
	// ns is the namespace Prometheus runs in; nil: the test's own.
	ns *Namespace
}

// StartPrometheus starts Prometheus in dir and waits until it is ready.
// flags are added to its command line (e.g.
// "--enable-feature=type-and-unit-labels").
func StartPrometheus(ctx context.Context, dir string, flags ...string) (*Prometheus, error) {
	return StartPrometheusWithConfig(ctx, dir, "global:\n  scrape_interval: 1m\n", flags...)
}

// StartPrometheusWithConfig is StartPrometheus with a configuration file of
// the caller's (scrape jobs, for a test of something scraped).
func StartPrometheusWithConfig(ctx context.Context, dir, config string, flags ...string) (*Prometheus, error) {
	bin, err := Binary("prometheus")
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("writing prometheus config: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	p := &Prometheus{URL: "http://127.0.0.1:" + strconv.Itoa(port), dir: dir, bin: bin, args: []string{
		"--config.file=" + cfg,
		"--storage.tsdb.path=" + filepath.Join(dir, "prometheus-data"),
		"--web.listen-address=127.0.0.1:" + strconv.Itoa(port),
		"--web.enable-remote-write-receiver",
		"--log.level=warn",
	}}
	p.args = append(p.args, flags...)
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// start runs the process and waits until it is ready.
func (p *Prometheus) start(ctx context.Context) error {
	start := Start
	if p.ns != nil {
		start = p.ns.Start
	}
	proc, err := start(p.dir, "prometheus", p.bin, p.args...)
	if err != nil {
		return err
	}
	if err := proc.waitReady(ctx, httpOK(http.DefaultClient, p.URL+"/-/ready", nil)); err != nil {
		proc.Kill()
		return err
	}
	p.Proc = proc
	return nil
}

// WriteURL is the remote-write receiver's URL.
func (p *Prometheus) WriteURL() string { return p.URL + "/api/v1/write" }

// Stop stops the server.
func (p *Prometheus) Stop() { p.Proc.Stop(10 * time.Second) }

// Sample is one element of an instant query's vector result.
type Sample struct {
	// Metric is the series' labels (with __name__).
	Metric map[string]string
	// Value is the sample value.
	Value float64
}

// Query runs an instant query and returns its vector result.
func (p *Prometheus) Query(ctx context.Context, q string) ([]Sample, error) {
	return queryVector(ctx, p.URL, q, nil)
}

// QueryAt runs an instant query evaluated at time at.
func (p *Prometheus) QueryAt(ctx context.Context, q string, at time.Time) ([]Sample, error) {
	return queryVectorAt(ctx, p.URL, q, at, nil)
}
