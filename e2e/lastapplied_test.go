package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// kubectl apply copies an object into its
// kubectl.kubernetes.io/last-applied-configuration annotation: a
// ConfigMap's data, a Deployment's environment. An annotation allowlist of
// "*" or a pattern never exports it, neither to the receiver nor on the
// pull page; the other annotations are exported.
func TestLastAppliedConfigurationNeverLeaves(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns, secret = "lastapplied", "applied-env-secret-8e2d4c"
	createNamespace(t, client, ns)
	defer deleteNamespace(t, client, ns)
	annotations := map[string]string{
		"note":                         "kept",
		v1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","kind":"ConfigMap","data":{"token":"` + secret + `"}}`,
	}
	_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "applied", Annotations: annotations},
		Data:       map[string]string{"token": secret},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "applied"}
	_, err = client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "applied", Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "app:1",
					Env: []v1.EnvVar{{Name: "TOKEN", Value: secret}}}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	capture := testenv.NewCapture()
	defer capture.Close()
	cfg := captureConfig(capture.URL()).set("pull", map[string]string{"listen_address": "127.0.0.1:0"})
	cfg.Resources = []string{"configmaps", "deployments"}
	cfg.set("metric_annotations_allowlist", map[string][]string{"configmaps": {"*"}, "deployments": {"note", "kubectl.kubernetes.io/*"}})
	o := startAgent(t, agentOptions{ctx: ctx, config: cfg})
	defer func() { require.NoError(t, o.stop()) }()
	o.waitReady(t)

	want := []string{
		fmt.Sprintf(`kube_configmap_annotations{annotation_note="kept",configmap="applied",namespace=%q}`, ns),
		fmt.Sprintf(`kube_deployment_annotations{annotation_note="kept",deployment="applied",namespace=%q}`, ns),
	}
	var pushed string
	eventually(t, 30*time.Second, "the annotations pushed", func() error {
		ts := capture.Timestamps()
		if len(ts) == 0 {
			return fmt.Errorf("nothing pushed yet")
		}
		var b strings.Builder
		for k := range capture.Series(ts[len(ts)-1]) {
			b.WriteString(k + "\n")
		}
		pushed = b.String()
		for _, w := range want {
			if !strings.Contains(pushed, w) {
				return fmt.Errorf("no %s", w)
			}
		}
		return nil
	})
	page, err := httpGet("http://" + o.agent.PullAddr().String() + "/metrics")
	require.NoError(t, err)
	for _, w := range []string{"configmap", "deployment"} {
		require.Contains(t, page, fmt.Sprintf(`kube_%s_annotations{namespace=%q,%[1]s="applied",annotation_note="kept"} 1`, w, ns), "the pull page")
	}
	for what, out := range map[string]string{"pushed": pushed, "pull page": page} {
		require.NotContains(t, out, secret, what)
		require.NotContains(t, out, "last_applied", what)
	}
}
