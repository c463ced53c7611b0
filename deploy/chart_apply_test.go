package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// Every shape, and one with every value set, applies to a real API server
// with server-side apply and strict field validation, so that a field the
// API does not know, or a value it refuses, fails. For custom resources only
// and for the kubelets' second identity, the API server's authorizer then
// says what each ServiceAccount may do.
func TestChartApply(t *testing.T) {
	helmBinary(t)
	cp := testenv.SharedControlPlane(t)
	cs, err := kubernetes.NewForConfig(cp.RESTConfig())
	require.NoError(t, err)
	a := newApplier(t, cp.RESTConfig())
	apply := a.apply

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
kubelet: {enabled: true, mode: apiserver, allowNodesProxyWhichAllowsExec: true, config: {interval: 1m, paths: [{path: /metrics/cadvisor}, {path: /metrics/resource}]}}
pull: {enabled: true, port: 8081}
networkPolicy: {enabled: true, ingress: [{from: [{podSelector: {matchLabels: {app: prometheus}}}]}]}
selfMonitor: {enabled: false}
securityContext: {enabled: false}
`), 0o600))
	// Credentials inline and from a Secret of the user's, which the
	// chart mounts; the web configuration from another.
	credentials := filepath.Join(t.TempDir(), "credentials.yaml")
	require.NoError(t, os.WriteFile(credentials, []byte(chartCredentials+`
  - url: https://mimir.example.com/api/v1/push
    name: mimir
    basic_auth: {username: kube-state-push, password_file: /etc/kube-state-push-secrets/password}
extraVolumes: [{name: remote-write-credentials, secret: {secretName: remote-write-credentials}}]
extraVolumeMounts: [{name: remote-write-credentials, mountPath: /etc/kube-state-push-secrets, readOnly: true}]
extraEnv: [{name: CLUSTER, valueFrom: {secretKeyRef: {name: remote-write-credentials, key: cluster}}}]
extraEnvFrom: [{secretRef: {name: remote-write-credentials, optional: true}}]
webConfig: {existingSecret: agent-web, tls: true}
networkPolicy: {enabled: true, ingressFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]}
`), 0o600))
	crsOnly := filepath.Join(t.TempDir(), "crs-only.yaml")
	require.NoError(t, os.WriteFile(crsOnly, []byte(customResourceStateOnlyValues), 0o600))
	kubeletIdentity := filepath.Join(t.TempDir(), "kubelet-identity.yaml")
	require.NoError(t, os.WriteFile(kubeletIdentity, []byte(`
remoteWrite: [{url: "http://prometheus:9090/api/v1/write", name: prometheus}]
seriesLabelsFromObject: {pods: [app.kubernetes.io/name, team]}
kubelet:
  enabled: true
  separateIdentity: true
  config: {address_types: [InternalIP, Hostname], body_size_limit: 8388608, sample_limit: 50000}
`), 0o600))
	existing := filepath.Join(t.TempDir(), "existing.yaml")
	require.NoError(t, os.WriteFile(existing, []byte("existingConfigSecret: my-config\npersistence: {size: 1Gi}\n"), 0o600))
	shapes := map[string]string{
		"all": everything, "crs": crs, "credentials": credentials, "existing": existing,
		"crs-only": crsOnly, "kubelet-identity": kubeletIdentity,
	}
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
			require.Zero(t, kinds["ConfigMap"])
			if name == "existing" {
				require.Zero(t, kinds["Secret"], "the user's Secret is the configuration")
				return
			}
			if name != "kubelet-identity" {
				require.Equal(t, 1, kinds["Secret"], "the configuration")
			}
			// What the API server holds is what the agent reads: the
			// rendered configuration, which loads.
			// The release's name does not hold the chart's: the full name
			// is both.
			fullname := release + "-kube-state-push"
			stored, err := cs.CoreV1().Secrets(ns).Get(ctx, fullname+"-config", metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, corev1.SecretTypeOpaque, stored.Type)
			cfg := loadRendered(t, name, rendered{config: stored.Data[configFile]})
			require.NotEmpty(t, cfg.RemoteWrite)
			if name == "credentials" {
				for _, v := range secretValues {
					require.Contains(t, string(stored.Data[configFile]), v)
				}
				require.Equal(t, "/etc/kube-state-push-secrets/password", cfg.RemoteWrite[len(cfg.RemoteWrite)-1].HTTPClientConfig.BasicAuth.PasswordFile)
				dep, err := cs.AppsV1().Deployments(ns).Get(ctx, fullname, metav1.GetOptions{})
				require.NoError(t, err)
				pod := &dep.Spec.Template.Spec
				require.Equal(t, "remote-write-credentials", secretVolumeOf(t, pod, pod.Containers[0], "/etc/kube-state-push-secrets/password"))
				require.Equal(t, "agent-web", secretVolumeOf(t, pod, pod.Containers[0], "/etc/kube-state-push-web/web-config.yml"))
				// No credential in anything the API server holds but the
				// configuration Secret's data.
				var all []map[string]any
				for _, obj := range objs {
					ri, err := a.resource(obj)
					require.NoError(t, err)
					got, err := ri.Get(ctx, nested(obj, "metadata", "name").(string), metav1.GetOptions{})
					require.NoError(t, err)
					all = append(all, got.Object)
				}
				require.Empty(t, secretLeaks(t, all, secretValues))
			}
			if name == "crs" {
				require.Equal(t, 1, kinds["ClusterRole"])
				require.Equal(t, 1, kinds["NetworkPolicy"])
			}
			// The API server's RBAC authorizer answers for the
			// ServiceAccounts what the kubelets' and the agent's requests
			// would get.
			agent := "system:serviceaccount:" + ns + ":" + fullname
			if name == "crs-only" {
				require.Empty(t, cfg.Watch.Resources)
				require.True(t, allowed(t, cs, agent, "list", "apiextensions.k8s.io", "customresourcedefinitions", ""))
				require.True(t, allowed(t, cs, agent, "watch", "example.com", "widgets", ""))
				for _, res := range []string{"pods", "nodes", "secrets", "configmaps"} {
					require.False(t, allowed(t, cs, agent, "list", "", res, ""), "custom resources only: no grant on %s", res)
				}
			}
			if name == "kubelet-identity" {
				require.Equal(t, 2, kinds["ServiceAccount"], "the agent's and the kubelets'")
				require.Equal(t, 2, kinds["Secret"], "the configuration and the second ServiceAccount's token")
				require.Equal(t, "/var/run/secrets/kubelet-reader/token", cfg.Kubelet.BearerTokenFile)
				require.Equal(t, []string{"InternalIP", "Hostname"}, cfg.Kubelet.AddressTypes)
				require.Equal(t, map[string][]string{"pods": {"app.kubernetes.io/name", "team"}}, cfg.Watch.SeriesLabelsFromObject)
				token, err := cs.CoreV1().Secrets(ns).Get(ctx, fullname+"-kubelet-token", metav1.GetOptions{})
				require.NoError(t, err)
				require.Equal(t, corev1.SecretTypeServiceAccountToken, token.Type)
				reader := "system:serviceaccount:" + ns + ":" + fullname + "-kubelet"
				require.True(t, allowed(t, cs, reader, "get", "", "nodes", "metrics"))
				for _, attr := range [][3]string{{"list", "secrets", ""}, {"get", "secrets", ""}, {"list", "pods", ""}, {"get", "nodes", "proxy"}, {"get", "nodes", "log"}} {
					require.False(t, allowed(t, cs, reader, attr[0], "", attr[1], attr[2]), "the kubelets' token: no %v", attr)
				}
				require.False(t, allowed(t, cs, agent, "get", "", "nodes", "metrics"), "the agent's own token needs no kubelet grant")
				require.True(t, allowed(t, cs, agent, "list", "", "nodes", ""))
			}
			if name == "all" {
				require.Equal(t, 1, kinds["NetworkPolicy"])
				require.Equal(t, 1, kinds["PersistentVolumeClaim"])
				require.Equal(t, 1, kinds["Role"])
			}
		})
	}
}

// allowed asks the API server whether a ServiceAccount's user may do verb
// on a resource (and subresource) in any namespace.
func allowed(t *testing.T, cs kubernetes.Interface, user, verb, group, resource, subresource string) bool {
	t.Helper()
	ns, _, _ := strings.Cut(strings.TrimPrefix(user, "system:serviceaccount:"), ":")
	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: group, Resource: resource, Subresource: subresource,
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return sar.Status.Allowed
}

// applier applies objects to a real API server with server-side apply and
// strict field validation, so that a field the API does not know, or a
// value it refuses, fails.
type applier struct {
	t      *testing.T
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

// newApplier maps kinds to resources from the API server's discovery as it
// is now: make another after installing a CustomResourceDefinition.
func newApplier(t *testing.T, cfg *rest.Config) *applier {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	groups, err := restmapper.GetAPIGroupResources(disc)
	require.NoError(t, err)
	return &applier{t: t, dyn: dyn, mapper: restmapper.NewDiscoveryRESTMapper(groups)}
}

// resource is the client of obj's kind, in obj's namespace where it has one.
func (a *applier) resource(obj map[string]any) (dynamic.ResourceInterface, error) {
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource), nil
	}
	if u.GetNamespace() == "" {
		return nil, fmt.Errorf("%s %s names no namespace", gvk.Kind, u.GetName())
	}
	return a.dyn.Resource(m.Resource).Namespace(u.GetNamespace()), nil
}

// apply applies an object with server-side apply, strictly.
func (a *applier) apply(obj map[string]any) error {
	ri, err := a.resource(obj)
	if err != nil {
		return err
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = ri.Patch(a.t.Context(), nested(obj, "metadata", "name").(string), types.ApplyPatchType, data, metav1.PatchOptions{
		FieldManager: "kube-state-push-chart-test", Force: ptr.To(true), FieldValidation: "Strict",
	})
	return err
}
