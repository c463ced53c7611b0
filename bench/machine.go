package main

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// readMachine describes the host from /proc.
func readMachine() machineInfo {
	m := machineInfo{cpus: runtime.NumCPU(), model: "unknown CPU", kernel: "unknown", loadStart: loadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.model = cpuModel(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.memory = memTotal(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	return m
}

// cpuModel returns the first "model name" in /proc/cpuinfo's text.
func cpuModel(cpuinfo string) string {
	for line := range strings.SplitSeq(cpuinfo, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// memTotal returns MemTotal in bytes from /proc/meminfo's text, 0 if absent.
func memTotal(meminfo string) uint64 {
	for line := range strings.SplitSeq(meminfo, "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// loadAverage returns the 1-minute load average, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}

// moduleVersion returns the version of module path built into the binary
// bin (its main module or a dependency), or "unknown".
func moduleVersion(bin, path string) string {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "unknown"
	}
	if info.Main.Path == path {
		return info.Main.Version
	}
	for _, d := range info.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}

// firstLine runs bin with args and returns the first line of its output,
// or "unknown".
func firstLine(bin string, args ...string) string {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// versions lists the versions of the programs the run used.
func versions(agentBin, receiver string) []nameValue {
	tool := func(name string) string {
		p, err := testenv.Binary(name)
		if err != nil {
			return ""
		}
		return p
	}
	goOf := func(bin string) string {
		info, err := buildinfo.ReadFile(bin)
		if err != nil {
			return "unknown Go"
		}
		return info.GoVersion
	}
	vs := []nameValue{
		{"kube-state-push", releaseOrTree(strings.TrimPrefix(firstLine(agentBin, "--version"), "kube-state-push ")) + " (" + goOf(agentBin) + ")"},
		{"kube-state-metrics", moduleVersion(tool("kube-state-metrics"), "k8s.io/kube-state-metrics/v2")},
		{"Prometheus 3 (Go module)", moduleVersion(tool("prometheus"), "github.com/prometheus/prometheus")},
		{"kube-apiserver", strings.TrimPrefix(firstLine(tool("kube-apiserver"), "--version"), "Kubernetes ")},
		{"etcd", strings.TrimPrefix(firstLine(tool("etcd"), "--version"), "etcd Version: ")},
	}
	if receiver == "victoriametrics" {
		vs = append(vs, nameValue{"VictoriaMetrics", moduleVersion(tool("victoria-metrics"), "github.com/VictoriaMetrics/VictoriaMetrics")})
	}
	return append(vs, nameValue{"harness", runtime.Version()})
}

// releaseOrTree returns a release version as it is; anything else (a
// commit, a dirty tree) is named for what it is, so that no commit hash
// lands in the docs.
func releaseOrTree(v string) string {
	if releaseVersion.MatchString(v) {
		return v
	}
	return "built from this checkout"
}

var releaseVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$`)
