package deploy_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// chartDir is the Helm chart, beside the kustomizations whose shapes it
// renders; chartShapes holds a values file per kustomization.
const (
	chartDir    = "helm/kube-state-push"
	chartShapes = chartDir + "/ci"
)

// TestMain stops the control plane the chart tests apply to.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.StopShared()
	os.Exit(code)
}

// helmBinary returns the helm that scripts/build-tools.sh builds. Without
// it the test is skipped, except in CI (CI=true), where that is a failure.
func helmBinary(t *testing.T) string {
	t.Helper()
	bin, err := testenv.Binary("helm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("missing helm in CI: %v", err)
		}
		t.Skip(err)
	}
	return bin
}

// runHelm runs helm and returns its standard output, or an error holding
// its standard error.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// No repositories, plugins or caches of the user's.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	if err := cmd.Run(); err != nil {
		return stdout.String(), &helmError{args: args, err: err, stderr: stderr.String()}
	}
	return stdout.String(), nil
}

// helmError is a failed helm run.
type helmError struct {
	args   []string
	err    error
	stderr string
}

func (e *helmError) Error() string {
	return "helm " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + e.stderr
}

// renderChart renders the chart as release kube-state-push in namespace
// kube-state-push (the names deploy/ uses) with the helm template
// arguments given, into what the kustomization tests look at: the objects,
// and the agent configuration from the chart's Secret.
func renderChart(t *testing.T, args ...string) rendered {
	t.Helper()
	return renderRelease(t, "kube-state-push", "kube-state-push", args...)
}

// renderRelease is renderChart with a release name and namespace.
func renderRelease(t *testing.T, release, namespace string, args ...string) rendered {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", release, chartDir, "--namespace", namespace}, args...)...)
	require.NoError(t, err)
	var r rendered
	for _, obj := range splitManifests(t, out) {
		require.NotEqual(t, "ConfigMap", obj["kind"], "the configuration may hold credentials: a Secret")
		if obj["kind"] == "Secret" && nested(obj, "metadata", "name") == release+"-config" {
			require.Nil(t, r.config, "one configuration")
			r.config = secretFile(t, obj, configFile)
			continue
		}
		r.objects = append(r.objects, obj)
	}
	require.NotNil(t, r.config, "the chart renders the agent's configuration")
	return r
}

// secretFile returns the decoded value of a key of a rendered Secret.
func secretFile(t *testing.T, obj map[string]any, key string) []byte {
	t.Helper()
	var s corev1.Secret
	decodeStrict(t, obj, &s)
	require.Empty(t, s.StringData, "data only, as the API server returns it")
	v, ok := s.Data[key]
	require.True(t, ok, "Secret %s holds %s", s.Name, key)
	return v
}

// splitManifests parses a multi-document YAML stream, leaving out empty
// documents.
func splitManifests(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(out, -1) {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj), doc)
		if len(obj) > 0 {
			objs = append(objs, obj)
		}
	}
	return objs
}

// objectsOf decodes the objects of a kind, strictly, by name.
func objectsOf[T any](t *testing.T, r rendered, kind string) map[string]*T {
	t.Helper()
	out := map[string]*T{}
	for _, obj := range r.objects {
		if obj["kind"] != kind {
			continue
		}
		v := new(T)
		decodeStrict(t, obj, v)
		out[nested(obj, "metadata", "name").(string)] = v
	}
	return out
}

// chartShapeDirs returns the kustomizations, each of which must have its
// values file in chartShapes, and no values file without a kustomization.
func chartShapeDirs(t *testing.T) []string {
	t.Helper()
	dirs := kustomizations(t)
	files, err := filepath.Glob(filepath.Join(chartShapes, "*-values.yaml"))
	require.NoError(t, err)
	var shapes []string
	for _, f := range files {
		shapes = append(shapes, strings.TrimSuffix(filepath.Base(f), "-values.yaml"))
	}
	sort.Strings(dirs)
	sort.Strings(shapes)
	require.Equal(t, dirs, shapes, "a values file in %s per kustomization", chartShapes)
	for _, d := range []string{"base", "sharded", "ha"} {
		require.Contains(t, shapes, d)
	}
	return dirs
}

// The chart's table of resources (templates/_rbac.tpl) is the agent's:
// every resource it can watch, with its API group and scope.
func TestChartResources(t *testing.T) {
	f, err := os.Open(filepath.Join(chartDir, "templates/_rbac.tpl"))
	require.NoError(t, err)
	defer f.Close()
	line := regexp.MustCompile(`^([a-z]+): \{group: "?([a-z0-9.]*)"?, namespaced: (true|false)\}$`)
	got := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		switch {
		case strings.Contains(sc.Text(), `define "kube-state-push.resources"`):
			in = true
		case in && strings.Contains(sc.Text(), "end -}}"):
			in = false
		case in:
			m := line.FindStringSubmatch(sc.Text())
			require.NotNil(t, m, "a line of the table: %q", sc.Text())
			got[m[1]] = m[2] + " namespaced=" + m[3]
		}
	}
	require.NoError(t, sc.Err())
	want := map[string]string{}
	for _, r := range watch.All() {
		want[r.Name] = r.GroupResource().Group + " namespaced=" + strconv.FormatBool(r.Namespaced)
		require.Equal(t, r.Name, r.GroupResource().Resource, "the chart grants by kube-state-metrics' name")
	}
	require.Equal(t, want, got)
}

// Each kustomization's shape, rendered by the chart from its values file in
// ci/, lints, and is what the kustomization installs: the same RBAC
// (requireSameRBAC), workload (requireSameWorkload) and claims, and a
// configuration that loads to the same effective configuration; every
// endpoint's disk buffer is on a writable volume big enough for it
// (diskBufferProblems).
func TestChartShapes(t *testing.T) {
	for _, dir := range chartShapeDirs(t) {
		t.Run(dir, func(t *testing.T) {
			values := filepath.Join(chartShapes, dir+"-values.yaml")
			out, err := runHelm(t, "lint", "--strict", chartDir, "-f", values)
			require.NoError(t, err, out)

			chart := renderChart(t, "-f", values)
			kust := renderKustomization(t, dir)
			requireSameRBAC(t, values, kust, chart)
			requireSameWorkload(t, kust, chart)
			kc, cc := objectsOf[corev1.PersistentVolumeClaim](t, kust, "PersistentVolumeClaim"), objectsOf[corev1.PersistentVolumeClaim](t, chart, "PersistentVolumeClaim")
			require.Len(t, cc, len(kc))
			for name, c := range kc {
				require.Contains(t, cc, name)
				require.Equal(t, c.Spec, cc[name].Spec, "claim %s", name)
			}

			kcfg, ccfg := loadRendered(t, dir, kust), loadRendered(t, dir, chart)
			ke, err := kcfg.Effective()
			require.NoError(t, err)
			ce, err := ccfg.Effective()
			require.NoError(t, err)
			require.Equal(t, string(ke), string(ce), "the effective configuration")
			require.Empty(t, diskBufferProblems(ccfg.RemoteWrite, chart.workload(t), chart))
		})
	}
}

// requireSameRBAC requires the chart to grant what the kustomization
// grants: the same ClusterRole rules (or, where the values list
// collectors, exactly those, as kube-state-metrics' chart grants, and
// nothing the kustomization does not), the same Roles and bindings.
func requireSameRBAC(t *testing.T, values string, kust, chart rendered) {
	t.Helper()
	var v struct {
		Collectors []string `json:"collectors"`
	}
	readManifest(t, values, &v, false)
	if v.Collectors == nil {
		require.Equal(t, rules(t, kust, "ClusterRole"), rules(t, chart, "ClusterRole"), "the ClusterRole")
	} else {
		want := map[string]bool{}
		for _, name := range v.Collectors {
			r, ok := watch.Lookup(name)
			require.True(t, ok, name)
			want[r.GroupResource().String()] = true
		}
		got := granted(t, chart)
		require.Equal(t, want, got, "the ClusterRole grants the collectors")
		kg := granted(t, kust)
		for gr := range got {
			require.True(t, kg[gr], "%s: granted by the kustomization too", gr)
		}
	}
	require.Equal(t, rules(t, kust, "Role"), rules(t, chart, "Role"), "the Roles")
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		kb, cb := objectsOf[rbacv1.RoleBinding](t, kust, kind), objectsOf[rbacv1.RoleBinding](t, chart, kind)
		require.Len(t, cb, len(kb), kind)
		for name, b := range kb {
			require.Contains(t, cb, name, kind)
			require.Equal(t, b.RoleRef, cb[name].RoleRef, "%s %s", kind, name)
			require.Equal(t, b.Subjects, cb[name].Subjects, "%s %s", kind, name)
		}
	}
}

// requireSameWorkload requires the chart's workload to be the
// kustomization's: kind, replicas, strategy or StatefulSet settings and
// claim templates, security contexts, the container's resources, args,
// ports, probes, mounts and env (the chart may set more env), and the
// buffer volume.
func requireSameWorkload(t *testing.T, kust, chart rendered) {
	t.Helper()
	kw, cw := kust.workload(t), chart.workload(t)
	require.Equal(t, kw.kind, cw.kind)
	kp, cp := kw.pod(), cw.pod()
	require.Equal(t, kp.SecurityContext, cp.SecurityContext, "the pod's security context")
	require.Len(t, cp.Containers, 1)
	kc, cc := kp.Containers[0], cp.Containers[0]
	require.Equal(t, kc.SecurityContext, cc.SecurityContext, "the container's security context")
	require.Equal(t, kc.Resources, cc.Resources)
	require.Equal(t, kc.Args, cc.Args)
	require.Equal(t, kc.Ports, cc.Ports)
	require.Equal(t, kc.LivenessProbe, cc.LivenessProbe)
	require.Equal(t, kc.ReadinessProbe, cc.ReadinessProbe)
	require.Equal(t, kc.VolumeMounts, cc.VolumeMounts)
	for _, e := range kc.Env {
		require.Contains(t, cc.Env, e)
	}
	require.Equal(t, bufferVolumeOrNil(kp).VolumeSource, bufferVolumeOrNil(cp).VolumeSource, "the buffer volume")
	if kw.deployment != nil {
		require.Equal(t, kw.deployment.Spec.Replicas, cw.deployment.Spec.Replicas)
		require.Equal(t, kw.deployment.Spec.Strategy, cw.deployment.Spec.Strategy)
		return
	}
	ks, cs := kw.statefulSet.Spec, cw.statefulSet.Spec
	require.Equal(t, ks.Replicas, cs.Replicas)
	require.Equal(t, ks.ServiceName, cs.ServiceName)
	require.Equal(t, ks.PodManagementPolicy, cs.PodManagementPolicy)
	require.Len(t, cs.VolumeClaimTemplates, len(ks.VolumeClaimTemplates))
	for i := range ks.VolumeClaimTemplates {
		require.Equal(t, ks.VolumeClaimTemplates[i].Name, cs.VolumeClaimTemplates[i].Name)
		require.Equal(t, ks.VolumeClaimTemplates[i].Spec, cs.VolumeClaimTemplates[i].Spec)
	}
}

// bufferVolumeOrNil returns the pod volume named buffer, or an empty one
// (a StatefulSet's claim template replaces it).
func bufferVolumeOrNil(pod *corev1.PodSpec) corev1.Volume {
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "buffer" })
	if i < 0 {
		return corev1.Volume{}
	}
	return pod.Volumes[i]
}

// rules returns the rules of the objects of a kind (ClusterRole or Role),
// by object name.
func rules(t *testing.T, r rendered, kind string) map[string][]rbacv1.PolicyRule {
	t.Helper()
	out := map[string][]rbacv1.PolicyRule{}
	for name, role := range objectsOf[rbacv1.ClusterRole](t, r, kind) {
		out[name] = role.Rules
	}
	return out
}

// granted returns the group/resource pairs the ClusterRoles grant list and
// watch on: only list and watch.
func granted(t *testing.T, r rendered) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, rs := range rules(t, r, "ClusterRole") {
		for _, rule := range rs {
			require.Equal(t, []string{"list", "watch"}, rule.Verbs)
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					out[schema.GroupResource{Group: g, Resource: res}.String()] = true
				}
			}
		}
	}
	return out
}
