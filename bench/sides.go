package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// sideEnv is what every measured setup is given.
type sideEnv struct {
	// kubeconfig is the API server's admin kubeconfig.
	kubeconfig string
	// writeURL is the receiver's Remote-Write URL.
	writeURL string
	// interval is the snapshot and scrape interval.
	interval time.Duration
	agentBin string
	// diskBuffer gives kube-state-push's endpoint a disk buffer.
	diskBuffer bool
}

// side is one of the setups measured.
type side struct {
	// key is its name on the command line (-only).
	key string
	// title is its name in the report.
	title string
	// start starts its processes, logging into dir, and returns them in the
	// order the report lists them, and the page of state series a scraper
	// reads.
	start func(dir string, env sideEnv) ([]*testenv.Process, scrapeTarget, error)
}

// sides are the setups, in their default order. kube-state-push is
// first: every other setup is compared with it.
var sides = []side{
	{key: "agent", title: "kube-state-push", start: startAgent},
	{key: "ksm", title: "KSM + Prometheus agent", start: startPair},
	{key: "vmagent", title: "KSM + vmagent", start: startVMAgentPair(false)},
	{key: "vmagent-vm", title: "KSM + vmagent, VictoriaMetrics protocol", start: startVMAgentPair(true)},
}

// sideKeys are the keys of sides, in order.
func sideKeys() []string {
	out := make([]string, len(sides))
	for i, s := range sides {
		out[i] = s.key
	}
	return out
}

// agentConfig is kube-state-push's configuration for the benchmark: the
// default resources (those kube-state-metrics watches by default) and
// families, no self-metrics push, the default queue.
// The pull page is on for the scrape-cost rows; it costs nothing unread.
// With buffer set, the endpoint has a disk buffer there, as deploy/ runs
// it (and as the Prometheus agent on the other side writes a WAL).
func agentConfig(env sideEnv, listen, pull, buffer string) string {
	disk := ""
	if buffer != "" {
		disk = fmt.Sprintf("    disk_buffer: {directory: %q}\n", buffer)
	}
	return fmt.Sprintf(`kubeconfig: %q
snapshot_interval: %s
listen_address: %q
pull: {listen_address: %q}
push_self_metrics: false
remote_write:
  - url: %q
%s`, env.kubeconfig, env.interval, listen, pull, env.writeURL, disk)
}

// startAgent starts kube-state-push.
func startAgent(dir string, env sideEnv) ([]*testenv.Process, scrapeTarget, error) {
	var ports [2]int
	for i := range ports {
		var err error
		if ports[i], err = testenv.FreePort(); err != nil {
			return nil, scrapeTarget{}, err
		}
	}
	listen, pull := "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1])
	cfg := filepath.Join(dir, "kube-state-push.yaml")
	buffer := ""
	if env.diskBuffer {
		buffer = filepath.Join(dir, "buffer")
	}
	if err := os.WriteFile(cfg, []byte(agentConfig(env, listen, pull, buffer)), 0o600); err != nil {
		return nil, scrapeTarget{}, fmt.Errorf("writing the agent's config: %w", err)
	}
	p, err := testenv.Start(dir, "kube-state-push", env.agentBin, "--config.file="+cfg)
	if err != nil {
		return nil, scrapeTarget{}, err
	}
	return []*testenv.Process{p}, scrapeTarget{url: "http://" + pull + "/metrics", telemetry: "http://" + listen + "/metrics"}, nil
}

// prometheusAgentConfig is Prometheus' configuration in agent mode: scrape
// kube-state-metrics at the interval, honouring its labels, and
// remote-write everything to the receiver with the default queue.
func prometheusAgentConfig(env sideEnv, ksmTarget string) string {
	return scrapeConfig(env, ksmTarget) + fmt.Sprintf("remote_write:\n  - url: %q\n", env.writeURL)
}

// startKSM starts kube-state-metrics with its default resources and
// returns it, the address of its page and its telemetry URL.
func startKSM(dir string, env sideEnv) (*testenv.Process, scrapeTarget, string, error) {
	ksmBin, err := testenv.Binary("kube-state-metrics")
	if err != nil {
		return nil, scrapeTarget{}, "", err
	}
	var ports [2]int
	for i := range ports {
		if ports[i], err = testenv.FreePort(); err != nil {
			return nil, scrapeTarget{}, "", err
		}
	}
	ksmAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	ksm, err := testenv.Start(dir, "kube-state-metrics", ksmBin,
		"--kubeconfig="+env.kubeconfig,
		"--host=127.0.0.1", "--port="+strconv.Itoa(ports[0]),
		"--telemetry-host=127.0.0.1", "--telemetry-port="+strconv.Itoa(ports[1]),
	)
	if err != nil {
		return nil, scrapeTarget{}, "", err
	}
	target := scrapeTarget{url: "http://" + ksmAddr + "/metrics", telemetry: "http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/metrics"}
	return ksm, target, ksmAddr, nil
}

// startPair starts kube-state-metrics with its default resources and,
// without waiting for it, Prometheus in agent mode scraping it.
func startPair(dir string, env sideEnv) ([]*testenv.Process, scrapeTarget, error) {
	return startScraper(dir, env, "prometheus-agent", "prometheus", prometheusAgentConfig, func(cfg string, port int) []string {
		return []string{
			"--agent",
			"--config.file=" + cfg,
			"--storage.agent.path=" + filepath.Join(dir, "prometheus-agent-wal"),
			"--web.listen-address=127.0.0.1:" + strconv.Itoa(port),
			"--log.level=warn",
		}
	})
}

// startScraper starts kube-state-metrics with its default resources and,
// without waiting for it, the program bin (a process named name) that
// scrapes it and pushes: config renders its configuration file for
// kube-state-metrics' address, args its flags for that file and a port.
func startScraper(dir string, env sideEnv, name, bin string, config func(sideEnv, string) string, args func(cfg string, port int) []string) ([]*testenv.Process, scrapeTarget, error) {
	path, err := testenv.Binary(bin)
	if err != nil {
		return nil, scrapeTarget{}, err
	}
	port, err := testenv.FreePort()
	if err != nil {
		return nil, scrapeTarget{}, err
	}
	ksm, target, ksmAddr, err := startKSM(dir, env)
	if err != nil {
		return nil, scrapeTarget{}, err
	}
	cfg := filepath.Join(dir, name+".yml")
	if err := os.WriteFile(cfg, []byte(config(env, ksmAddr)), 0o600); err != nil {
		ksm.Kill()
		return nil, scrapeTarget{}, fmt.Errorf("writing %s's config: %w", name, err)
	}
	p, err := testenv.Start(dir, name, path, args(cfg, port)...)
	if err != nil {
		ksm.Kill()
		return nil, scrapeTarget{}, err
	}
	return []*testenv.Process{ksm, p}, target, nil
}

// vmagentMaxScrapeSize is vmagent's -promscrape.maxScrapeSize: its default
// of 16 MiB is below kube-state-metrics' page at a few thousand pods.
const vmagentMaxScrapeSize = "1GiB"

// scrapeConfig is the pushers' scrape configuration: kube-state-metrics at
// the interval, honouring its labels. vmagent takes it as it is.
func scrapeConfig(env sideEnv, ksmTarget string) string {
	return fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
scrape_configs:
  - job_name: kube-state-metrics
    honor_labels: true
    static_configs:
      - targets: [%[2]q]
`, env.interval, ksmTarget)
}

// vmagentArgs are vmagent's flags: the scrape configuration, its queue's
// folder and the receiver, with default queue settings. With vmProto false
// it speaks Remote-Write 1.0 (snappy); with vmProto true it is left to
// negotiate, and keeps VictoriaMetrics' protocol (zstd) when the receiver
// accepts it, as the bench's receiver and VictoriaMetrics do.
func vmagentArgs(dir, cfg string, port int, env sideEnv, vmProto bool) []string {
	args := []string{
		"-promscrape.config=" + cfg,
		"-promscrape.maxScrapeSize=" + vmagentMaxScrapeSize,
		"-remoteWrite.url=" + env.writeURL,
		"-remoteWrite.tmpDataPath=" + filepath.Join(dir, "vmagent-data"),
		"-httpListenAddr=127.0.0.1:" + strconv.Itoa(port),
		"-loggerLevel=WARN",
	}
	if !vmProto {
		args = append(args, "-remoteWrite.forcePromProto")
	}
	return args
}

// startVMAgentPair returns a side's start: kube-state-metrics with its
// default resources and, without waiting for it, vmagent scraping it.
func startVMAgentPair(vmProto bool) func(dir string, env sideEnv) ([]*testenv.Process, scrapeTarget, error) {
	return func(dir string, env sideEnv) ([]*testenv.Process, scrapeTarget, error) {
		return startScraper(dir, env, "vmagent", "vmagent", scrapeConfig, func(cfg string, port int) []string {
			return vmagentArgs(dir, cfg, port, env, vmProto)
		})
	}
}
