package deploy_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-state-push/kube-state-push/config"
)

// readmeSection returns the README's section under the heading, up to the
// next one of its level.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	s := string(data)
	i := strings.Index(s, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "README has %q", heading)
	s = s[i+len(heading)+2:]
	if j := strings.Index(s, "\n## "); j >= 0 {
		s = s[:j]
	}
	return s
}

// installText is what the install walkthrough says: the README's install
// section, then docs/install.md, which holds the shapes, the chart and the
// disk buffer's sizing that the README links to.
func installText(t *testing.T) string {
	t.Helper()
	return readmeSection(t, "## Install in a cluster") + "\n" + string(mustRead(t, "../docs/install.md"))
}

// codeBlocks returns the fenced blocks of a language in markdown text.
func codeBlocks(md, lang string) []string {
	var out []string
	for _, part := range strings.Split(md, "```"+lang+"\n")[1:] {
		end := strings.Index(part, "```")
		if end < 0 {
			continue
		}
		out = append(out, part[:end])
	}
	return out
}

// shellCommands returns the commands of sh blocks, one per line, with
// comments and continuation lines joined.
func shellCommands(blocks []string) []string {
	var out []string
	for _, b := range blocks {
		b = strings.ReplaceAll(b, "\\\n", " ")
		for _, line := range strings.Split(b, "\n") {
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		}
	}
	return out
}

// servedPaths are the HTTP paths the agent's server registers, read from
// its source.
func servedPaths(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("../agent/agent.go")
	require.NoError(t, err)
	var out []string
	for _, m := range regexp.MustCompile(`mux\.Handle(?:Func)?\("([^"]+)"`).FindAllStringSubmatch(string(src), -1) {
		out = append(out, m[1])
	}
	require.Contains(t, out, "/metrics")
	return out
}

// expandAlternatives expands every (a|b) group of a pattern: x_(a|b)_y
// gives x_a_y and x_b_y.
func expandAlternatives(p string) []string {
	m := regexp.MustCompile(`\(([^()]*)\)`).FindStringSubmatchIndex(p)
	if m == nil {
		return []string{p}
	}
	var out []string
	for _, alt := range strings.Split(p[m[2]:m[3]], "|") {
		out = append(out, expandAlternatives(p[:m[0]]+alt+p[m[1]:])...)
	}
	return out
}

// The install walkthrough (the README's section and docs/install.md) refers
// only to things that exist:
// the kustomizations it applies (which render, when kubectl is at hand),
// the files it edits, the configuration it checks and the snippets it
// shows (which load), the objects it waits for and port-forwards to, the
// port, the HTTP paths and self-metrics it reads, and a PromQL query over
// real families and the base configuration's cluster label.
func TestReadmeInstallWalkthrough(t *testing.T) {
	section := installText(t)
	cmds := shellCommands(codeBlocks(section, "sh"))
	require.NotEmpty(t, cmds)

	var base appsv1.Deployment
	readManifest(t, "base/deployment.yaml", &base, true)
	require.Equal(t, "kube-state-push", base.Namespace)
	baseCfg, err := config.LoadFile("base/config.yaml")
	require.NoError(t, err)
	fams := knownFamilies(t)
	paths := servedPaths(t)

	seen := map[string]bool{}
	for _, cmd := range cmds {
		fields := strings.Fields(cmd)
		switch {
		case strings.HasPrefix(cmd, "docker build "):
			require.FileExists(t, filepath.Join("..", fields[len(fields)-1], "Dockerfile"), cmd)
			seen["docker build"] = true
		case strings.HasPrefix(cmd, "docker push "):
			require.Contains(t, section, "image: "+fields[2], "%s: the image the Deployment is told to run", cmd)
			require.NotEmpty(t, base.Spec.Template.Spec.Containers[0].Image, "the Deployment has an image to set")
		case strings.HasPrefix(cmd, "$EDITOR "):
			require.FileExists(t, filepath.Join("..", fields[1]), cmd)
			seen["edit"] = true
		case strings.HasPrefix(cmd, "kube-state-push check-config "):
			_, err := config.LoadFile(filepath.Join("..", fields[2]))
			require.NoError(t, err, cmd)
			seen["check-config"] = true
		case strings.HasPrefix(cmd, "kubectl apply -k "):
			dir := strings.TrimPrefix(fields[3], "deploy/")
			kustomizationFiles(t, dir)
			if out, ok := renderOverlay(t, dir); ok {
				require.Contains(t, out, "kind: Deployment", cmd)
				require.Contains(t, out, "name: "+base.Name, cmd)
			}
			seen["apply"] = true
		case strings.HasPrefix(cmd, "kubectl "):
			require.Equal(t, []string{"kubectl", "-n", base.Namespace}, fields[:3], cmd)
			for _, f := range fields {
				if strings.HasPrefix(f, "deployment/") {
					require.Equal(t, "deployment/"+base.Name, f, cmd)
				}
				if m := regexp.MustCompile(`^(\d+):(\d+)$`).FindStringSubmatch(f); m != nil {
					require.Equal(t, baseCfg.ListenAddress, ":"+m[2], "%s: the agent's listen_address", cmd)
					require.Equal(t, m[2], strconv.Itoa(int(base.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort)), "%s: the container's port", cmd)
				}
			}
			seen["kubectl"] = true
		case strings.HasPrefix(cmd, "curl ") && strings.Contains(cmd, "localhost:"):
			for _, m := range regexp.MustCompile(`localhost:\d+(/[^ '"]*)`).FindAllStringSubmatch(cmd, -1) {
				require.Contains(t, paths, m[1], "%s: a path the agent serves", cmd)
			}
			for _, m := range regexp.MustCompile(`kube_state_push_[a-z_()|]+`).FindAllString(cmd, -1) {
				for _, name := range expandAlternatives(m) {
					require.Contains(t, fams, name, "%s: a self-metric", cmd)
				}
			}
			seen["agent"] = true
		case strings.HasPrefix(cmd, "curl "):
			m := regexp.MustCompile(`'query=([^']+)'`).FindStringSubmatch(cmd)
			require.NotNil(t, m, "%s: a query", cmd)
			checkExpr(t, fams, "README install", m[1])
			if c := regexp.MustCompile(`cluster="([^"]*)"`).FindStringSubmatch(m[1]); c != nil {
				require.Equal(t, baseCfg.ExternalLabels["cluster"], c[1], "the base configuration's cluster label")
			}
			seen["query"] = true
		case strings.HasPrefix(cmd, "helm "):
			checkHelmCommand(t, cmd, base)
			seen["helm"] = true
		default:
			t.Fatalf("the walkthrough runs %q, which this test does not check", cmd)
		}
	}
	for _, step := range []string{"docker build", "edit", "check-config", "apply", "helm", "kubectl", "agent", "query"} {
		require.True(t, seen[step], "the walkthrough has a %s step", step)
	}

	// The configuration snippets load as they are: those of the install
	// pages, and the README's minimal configuration. A snippet whose keys
	// are all the chart's values is values: it renders into a
	// configuration that loads.
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	readManifest(t, filepath.Join(chartDir, "values.schema.json"), &schema, false)
	snippets := append(codeBlocks(section, "yaml"), codeBlocks(string(mustRead(t, "../README.md")), "yaml")...)
	require.NotEmpty(t, snippets)
	values := 0
	for i, y := range snippets {
		var top map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(y), &top), "snippet %d", i)
		if !slices.ContainsFunc(slices.Collect(maps.Keys(top)), func(k string) bool { return schema.Properties[k] == nil }) {
			values++
			if !haveHelm(t) {
				continue
			}
			args := []string{"-f", writeValues(t, y)}
			if top["remoteWrite"] == nil {
				args = append(args, "--set", "remoteWrite[0].url=http://prometheus.monitoring.svc:9090/api/v1/write")
			}
			loadRendered(t, fmt.Sprintf("install snippet %d", i), renderChart(t, args...))
			continue
		}
		_, err := config.Load([]byte(y), "README snippet")
		require.NoError(t, err, "snippet %d:\n%s", i, y)
	}
	require.Less(t, values, len(snippets), "a configuration snippet, not only values")

	// The prose names a ConfigMap the base generates, the reload path and
	// metric, and files that exist.
	require.Contains(t, section, "kube-state-push-config-")
	require.Contains(t, string(mustRead(t, "base/kustomization.yaml")), "name: kube-state-push-config")
	require.Contains(t, paths, "/-/reload")
	require.Contains(t, fams, "kube_state_push_config_last_reload_successful")
	for _, m := range regexp.MustCompile("`((?:deploy|e2e)/[a-z_./-]+)`").FindAllStringSubmatch(section, -1) {
		_, err := os.Stat(filepath.Join("..", m[1]))
		require.NoError(t, err, "the install docs name %s", m[1])
	}
	for _, m := range regexp.MustCompile(`\]\((?:\.\./)?(deploy/[a-z-]+)\)`).FindAllStringSubmatch(section, -1) {
		dir := strings.TrimPrefix(m[1], "deploy/")
		kustomizationFiles(t, dir)
		require.True(t, slices.Contains(cmdsAndProse(cmds, section), "kubectl apply -k "+m[1]), "%s is applied somewhere", m[1])
	}
}

// cmdsAndProse is every command, and every `kubectl ...` quoted in prose.
func cmdsAndProse(cmds []string, section string) []string {
	out := slices.Clone(cmds)
	for _, m := range regexp.MustCompile("`(kubectl [^`]+)`").FindAllStringSubmatch(section, -1) {
		out = append(out, m[1])
	}
	return out
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// What the install docs say of the disk buffer holds: the manifest
// values it quotes are in the rendered manifests, the paths it names are
// the base's buffer mount and endpoint directory, and the self-metrics it
// names exist, with a reason the queue counts.
func TestReadmeDiskBuffer(t *testing.T) {
	section := installText(t)
	var manifests strings.Builder
	for _, dir := range kustomizations(t) {
		r := renderKustomization(t, dir)
		manifests.WriteString(toYAML(t, r.objects))
		manifests.Write(r.config)
	}
	values := regexp.MustCompile("`((?:fsGroup|sizeLimit|ephemeral-storage|storage|max_bytes|type): [^`]+)`").FindAllStringSubmatch(section, -1)
	require.GreaterOrEqual(t, len(values), 6)
	for _, m := range values {
		require.True(t, strings.Contains(manifests.String(), m[1]), "the install docs quote %s, which no rendered manifest has", m[1])
	}

	r := renderKustomization(t, "base")
	cfg := loadRendered(t, "base", r)
	var known []string
	for _, m := range r.workload(t).pod().Containers[0].VolumeMounts {
		known = append(known, m.MountPath)
	}
	for _, ep := range cfg.RemoteWrite {
		known = append(known, ep.DiskBuffer.Directory)
	}
	paths := regexp.MustCompile("`(/var/lib/[^`]*)`").FindAllStringSubmatch(section, -1)
	require.NotEmpty(t, paths)
	for _, m := range paths {
		require.Contains(t, known, m[1], "the install docs name %s", m[1])
	}

	fams := knownFamilies(t)
	var queueSrc strings.Builder
	files, err := filepath.Glob("../queue/*.go")
	require.NoError(t, err)
	for _, f := range files {
		queueSrc.Write(mustRead(t, f))
	}
	metrics := regexp.MustCompile("`(kube_state_push_[a-z_]+)(?:\\{reason=\"([a-z_]+)\"\\})?`").FindAllStringSubmatch(section, -1)
	require.NotEmpty(t, metrics)
	for _, m := range metrics {
		require.Contains(t, fams, m[1], "the install docs name %s", m[1])
		if m[2] != "" {
			reason := regexp.MustCompile(`Reason\w+\s*=\s*"` + m[2] + `"`)
			require.True(t, reason.MatchString(queueSrc.String()), "%s: no such reason in queue/", m[0])
		}
	}
}
