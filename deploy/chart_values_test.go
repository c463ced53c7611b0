package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// The values kube-state-metrics' chart users know render into the
// configuration the agent loads, with their meaning there: collectors and
// namespaces as a list or a comma-separated string, the label and
// annotation allowlists as kube-state-metrics' resource=[keys] entries (or
// the configuration's map), the remote_write entries unchanged but for the
// disk buffer each gets; and RBAC follows: collectors narrow the
// ClusterRole, rbac.useClusterRole false gives Roles in the namespaces,
// rbac.extraRules are added. seriesLabelsFromObject takes either shape;
// customResourceStateOnly is resources: [] with no built-in grant.
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
			{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list", "watch"}},
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

	t.Run("pull", func(t *testing.T) {
		values := write(t, `
pull: {enabled: true, port: 9100}
remoteWrite: [{url: "http://prometheus:9090/api/v1/write", name: p}]
`)
		r := renderChart(t, "-f", values)
		cfg := loadRendered(t, "values", r)
		require.Equal(t, ":9100", cfg.Pull.ListenAddress)
		svc := objectsOf[corev1.Service](t, r, "Service")["kube-state-push"]
		require.NotNil(t, svc)
		require.Contains(t, svc.Spec.Ports, corev1.ServicePort{Name: "http-state", Port: 9100, TargetPort: intstr.FromString("http-state")})
		off := loadRendered(t, "values", renderChart(t, "-f", write(t, `remoteWrite: [{url: "http://prometheus:9090/api/v1/write", name: p}]`)))
		require.Empty(t, off.Pull.ListenAddress, "off by default")
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
			{APIGroups: []string{""}, Resources: []string{"configmaps", "pods"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list", "watch"}},
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

	t.Run("seriesLabelsFromObject", func(t *testing.T) {
		rw := "\nremoteWrite: [{url: \"http://prometheus:9090/api/v1/write\"}]\n"
		for name, values := range map[string]string{
			"a map":                     "seriesLabelsFromObject: {pods: [app.kubernetes.io/name, team], namespaces: [team]}" + rw,
			"kube-state-metrics' shape": `seriesLabelsFromObject: ["pods=[app.kubernetes.io/name,team]", "namespaces=[team]"]` + rw,
		} {
			t.Run(name, func(t *testing.T) {
				cfg := loadRendered(t, "values", renderChart(t, "-f", write(t, values)))
				require.Equal(t, map[string][]string{"pods": {"app.kubernetes.io/name", "team"}, "namespaces": {"team"}}, cfg.Watch.SeriesLabelsFromObject)
			})
		}
		r := renderChart(t, "--set", "remoteWrite[0].url=http://prometheus:9090/api/v1/write")
		require.NotContains(t, string(r.config), "series_labels_from_object", "not set: not rendered")
		require.Empty(t, loadRendered(t, "values", r).Watch.SeriesLabelsFromObject)
	})

	t.Run("customResourceStateOnly", func(t *testing.T) {
		r := renderChart(t, "-f", write(t, customResourceStateOnlyValues))
		var raw map[string]any
		require.NoError(t, yaml.Unmarshal(r.config, &raw))
		require.Equal(t, []any{}, raw["resources"], "resources: [], not left out:\n%s", r.config)
		cfg := loadRendered(t, "values", r)
		require.Empty(t, cfg.Watch.Resources, "no built-in resource")
		require.NotNil(t, cfg.Watch.Resources, "an empty list, not the defaults")
		require.NotNil(t, cfg.CustomResourceState)
		require.Equal(t, []rbacv1.PolicyRule{
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"list", "watch"}},
		}, rules(t, r, "ClusterRole")["kube-state-push"], "no rule for a built-in resource")
	})
}

// customResourceStateOnlyValues watches one custom resource and no built-in
// one.
const customResourceStateOnlyValues = `
remoteWrite: [{url: "http://prometheus:9090/api/v1/write", name: prometheus}]
customResourceStateOnly: true
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
`

// The chart refuses values that cannot work, saying why: more pushing
// replicas than one without a way to deduplicate, a claim shared by
// replicas, Roles that cannot grant what is watched, an unknown collector,
// a malformed allowlist, a kubelet mode it does not know or kubelets without
// the nodes watch, custom resources only without a custom resource state
// document or beside collectors or kubelets, a second kubelet identity in
// apiserver mode or beside a bearer_token_file of the user's,
// podSecurityContext (securityContext is the pod's, as in
// kube-state-metrics' chart), no endpoint.
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
		{[]string{"kubelet.enabled=true", "kubelet.mode=proxy"}, "kubelet.mode"},
		{[]string{"kubelet.enabled=true", "kubelet.config.mode=direct"}, "kubelet.config.mode: set kubelet.mode"},
		{[]string{"kubelet.enabled=true", "kubelet.mode=apiserver"}, "kubelet.mode: apiserver needs get on nodes/proxy, which allows running commands in every container of every node"},
		{[]string{"kubelet.enabled=true", "kubelet.mode=apiserver", "kubelet.allowNodesProxyWhichAllowsExec=false"}, "set kubelet.allowNodesProxyWhichAllowsExec: true"},
		{[]string{"existingConfigSecret=mine"}, "remoteWrite: unused with existingConfigSecret"},
		{[]string{"networkPolicy.enabled=true", "networkPolicy.ingress[0].ports[0].port=8080", "networkPolicy.ingressFrom[0].podSelector.matchLabels.app=p"}, "networkPolicy.ingress and networkPolicy.ingressFrom"},
		{[]string{"kubelet.enabled=true", "collectors={pods}"}, "kubelet.enabled: the kubelets are found through the nodes watch: add nodes to collectors"},
		{[]string{"podSecurityContext.runAsUser=1000"}, "podSecurityContext: as in kube-state-metrics' chart, the pod's security context is securityContext"},
		{[]string{"extraConfig.auto_sharding=true", "autosharding.enabled=true", "replicas=2"}, "extraConfig.auto_sharding: the chart sets auto_sharding from its own values"},
		{[]string{"customResourceStateOnly=true"}, "customResourceStateOnly: watches custom resources only, and customResourceState.enabled is false"},
		{[]string{"customResourceStateOnly=true", "customResourceState.enabled=true", "customResourceState.config.kind=CustomResourceStateMetrics", "collectors={pods}"}, "customResourceStateOnly and collectors exclude each other"},
		{[]string{"customResourceStateOnly=true", "customResourceState.enabled=true", "customResourceState.config.kind=CustomResourceStateMetrics", "kubelet.enabled=true"}, "customResourceStateOnly: kubelet.enabled finds the kubelets through the nodes watch"},
		{[]string{"kubelet.enabled=true", "kubelet.mode=apiserver", "kubelet.allowNodesProxyWhichAllowsExec=true", "kubelet.separateIdentity=true"}, "kubelet.separateIdentity: only mode direct sends a token to the kubelets"},
		{[]string{"kubelet.enabled=true", "kubelet.separateIdentity=true", "kubelet.config.bearer_token_file=/t"}, "kubelet.config.bearer_token_file: kubelet.separateIdentity sets it"},
		{[]string{"kubelet.enabled=true", "kubelet.separateIdentity=true", "extraVolumes[0].name=kubelet-token", "extraVolumes[0].emptyDir.medium=Memory"}, "kubelet-token"},
		{[]string{"seriesLabelsFromObject={pods}"}, `seriesLabelsFromObject: cannot read "pods"`},
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

// haveHelm reports whether helm is built; in CI (CI=true) it must be.
func haveHelm(t *testing.T) bool {
	t.Helper()
	if _, err := testenv.Binary("helm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("missing helm in CI: %v", err)
		}
		t.Logf("helm not built: the install docs' helm commands are not rendered: %v", err)
		return false
	}
	return true
}

// checkHelmCommand checks a helm install or upgrade of the install docs: it
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
