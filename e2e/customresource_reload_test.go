package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// A reload that changes custom_resource_state applies like any other: the
// kind's watch is replaced once the new one holds its list, the series the
// new document no longer renders get staleness markers, the new ones
// appear; the metric denylist and external labels apply to custom
// resource series as to the others.
func TestCustomResourceReload(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	dc, err := dynamic.NewForConfig(env.cp.RESTConfig())
	require.NoError(t, err)
	ns := "crs-reload"
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	gvr := schema.GroupVersionResource{Group: "reload.example.com", Version: "v1", Resource: "cogs"}
	createCRD(t, ctx, dc, crdObject("reload.example.com", "Cog", "cogs", "Namespaced", "v1"))
	defer deleteCRD(t, context.Background(), dc, "cogs.reload.example.com")
	createObjects(t, ctx, dc, gvr, fmt.Sprintf("{apiVersion: reload.example.com/v1, kind: Cog, metadata: {name: c1, namespace: %s}, spec: {size: 4, speed: 9}}", ns))

	capture := testenv.NewCapture()
	defer capture.Close()
	config := func(metric, denylist string) *agentConfig {
		cfg := captureConfig(capture.URL()).set("metric_denylist", []string{denylist}).set("custom_resource_state", yamlValue(t, fmt.Sprintf(`
spec:
  resources:
    - groupVersionKind: {group: reload.example.com, version: v1, kind: Cog}
      labelsFromPath: {name: [metadata, name]}
      metrics:
        - {name: cog_%[1]s, help: h, each: {type: Gauge, gauge: {path: [spec, %[1]s]}}}
        - {name: cog_denied, help: h, each: {type: Gauge, gauge: {path: [spec, size]}}}
`, metric)))
		cfg.Resources = []string{"namespaces"}
		cfg.ExternalLabels = map[string]string{"cluster": "c1"}
		return cfg
	}
	o := startAgent(t, agentOptions{ctx: ctx, config: config("size", "kube_customresource_cog_denied")})
	defer func() { require.NoError(t, o.stop()) }()
	key := func(metric string) string {
		return `kube_customresource_cog_` + metric + `{cluster="c1",customresource_group="reload.example.com",customresource_kind="Cog",customresource_version="v1",name="c1"}`
	}
	last := func() map[string]float64 {
		ts := capture.Timestamps()
		if len(ts) == 0 {
			return nil
		}
		return capture.Series(ts[len(ts)-1])
	}
	eventually(t, 30*time.Second, "cog_size", func() error {
		if last()[key("size")] != 4 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	for k := range last() {
		require.False(t, strings.Contains(k, "cog_denied"), "denied: %s", k)
	}

	// The configuration file changes: speed instead of size.
	o.writeConfig(t, config("speed", "kube_customresource_cog_denied").yamlText(t))
	require.NoError(t, o.agent.Reload(ctx))
	eventually(t, 30*time.Second, "cog_speed, and cog_size's staleness marker", func() error {
		stale := false
		for _, ts := range capture.Timestamps() {
			if v, ok := capture.Series(ts)[key("size")]; ok && encode.IsStaleNaN(v) {
				stale = true
			}
		}
		if !stale || last()[key("speed")] != 9 {
			return fmt.Errorf("stale %v, latest %v", stale, last())
		}
		return nil
	})
}
