package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-state-push/kube-state-push/agent"
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
	config := func(metric, denylist string) string {
		return fmt.Sprintf(`kubeconfig: %s
snapshot_interval: 1s
listen_address: ""
push_self_metrics: false
resources: [namespaces]
external_labels: {cluster: c1}
metric_denylist: [%s]
custom_resource_state:
  spec:
    resources:
      - groupVersionKind: {group: reload.example.com, version: v1, kind: Cog}
        labelsFromPath: {name: [metadata, name]}
        metrics:
          - {name: cog_%[3]s, help: h, each: {type: Gauge, gauge: {path: [spec, %[3]s]}}}
          - {name: cog_denied, help: h, each: {type: Gauge, gauge: {path: [spec, size]}}}
remote_write:
  - url: %s
    queue_config: {batch_send_deadline: 100ms}
`, env.cp.Kubeconfig, denylist, metric, capture.URL())
	}
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte(config("size", "kube_customresource_cog_denied")), 0o600))
	o := startAgent(t, agentOptions{ctx: ctx, configText: config("size", "kube_customresource_cog_denied"), options: agent.Options{ConfigFile: cfgFile}})
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
	require.NoError(t, os.WriteFile(cfgFile, []byte(config("speed", "kube_customresource_cog_denied")), 0o600))
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
