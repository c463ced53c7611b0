package e2e

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kube-state-push/kube-state-push/kubelet"
)

// kubeletRole is deploy/base's ClusterRole with deploy/kubelet's patch for
// mode applied (its one "add" of a rule).
func kubeletRole(t *testing.T, mode string) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile("../deploy/kubelet/clusterrole-" + mode + ".yaml")
	require.NoError(t, err)
	var ops []struct {
		Op    string            `json:"op"`
		Path  string            `json:"path"`
		Value rbacv1.PolicyRule `json:"value"`
	}
	require.NoError(t, yaml.UnmarshalStrict(data, &ops))
	role := loadClusterRole(t)
	for _, op := range ops {
		require.Equal(t, "add", op.Op)
		require.Equal(t, "/rules/-", op.Path)
		role.Rules = append(role.Rules, op.Value)
	}
	return role
}

// TestKubeletRBACGrants asks the real API server's RBAC authorizer what a
// service account bound to each mode's ClusterRole may do, and reads a
// node through the node proxy with such an account's token: the patches
// grant what their mode needs and nothing of the other's.
func TestKubeletRBACGrants(t *testing.T) {
	needEnv(t)
	c, err := env.cp.Client()
	require.NoError(t, err)
	createNamespace(t, c, rbacNamespace)
	ctx := t.Context()
	kubeconfigs := map[string]string{}
	for _, mode := range []string{"base", kubelet.ModeDirect, kubelet.ModeAPIServer} {
		role := loadClusterRole(t)
		if mode != "base" {
			role = kubeletRole(t, mode)
		}
		kubeconfigs[mode] = serviceAccountKubeconfig(t, c, "ksp-kubelet-"+mode, "kubelet-"+mode, role)
	}
	allowed := func(mode, verb, sub string) bool {
		t.Helper()
		sa := "ksp-kubelet-" + mode
		r, err := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + rbacNamespace + ":" + sa,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + rbacNamespace, "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Resource: "nodes", Subresource: sub, Name: "worker-1"},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return r.Status.Allowed
	}
	// What the kubelet asks for /metrics, /metrics/cadvisor and
	// /metrics/resource (get nodes/metrics), and what the node proxy
	// asks for a GET (get nodes/proxy). get on nodes/proxy is not
	// read-only: the kubelet serves exec as WebSocket over GET, so the
	// apiserver mode's grant reaches exec in any container.
	for _, tc := range []struct {
		mode, verb, sub string
		want            bool
	}{
		{"base", "get", "metrics", false},
		{"base", "get", "proxy", false},
		{kubelet.ModeDirect, "get", "metrics", true},
		{kubelet.ModeDirect, "get", "proxy", false},
		{kubelet.ModeDirect, "get", "stats", false},
		{kubelet.ModeDirect, "create", "metrics", false},
		{kubelet.ModeAPIServer, "get", "proxy", true},
		{kubelet.ModeAPIServer, "create", "proxy", false},
		{kubelet.ModeAPIServer, "get", "metrics", false},
	} {
		require.Equal(t, tc.want, allowed(tc.mode, tc.verb, tc.sub), "%s: %s nodes/%s", tc.mode, tc.verb, tc.sub)
	}

	// Through the node proxy with the accounts' own tokens: without the
	// patch the API server refuses (403, counted as forbidden); with it
	// the request is authorized and reaches the proxy, which then refuses
	// the node's loopback address (not a 403).
	node := "kubelet-rbac-node"
	fakeNode(t, c, node, "https://127.0.0.1:10250")
	t.Cleanup(func() { cleanupNodes(t, c, []string{node}) })
	read := func(mode string) error {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigs[mode])
		require.NoError(t, err)
		rd, err := kubelet.NewProxyReader(cfg, kubelet.DefaultConfig.BodySizeLimit)
		require.NoError(t, err)
		_, err = rd.Read(ctx, kubelet.Node{Name: node}, kubelet.PathCadvisor)
		return err
	}
	err = read("base")
	var se *kubelet.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 403, se.Code)
	err = read(kubelet.ModeAPIServer)
	require.Error(t, err, "a loopback kubelet is not proxied")
	if errors.As(err, &se) {
		require.NotEqual(t, 403, se.Code, "%v", err)
	}
	t.Logf("with nodes/proxy, the proxy's answer for a loopback node: %v", err)
}
