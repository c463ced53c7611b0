package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// TestNodeKustomizeBase applies deploy/base as `kubectl apply -k` would,
// with server-side apply, after the README's install steps 1 and 2: the
// image named as imported (kustomize's images transformer) and the
// configuration's remote_write URL and cluster label edited. The Pod
// becomes Ready and pushes.
func TestNodeKustomizeBase(t *testing.T) {
	n := sharedNode(t)
	started := time.Now()
	prom, url := nodeReceiver(t, n, "")
	const ns, cluster = "kube-state-push", "node-kustomize"

	objs := baseObjects(t, url+"/api/v1/write", cluster)
	cfg := n.RESTConfig()
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	groups, err := restmapper.GetAPIGroupResources(disc)
	require.NoError(t, err)
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	resource := func(u *unstructured.Unstructured) dynamic.ResourceInterface {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err)
		if m.Scope.Name() == "namespace" {
			return dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		return dyn.Resource(m.Resource)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, u := range objs {
			if u.GetKind() == "ClusterRole" || u.GetKind() == "ClusterRoleBinding" {
				_ = resource(u).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
			}
		}
		deleteNodeNamespace(n, ns)
	})
	for _, u := range objs {
		data, err := json.Marshal(u.Object)
		require.NoError(t, err)
		_, err = resource(u).Patch(t.Context(), u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
			FieldManager: "kube-state-push-e2e", Force: ptr.To(true), FieldValidation: "Strict",
		})
		require.NoError(t, err, "server-side apply of %s %s", u.GetKind(), u.GetName())
	}
	c, err := n.Client()
	require.NoError(t, err)
	pod := waitPodReady(t, c, n, ns, "app.kubernetes.io/name=kube-state-push", 3*time.Minute)
	t.Logf("deploy/base: Pod %s Ready after %s", pod.Name, time.Since(started).Round(100*time.Millisecond))

	within := 2 * snapshotInterval
	queryLog(t, prom, within, fmt.Sprintf(`kube_pod_status_phase{cluster=%q,namespace=%q,pod=%q,phase="Running"} == 1`, cluster, ns, pod.Name), nonEmpty(nil))
	queryLog(t, prom, within, fmt.Sprintf(`kube_node_info{cluster=%q,node=%q}`, cluster, testenv.NodeName), nonEmpty(nil))
	t.Logf("test took %s", time.Since(started).Round(100*time.Millisecond))
}

// baseObjects reads deploy/base's resources and its configMapGenerator's
// ConfigMap, as kustomize renders them (namespace set, no name suffix), with
// the image named as realNode imported it and config.yaml's remote_write
// URL and cluster label replaced.
func baseObjects(t *testing.T, writeURL, cluster string) []*unstructured.Unstructured {
	t.Helper()
	const base = "../deploy/base"
	var k struct {
		APIVersion         string   `json:"apiVersion"`
		Kind               string   `json:"kind"`
		Namespace          string   `json:"namespace"`
		Resources          []string `json:"resources"`
		ConfigMapGenerator []struct {
			Name  string   `json:"name"`
			Files []string `json:"files"`
		} `json:"configMapGenerator"`
	}
	b, err := os.ReadFile(filepath.Join(base, "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(b, &k))
	var objs []*unstructured.Unstructured
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join(base, r))
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(b, &u.Object), r)
		if u.GetKind() != "Namespace" && u.GetKind() != "ClusterRole" && u.GetKind() != "ClusterRoleBinding" {
			u.SetNamespace(k.Namespace)
		}
		if u.GetKind() == "Deployment" {
			containers, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			require.NoError(t, err)
			containers[0].(map[string]any)["image"] = realNode.image
			require.NoError(t, unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers"))
		}
		objs = append(objs, u)
	}
	require.Len(t, k.ConfigMapGenerator, 1)
	g := k.ConfigMapGenerator[0]
	data := map[string]any{}
	for _, f := range g.Files {
		b, err := os.ReadFile(filepath.Join(base, f))
		require.NoError(t, err)
		s := string(b)
		const url, label = "http://prometheus.monitoring.svc:9090/api/v1/write", "cluster: my-cluster"
		require.Contains(t, s, url)
		require.Contains(t, s, label)
		s = strings.Replace(s, url, writeURL, 1)
		s = strings.Replace(s, label, "cluster: "+cluster, 1)
		data[filepath.Base(f)] = s
	}
	objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": g.Name, "namespace": k.Namespace},
		"data":     data,
	}})
	// As kustomize orders them: the workload after what it refers to.
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return cmp.Compare(boolInt(a.GetKind() == "Deployment"), boolInt(b.GetKind() == "Deployment"))
	})
	return objs
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
