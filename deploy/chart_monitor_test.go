package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// prometheusOperator is the Prometheus Operator release whose ServiceMonitor
// CRD the chart's ServiceMonitor must satisfy, read from the Go module
// cache (the module proxy serves the repository, CRDs included).
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.89.0"

// serviceMonitorCRD returns the Prometheus Operator's ServiceMonitor
// CustomResourceDefinition, downloading its module where missing.
func serviceMonitorCRD(t *testing.T) map[string]any {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", prometheusOperator)
	// Outside this module, so that its go.mod and go.sum stay as they are.
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	require.NoError(t, json.Unmarshal(out, &mod), "go mod download %s: %v: %s", prometheusOperator, err, out)
	require.Empty(t, mod.Error, "go mod download %s", prometheusOperator)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(mod.Dir, "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"))
	require.NoError(t, err)
	var crd map[string]any
	require.NoError(t, yaml.Unmarshal(b, &crd))
	require.Equal(t, "servicemonitors.monitoring.coreos.com", nested(crd, "metadata", "name"))
	return crd
}

// kubeStateMetricsMonitor is prometheus.monitor as kube-state-metrics'
// chart takes it in its older, flat shape (what kube-prometheus-stack's
// values for it set), beside other keys of that chart.
const kubeStateMetricsMonitor = `
collectors: [pods, nodes, deployments]
metricLabelsAllowlist: ["pods=[app]"]
selfMonitor: {enabled: false}
remoteWrite: [{url: "http://prometheus:9090/api/v1/write", name: prometheus}]
pull: {enabled: true}
prometheus:
  monitor:
    enabled: true
    additionalLabels: {release: kube-prometheus-stack}
    jobLabel: app.kubernetes.io/name
    interval: 30s
    scrapeTimeout: 10s
    honorLabels: true
    relabelings:
      - sourceLabels: [__meta_kubernetes_pod_node_name]
        targetLabel: node
        action: replace
    metricRelabelings:
      - sourceLabels: [__name__]
        regex: kube_pod_status_phase|kube_node_info
        action: keep
`

// kubeStateMetricsMonitorBlocks is its newer shape: the state endpoint's
// keys under http, /metrics' under metrics; in another namespace than the
// release's, with scrape limits and target labels.
const kubeStateMetricsMonitorBlocks = `
remoteWrite: [{url: "http://prometheus:9090/api/v1/write", name: prometheus}]
pull: {enabled: true}
webConfig: {existingSecret: agent-web, tls: true}
prometheus:
  monitor:
    enabled: true
    namespace: chart-monitor-prometheus
    annotations: {example.com/owner: observability}
    targetLabels: [app.kubernetes.io/name]
    podTargetLabels: [app]
    sampleLimit: 100000
    labelLimit: 64
    http:
      interval: 15s
      honorLabels: true
      tlsConfig: {insecureSkipVerify: true}
      metricRelabelings:
        - {action: labeldrop, regex: uid}
    metrics:
      interval: 1m
      scrapeTimeout: 20s
      tlsConfig: {insecureSkipVerify: true}
`

// serviceMonitor is the rendered ServiceMonitor, decoded into the fields
// the tests look at.
type serviceMonitor struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		JobLabel          string           `json:"jobLabel"`
		TargetLabels      []string         `json:"targetLabels"`
		PodTargetLabels   []string         `json:"podTargetLabels"`
		SampleLimit       int              `json:"sampleLimit"`
		LabelLimit        int              `json:"labelLimit"`
		NamespaceSelector map[string]any   `json:"namespaceSelector"`
		Selector          map[string]any   `json:"selector"`
		Endpoints         []map[string]any `json:"endpoints"`
	} `json:"spec"`
}

func monitorOf(t *testing.T, objs []map[string]any) (serviceMonitor, map[string]any) {
	t.Helper()
	var found []map[string]any
	for _, obj := range objs {
		if obj["kind"] == "ServiceMonitor" {
			found = append(found, obj)
		}
	}
	require.Len(t, found, 1, "one ServiceMonitor")
	require.Equal(t, "monitoring.coreos.com/v1", found[0]["apiVersion"])
	b, err := json.Marshal(found[0])
	require.NoError(t, err)
	var sm serviceMonitor
	require.NoError(t, json.Unmarshal(b, &sm))
	return sm, found[0]
}

// A values file written for kube-state-metrics' chart, with its
// prometheus.monitor in either shape, renders a ServiceMonitor for the pull
// page and the agent's /metrics with that chart's keys, which the
// Prometheus Operator's CRD in a real API server accepts under strict
// field validation. Without pull, only /metrics; without enabled, none.
func TestChartServiceMonitor(t *testing.T) {
	write := func(t *testing.T, values string) string {
		p := filepath.Join(t.TempDir(), "values.yaml")
		require.NoError(t, os.WriteFile(p, []byte(values), 0o600))
		return p
	}
	flat := write(t, kubeStateMetricsMonitor)
	blocks := write(t, kubeStateMetricsMonitorBlocks)
	relabelings := []any{map[string]any{"sourceLabels": []any{"__meta_kubernetes_pod_node_name"}, "targetLabel": "node", "action": "replace"}}
	metricRelabelings := []any{map[string]any{"sourceLabels": []any{"__name__"}, "regex": "kube_pod_status_phase|kube_node_info", "action": "keep"}}

	t.Run("render", func(t *testing.T) {
		out, err := runHelm(t, "lint", "--strict", chartDir, "-f", flat)
		require.NoError(t, err, out)
		r := renderChart(t, "-f", flat)
		sm, _ := monitorOf(t, r.objects)
		require.Equal(t, "kube-state-push", sm.Metadata.Name)
		require.Equal(t, "kube-state-push", sm.Metadata.Namespace)
		require.Equal(t, "kube-prometheus-stack", sm.Metadata.Labels["release"])
		require.Equal(t, "app.kubernetes.io/name", sm.Spec.JobLabel)
		require.Nil(t, sm.Spec.NamespaceSelector, "the Service is in the ServiceMonitor's namespace")
		require.Equal(t, map[string]any{"matchLabels": map[string]any{
			"app.kubernetes.io/name": "kube-state-push", "app.kubernetes.io/instance": "kube-state-push",
		}}, sm.Spec.Selector)
		want := func(port string) map[string]any {
			return map[string]any{
				"port": port, "interval": "30s", "scrapeTimeout": "10s", "honorLabels": true,
				"relabelings": relabelings, "metricRelabelings": metricRelabelings,
			}
		}
		require.Equal(t, []map[string]any{want("http-state"), want("http-metrics")}, sm.Spec.Endpoints)

		// The ports it names are the Service's, and select its pods.
		svc := objectsOf[corev1.Service](t, r, "Service")["kube-state-push"]
		require.NotNil(t, svc)
		var ports []string
		for _, p := range svc.Spec.Ports {
			ports = append(ports, p.Name)
		}
		require.Equal(t, []string{"http-metrics", "http-state"}, ports)
		for k, v := range sm.Spec.Selector["matchLabels"].(map[string]any) {
			require.Equal(t, v, svc.Labels[k], "the Service's label %s", k)
		}

		r = renderChart(t, "-f", blocks)
		sm, _ = monitorOf(t, r.objects)
		require.Equal(t, "chart-monitor-prometheus", sm.Metadata.Namespace)
		require.Equal(t, "observability", sm.Metadata.Annotations["example.com/owner"])
		require.Equal(t, map[string]any{"matchNames": []any{"kube-state-push"}}, sm.Spec.NamespaceSelector, "the release's namespace")
		require.Equal(t, []string{"app.kubernetes.io/name"}, sm.Spec.TargetLabels)
		require.Equal(t, []string{"app"}, sm.Spec.PodTargetLabels)
		require.Equal(t, 100000, sm.Spec.SampleLimit)
		require.Equal(t, 64, sm.Spec.LabelLimit)
		tls := map[string]any{"insecureSkipVerify": true}
		require.Equal(t, []map[string]any{
			{"port": "http-state", "interval": "15s", "honorLabels": true, "scheme": "https", "tlsConfig": tls,
				"metricRelabelings": []any{map[string]any{"action": "labeldrop", "regex": "uid"}}},
			{"port": "http-metrics", "interval": "1m", "scrapeTimeout": "20s", "scheme": "https", "tlsConfig": tls},
		}, sm.Spec.Endpoints, "each block's keys for its endpoint; https with webConfig.tls")

		r = renderChart(t, "-f", flat, "--set", "pull.enabled=false")
		sm, _ = monitorOf(t, r.objects)
		require.Equal(t, []map[string]any{want("http-metrics")}, sm.Spec.Endpoints, "no pull page: /metrics only")

		r = renderChart(t, "-f", flat, "--set", "prometheus.monitor.enabled=false")
		for _, obj := range r.objects {
			require.NotEqual(t, "ServiceMonitor", obj["kind"])
		}
	})

	t.Run("refused", func(t *testing.T) {
		for set, want := range map[string]string{
			"prometheus.monitor.bogus=1":               "additional properties 'bogus' not allowed",
			"prometheus.monitor.http.path=/x":          "additional properties 'path' not allowed",
			"prometheus.monitor.scheme=ftp":            "scheme",
			"prometheus.monitor.sampleLimit=-1":        "sampleLimit",
			"prometheus.scrapeconfig.enabled=true":     "additional properties 'scrapeconfig' not allowed",
			"prometheus.monitor.honorLabels=sometimes": "honorLabels",
		} {
			_, err := runHelm(t, "template", "x", chartDir, "-f", flat, "--set", set)
			require.ErrorContains(t, err, want, set)
		}
	})

	t.Run("apply", func(t *testing.T) {
		helmBinary(t)
		cp := testenv.SharedControlPlane(t)
		cs, err := kubernetes.NewForConfig(cp.RESTConfig())
		require.NoError(t, err)
		ctx := t.Context()

		crd := serviceMonitorCRD(t)
		a := newApplier(t, cp.RESTConfig())
		require.NoError(t, a.apply(crd))
		crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
		require.Eventually(t, func() bool {
			u, err := a.dyn.Resource(crdGVR).Get(ctx, "servicemonitors.monitoring.coreos.com", metav1.GetOptions{})
			return err == nil && established(u)
		}, 30*time.Second, 100*time.Millisecond, "the ServiceMonitor CRD established")
		// Discovery serves the new kind once established.
		a = newApplier(t, cp.RESTConfig())
		_, err = a.mapper.RESTMapping(schema.GroupKind{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"}, "v1")
		require.NoError(t, err)

		// The check has teeth: a field the CRD does not declare fails.
		bad := map[string]any{
			"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
			"metadata": map[string]any{"name": "chart-bad", "namespace": "default"},
			"spec": map[string]any{
				"selector":  map[string]any{"matchLabels": map[string]any{"app": "bad"}},
				"endpoints": []any{map[string]any{"port": "http", "honourLabels": true}},
			},
		}
		require.ErrorContains(t, a.apply(bad), "honourLabels")

		for name, values := range map[string]string{"flat": flat, "blocks": blocks} {
			t.Run(name, func(t *testing.T) {
				ns := "chart-monitor-" + name
				for _, n := range []string{ns, "chart-monitor-prometheus"} {
					_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
					if n != ns && apierrors.IsAlreadyExists(err) {
						continue
					}
					require.NoError(t, err)
				}
				release := "ksp-" + name
				out, err := runHelm(t, "template", release, chartDir, "--namespace", ns, "-f", values)
				require.NoError(t, err)
				objs := splitManifests(t, out)
				for _, obj := range objs {
					require.NoError(t, a.apply(obj), "server-side apply of %s %v/%v", obj["kind"], nested(obj, "metadata", "namespace"), nested(obj, "metadata", "name"))
				}
				_, rendered := monitorOf(t, objs)
				ri, err := a.resource(rendered)
				require.NoError(t, err)
				stored, err := ri.Get(ctx, nested(rendered, "metadata", "name").(string), metav1.GetOptions{})
				require.NoError(t, err)
				want, err := json.Marshal(rendered["spec"])
				require.NoError(t, err)
				got, err := json.Marshal(stored.Object["spec"])
				require.NoError(t, err)
				require.JSONEq(t, string(want), string(got), "the API server keeps every field")
			})
		}
	})
}

// established reports whether a CustomResourceDefinition is served.
func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
