package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
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
// and the agent configuration from the chart's ConfigMap.
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
		if obj["kind"] == "ConfigMap" {
			require.Nil(t, r.config, "one configuration")
			cfg, ok := nested(obj, "data", configFile).(string)
			require.True(t, ok, "the ConfigMap holds %s", configFile)
			r.config = []byte(cfg)
			continue
		}
		r.objects = append(r.objects, obj)
	}
	require.NotNil(t, r.config, "the chart renders the agent's configuration")
	return r
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
		want[r.Name] = r.GroupResource().Group + " namespaced=" + strconvBool(r.Namespaced)
		require.Equal(t, r.Name, r.GroupResource().Resource, "the chart grants by kube-state-metrics' name")
	}
	require.Equal(t, want, got)
}

func strconvBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// Each kustomization's shape, rendered by the chart from its values file in
// ci/, lints, and is what the kustomization installs: the same ClusterRole
// rules, Roles and bindings, workload kind, replicas, strategy, security
// contexts, resources and claims, and a configuration that loads to the
// same effective configuration; every endpoint's disk buffer is on a
// writable volume big enough for it (diskBufferProblems).
func TestChartShapes(t *testing.T) {
	for _, dir := range chartShapeDirs(t) {
		t.Run(dir, func(t *testing.T) {
			values := filepath.Join(chartShapes, dir+"-values.yaml")
			out, err := runHelm(t, "lint", "--strict", chartDir, "-f", values)
			require.NoError(t, err, out)

			chart := renderChart(t, "-f", values)
			kust := renderKustomization(t, dir)

			var v struct {
				Collectors []string `json:"collectors"`
			}
			readManifest(t, values, &v, false)
			if v.Collectors == nil {
				require.Equal(t, rules(t, kust, "ClusterRole"), rules(t, chart, "ClusterRole"), "the ClusterRole")
			} else {
				// Listed collectors are granted, and only they, as in
				// kube-state-metrics' chart; the kustomization grants at
				// least as much.
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
			} else {
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
			kc2, cc2 := objectsOf[corev1.PersistentVolumeClaim](t, kust, "PersistentVolumeClaim"), objectsOf[corev1.PersistentVolumeClaim](t, chart, "PersistentVolumeClaim")
			require.Len(t, cc2, len(kc2))
			for name, c := range kc2 {
				require.Contains(t, cc2, name)
				require.Equal(t, c.Spec, cc2[name].Spec, "claim %s", name)
			}

			kcfg, ccfg := loadRendered(t, dir, kust), loadRendered(t, dir, chart)
			ke, err := kcfg.Effective()
			require.NoError(t, err)
			ce, err := ccfg.Effective()
			require.NoError(t, err)
			require.Equal(t, string(ke), string(ce), "the effective configuration")
			require.Empty(t, diskBufferProblems(ccfg.RemoteWrite, cw, chart))
		})
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

// granted returns the group/resource pairs the ClusterRoles grant get,
// list and watch on.
func granted(t *testing.T, r rendered) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, rs := range rules(t, r, "ClusterRole") {
		for _, rule := range rs {
			require.Equal(t, []string{"get", "list", "watch"}, rule.Verbs)
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					out[schema.GroupResource{Group: g, Resource: res}.String()] = true
				}
			}
		}
	}
	return out
}

// The values kube-state-metrics' chart users know render into the
// configuration the agent loads, with their meaning there: collectors and
// namespaces as a list or a comma-separated string, the label and
// annotation allowlists as kube-state-metrics' resource=[keys] entries (or
// the configuration's map), the remote_write entries unchanged but for the
// disk buffer each gets; and RBAC follows: collectors narrow the
// ClusterRole, rbac.useClusterRole false gives Roles in the namespaces,
// rbac.extraRules are added.
func TestChartValues(t *testing.T) {
	write := func(t *testing.T, values string) string {
		p := filepath.Join(t.TempDir(), "values.yaml")
		require.NoError(t, os.WriteFile(p, []byte(values), 0o600))
		return p
	}
	t.Run("kube-state-metrics keys", func(t *testing.T) {
		r := renderChart(t, "-f", write(t, `
collectors: "pods, nodes,deployments"
namespaces: "team-a, team-b"
namespacesDenylist: [kube-system]
metricDenylist: [kube_pod_status_.*, kube_node_spec_taint]
metricLabelsAllowlist: ["pods=[app,team]", "nodes=[*]"]
metricAnnotationsAllowList: "namespaces=[owner, kubernetes.io/team],deployments=[*]"
externalLabels: {cluster: edge-1}
selfMonitor: {enabled: false}
extraConfig: {snapshot_interval: 1m}
rbac:
  extraRules:
    - apiGroups: [example.com]
      resources: [widgets]
      verbs: [list, watch]
remoteWrite:
  - url: https://mimir.example.com/api/v1/push
    headers: {X-Scope-OrgID: edge-1}
    queue_config: {max_samples_per_send: 500, retry_on_http_429: false}
    write_relabel_configs:
      - {action: labeldrop, regex: uid}
  - url: http://vm.example.com:8428/api/v1/write
    name: vm
    disk_buffer: {directory: ""}
`))
		cfg := loadRendered(t, "values", r)
		w := cfg.Watch
		require.Equal(t, []string{"pods", "nodes", "deployments"}, w.Resources)
		require.Equal(t, []string{"team-a", "team-b"}, w.Namespaces)
		require.Equal(t, []string{"kube-system"}, w.NamespacesDenylist)
		require.Equal(t, []string{"kube_pod_status_.*", "kube_node_spec_taint"}, w.MetricDenylist)
		require.Equal(t, map[string][]string{"pods": {"app", "team"}, "nodes": {"*"}}, w.MetricLabelsAllowlist)
		require.Equal(t, map[string][]string{"namespaces": {"owner", "kubernetes.io/team"}, "deployments": {"*"}}, w.MetricAnnotationsAllowlist)
		require.Equal(t, map[string]string{"cluster": "edge-1"}, cfg.ExternalLabels)
		require.False(t, cfg.PushSelfMetrics)
		require.Equal(t, time.Minute, cfg.SnapshotInterval)
		require.Len(t, cfg.RemoteWrite, 2)
		mimir, vm := cfg.RemoteWrite[0], cfg.RemoteWrite[1]
		require.Equal(t, "mimir.example.com", mimir.Name, "the default name, the URL's host")
		require.Equal(t, "/var/lib/kube-state-push/mimir.example.com", mimir.DiskBuffer.Directory)
		require.Equal(t, int64(1<<30), mimir.DiskBuffer.MaxBytes)
		require.Equal(t, "edge-1", mimir.Headers["X-Scope-OrgID"])
		require.Equal(t, 500, mimir.QueueConfig.MaxSamplesPerSend)
		require.False(t, mimir.QueueConfig.RetryOnHTTP429)
		require.Len(t, mimir.WriteRelabelConfigs, 1)
		require.Empty(t, vm.DiskBuffer.Directory, "an entry's own disk_buffer is kept")
		require.Empty(t, diskBufferProblems(cfg.RemoteWrite[:1], r.workload(t), r))

		got := rules(t, r, "ClusterRole")["kube-state-push"]
		require.Equal(t, []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"list", "watch"}},
		}, got)
	})

	t.Run("the configuration's own map shape", func(t *testing.T) {
		r := renderChart(t, "-f", write(t, `
metricLabelsAllowlist: {pods: [app]}
remoteWrite: [{url: "http://prometheus:9090/api/v1/write", name: p}]
`))
		cfg := loadRendered(t, "values", r)
		require.Equal(t, map[string][]string{"pods": {"app"}}, cfg.Watch.MetricLabelsAllowlist)
		require.Equal(t, watch.DefaultResources, cfg.Watch.Resources, "no collectors: kube-state-metrics' defaults")
	})

	t.Run("Roles in the namespaces", func(t *testing.T) {
		r := renderChart(t, "-f", write(t, `
rbac: {useClusterRole: false}
collectors: [pods, configmaps, deployments]
namespaces: [team-a, team-b]
remoteWrite: [{url: "http://prometheus:9090/api/v1/write"}]
`))
		require.Empty(t, rules(t, r, "ClusterRole"))
		roles := objectsOf[rbacv1.Role](t, r, "Role")
		bindings := objectsOf[rbacv1.RoleBinding](t, r, "RoleBinding")
		var namespaces []string
		for _, obj := range r.objects {
			if obj["kind"] == "Role" {
				namespaces = append(namespaces, nested(obj, "metadata", "namespace").(string))
			}
		}
		require.Equal(t, []string{"team-a", "team-b"}, namespaces)
		require.Len(t, roles, 1, "one name, in each namespace")
		require.Equal(t, []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "pods"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}},
		}, roles["kube-state-push"].Rules)
		require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kube-state-push", Namespace: "kube-state-push"}}, bindings["kube-state-push"].Subjects)
		cfg := loadRendered(t, "values", r)
		require.Equal(t, []string{"team-a", "team-b"}, cfg.Watch.Namespaces)
	})

	t.Run("customResourceState", func(t *testing.T) {
		doc := `
    kind: CustomResourceStateMetrics
    spec:
      resources:
        - groupVersionKind: {group: example.com, version: v1, kind: Widget}
          metrics:
            - name: ready
              help: Whether the widget is ready.
              each:
                type: Gauge
                gauge: {path: [status, ready]}`
		rw := "\nremoteWrite: [{url: \"http://prometheus:9090/api/v1/write\"}]\n"
		for name, values := range map[string]string{
			"a map":    "customResourceState:\n  enabled: true\n  config:" + strings.ReplaceAll(doc, "\n    ", "\n      ") + rw,
			"a string": "customResourceState:\n  enabled: true\n  config: |" + strings.ReplaceAll(doc, "\n    ", "\n      ") + rw,
		} {
			t.Run(name, func(t *testing.T) {
				r := renderChart(t, "-f", write(t, values))
				var raw map[string]any
				require.NoError(t, yaml.Unmarshal(r.config, &raw))
				crs, ok := raw["custom_resource_state"].(map[string]any)
				require.True(t, ok, "custom_resource_state is the document, inline:\n%s", r.config)
				require.Equal(t, "CustomResourceStateMetrics", crs["kind"])
				cfg := loadRendered(t, "values", r)
				require.NotNil(t, cfg.CustomResourceState)
				require.Contains(t, rules(t, r, "ClusterRole")["kube-state-push"], rbacv1.PolicyRule{
					APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"list", "watch"},
				}, "the agent watches the CRDs")
			})
		}
	})
}

// The chart refuses values that cannot work, saying why: more pushing
// replicas than one without a way to deduplicate, a claim shared by
// replicas, Roles that cannot grant what is watched, an unknown collector,
// a malformed allowlist, a key it does not know (kubelet: the agent has no
// kubelet source yet), podSecurityContext (securityContext is the pod's, as
// in kube-state-metrics' chart), no endpoint.
func TestChartRefuses(t *testing.T) {
	rw := "remoteWrite[0].url=http://prometheus:9090/api/v1/write"
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"replicas=2"}, "replicas: 2 pods would each push every series"},
		{[]string{"replicas=2", "leaderElection.enabled=true", "persistence.enabled=true"}, "persistence.enabled: a Deployment's replicas cannot share one ReadWriteOnce claim"},
		{[]string{"autosharding.enabled=true", "leaderElection.enabled=true"}, "autosharding.enabled and leaderElection.enabled"},
		{[]string{"rbac.useClusterRole=false"}, "rbac.useClusterRole: false grants Roles in the namespaces listed in namespaces, which is empty"},
		{[]string{"rbac.useClusterRole=false", "namespaces=a"}, "cannot grant the default collectors"},
		{[]string{"rbac.useClusterRole=false", "namespaces=a", "collectors={pods,nodes}"}, "cannot cover the cluster-scoped collectors nodes"},
		{[]string{"rbac.useClusterRole=false", "namespaces=a", "collectors={pods}", "customResourceState.enabled=true", "customResourceState.config.kind=CustomResourceStateMetrics"}, "cannot grant customResourceState the list and watch on CustomResourceDefinitions"},
		{[]string{"customResourceState.enabled=true"}, "customResourceState.enabled: customResourceState.config is empty"},
		{[]string{"metricAllowlist={kube_pod_info}", "metricDenylist={kube_node_info}"}, "metricAllowlist and metricDenylist exclude each other"},
		{[]string{"collectors={pods,podz}"}, `collectors: unknown resource "podz"`},
		{[]string{"metricLabelsAllowlist={pods}"}, `metricLabelsAllowlist: cannot read "pods"`},
		{[]string{"kubelet.enabled=true"}, "additional properties 'kubelet' not allowed"},
		{[]string{"podSecurityContext.runAsUser=1000"}, "podSecurityContext: as in kube-state-metrics' chart, the pod's security context is securityContext"},
		{[]string{"extraConfig.auto_sharding=true", "autosharding.enabled=true", "replicas=2"}, "extraConfig.auto_sharding: the chart sets auto_sharding from its own values"},
		{nil, "remoteWrite: at least one endpoint is required"},
	} {
		t.Run(strings.Join(tc.set, ","), func(t *testing.T) {
			args := []string{"template", "x", chartDir}
			if tc.want != "remoteWrite: at least one endpoint is required" {
				args = append(args, "--set", rw)
			}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			_, err := runHelm(t, args...)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// Every shape, and one with every value set, applies to a real API server
// with server-side apply and strict field validation, so that a field the
// API does not know, or a value it refuses, fails.
func TestChartApply(t *testing.T) {
	helmBinary(t)
	cp := testenv.SharedControlPlane(t)
	cs, err := kubernetes.NewForConfig(cp.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cp.RESTConfig())
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(cp.RESTConfig())
	require.NoError(t, err)
	groups, err := restmapper.GetAPIGroupResources(disc)
	require.NoError(t, err)
	mapper := restmapper.NewDiscoveryRESTMapper(groups)

	// apply applies an object with server-side apply, strictly.
	apply := func(obj map[string]any) error {
		u := &unstructured.Unstructured{Object: obj}
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return err
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			if u.GetNamespace() == "" {
				return fmt.Errorf("%s %s names no namespace", gvk.Kind, u.GetName())
			}
			ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		_, err = ri.Patch(t.Context(), u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
			FieldManager: "kube-state-push-chart-test", Force: ptr.To(true), FieldValidation: "Strict",
		})
		return err
	}

	// The check has teeth: a field the API does not know fails.
	bad := renderChart(t, "-f", filepath.Join(chartShapes, "base-values.yaml")).workload(t)
	require.NotNil(t, bad.deployment)
	obj := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "chart-bad", "namespace": "default"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "bad"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "bad"}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "c", "image": bad.deployment.Spec.Template.Spec.Containers[0].Image, "readOnlyRootFilesystem": true,
				}}},
			},
		},
	}
	require.ErrorContains(t, apply(obj), `readOnlyRootFilesystem: field not declared in schema`)

	everything := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(everything, []byte(`
remoteWrite: [{url: "http://prometheus:9090/api/v1/write", name: prometheus}]
externalLabels: {cluster: c}
collectors: [pods, configmaps]
namespaces: [chart-all-a]
rbac: {useClusterRole: false, extraRules: [{apiGroups: [example.com], resources: [widgets], verbs: [list, watch]}]}
serviceAccount: {annotations: {example.com/role: agent}}
persistence: {enabled: true, storageClassName: standard}
networkPolicy: {enabled: true, egress: [{}]}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: monitoring, effect: NoSchedule}]
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector: {matchLabels: {app.kubernetes.io/name: kube-state-push}}
podAnnotations: {example.com/a: b}
podLabels: {team: observability}
priorityClassName: ""
service: {annotations: {example.com/s: t}}
extraArgs: [--log.level=debug]
`), 0o600))
	crs := filepath.Join(t.TempDir(), "crs.yaml")
	require.NoError(t, os.WriteFile(crs, []byte(`
remoteWrite: [{url: "http://prometheus:9090/api/v1/write", name: prometheus}]
customResourceState:
  enabled: true
  config:
    kind: CustomResourceStateMetrics
    spec:
      resources:
        - groupVersionKind: {group: example.com, version: v1, kind: Widget}
          metrics:
            - name: ready
              help: Whether the widget is ready.
              each: {type: Gauge, gauge: {path: [status, ready]}}
rbac: {extraRules: [{apiGroups: [example.com], resources: [widgets], verbs: [list, watch]}]}
networkPolicy: {enabled: true, ingress: [{from: [{podSelector: {matchLabels: {app: prometheus}}}]}]}
selfMonitor: {enabled: false}
securityContext: {enabled: false}
`), 0o600))
	shapes := map[string]string{"all": everything, "crs": crs}
	for _, dir := range chartShapeDirs(t) {
		shapes[dir] = filepath.Join(chartShapes, dir+"-values.yaml")
	}
	ctx := t.Context()
	for name, values := range shapes {
		t.Run(name, func(t *testing.T) {
			ns := "chart-" + name
			for _, n := range []string{ns, "chart-all-a"} {
				if n == "chart-all-a" && name != "all" {
					continue
				}
				_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			release := "ksp-" + name
			out, err := runHelm(t, "template", release, chartDir, "--namespace", ns, "-f", values)
			require.NoError(t, err)
			objs := splitManifests(t, out)
			require.NotEmpty(t, objs)
			kinds := map[string]int{}
			for _, obj := range objs {
				require.NoError(t, apply(obj), "server-side apply of %s %v/%v", obj["kind"], nested(obj, "metadata", "namespace"), nested(obj, "metadata", "name"))
				kinds[obj["kind"].(string)]++
			}
			require.Equal(t, 1, kinds["Deployment"]+kinds["StatefulSet"], "one workload")
			require.Equal(t, 1, kinds["ConfigMap"])
			if name == "crs" {
				require.Equal(t, 1, kinds["ClusterRole"])
				require.Equal(t, 1, kinds["NetworkPolicy"])
			}
			if name == "all" {
				require.Equal(t, 1, kinds["NetworkPolicy"])
				require.Equal(t, 1, kinds["PersistentVolumeClaim"])
				require.Equal(t, 1, kinds["Role"])
			}
		})
	}
}

// haveHelm reports whether helm is built; in CI (CI=true) it must be.
func haveHelm(t *testing.T) bool {
	t.Helper()
	if _, err := testenv.Binary("helm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("missing helm in CI: %v", err)
		}
		t.Logf("helm not built: the README's helm commands are not rendered: %v", err)
		return false
	}
	return true
}

// checkHelmCommand checks a helm install or upgrade of the README: it
// installs this chart as the release and namespace of deploy/base (so that
// the walkthrough's kubectl, port-forward and query steps hold for it too),
// its values files exist, it sets only keys the chart has, and, with helm
// at hand, it renders into a configuration the agent loads and a workload
// of deploy/base's name.
func checkHelmCommand(t *testing.T, cmd string, base appsv1.Deployment) {
	t.Helper()
	var positional, sets, files []string
	namespace := ""
	fields := strings.Fields(strings.NewReplacer("'", "", `"`, "").Replace(cmd))
	require.Contains(t, []string{"install", "upgrade"}, fields[1], cmd)
	for i := 2; i < len(fields); i++ {
		switch f := fields[i]; f {
		case "--namespace", "-n", "--set", "-f", "--values":
			require.Less(t, i+1, len(fields), "%s: %s takes a value", cmd, f)
			i++
			switch f {
			case "--namespace", "-n":
				namespace = fields[i]
			case "--set":
				sets = append(sets, fields[i])
			default:
				files = append(files, fields[i])
			}
		case "--create-namespace", "--install", "--wait":
		default:
			require.False(t, strings.HasPrefix(f, "-"), "%s: flag %s is not checked here", cmd, f)
			positional = append(positional, f)
		}
	}
	require.Equal(t, []string{base.Name, "deploy/" + chartDir}, positional, "%s: release and chart", cmd)
	require.Equal(t, base.Namespace, namespace, cmd)

	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	readManifest(t, filepath.Join(chartDir, "values.schema.json"), &schema, false)
	args := []string{"--namespace", namespace}
	for _, s := range sets {
		key, _, ok := strings.Cut(s, "=")
		require.True(t, ok, "%s: --set %s", cmd, s)
		top := regexp.MustCompile(`^[A-Za-z]+`).FindString(key)
		require.Contains(t, schema.Properties, top, "%s: the chart has no value %s", cmd, key)
		args = append(args, "--set", s)
	}
	for _, f := range files {
		p := strings.TrimPrefix(f, "deploy/")
		require.FileExists(t, p, cmd)
		args = append(args, "-f", p)
	}
	if !haveHelm(t) {
		return
	}
	r := renderRelease(t, base.Name, namespace, args...)
	loadRendered(t, "README "+cmd, r)
	w := r.workload(t)
	require.Contains(t, []string{"Deployment", "StatefulSet"}, w.kind)
}
