package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kube-state-push/kube-state-push/agent"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// rbacNamespace holds the test's service accounts.
const rbacNamespace = "rbac"

// The ClusterRole of deploy/base is enough for the agent to watch all 39
// resources, as a service account with nothing else; without the secrets
// rule, the agent never becomes ready and says why.
func TestRBAC(t *testing.T) {
	needEnv(t)
	c, err := env.cp.Client()
	require.NoError(t, err)
	ctx := t.Context()
	_, err = c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rbacNamespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	role := loadClusterRole(t)

	// klog is process-wide: route client-go's logs into this test's buffer
	// while it runs.
	logs := &syncBuffer{}
	klog.SetSlogLogger(slog.New(slog.NewTextHandler(logs, nil)).With("component", "client-go"))
	t.Cleanup(klog.ClearLogger)

	t.Run("base ClusterRole", func(t *testing.T) {
		kubeconfig := serviceAccountKubeconfig(t, c, "kube-state-push", "full", role)
		capture := testenv.NewCapture()
		defer capture.Close()
		a := startAgent(t, agentOptions{config: rbacConfig(kubeconfig, capture.URL()), options: agent.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}})
		eventually(t, 60*time.Second, "agent ready", func() error {
			if !a.agent.Ready() {
				return fmt.Errorf("not ready; logs:\n%s", logs.String())
			}
			return nil
		})
		eventually(t, 30*time.Second, "kube_namespace_created series", func() error {
			ts := capture.Timestamps()
			if len(ts) == 0 {
				return fmt.Errorf("nothing received")
			}
			for k := range capture.Series(ts[len(ts)-1]) {
				if strings.HasPrefix(k, "kube_namespace_created{") && strings.Contains(k, `namespace="`+rbacNamespace+`"`) {
					return nil
				}
			}
			return fmt.Errorf("no kube_namespace_created for %s", rbacNamespace)
		})
		require.NoError(t, a.stop())
		require.NotContains(t, logs.String(), "forbidden")
	})

	t.Run("without secrets", func(t *testing.T) {
		partial := role.DeepCopy()
		for i := range partial.Rules {
			partial.Rules[i].Resources = slices.DeleteFunc(partial.Rules[i].Resources, func(r string) bool { return r == "secrets" })
		}
		kubeconfig := serviceAccountKubeconfig(t, c, "kube-state-push-nosecrets", "nosecrets", partial)
		capture := testenv.NewCapture()
		defer capture.Close()
		a := startAgent(t, agentOptions{config: rbacConfig(kubeconfig, capture.URL()), options: agent.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}})
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			require.False(t, a.agent.Ready(), "ready although secrets cannot be listed")
			time.Sleep(250 * time.Millisecond)
		}
		out := logs.String()
		require.Contains(t, out, "forbidden", "client-go logs the forbidden list")
		require.Contains(t, out, `cannot list resource \"secrets\"`)
		require.NoError(t, a.stop())
	})
}

// loadClusterRole reads the ClusterRole of deploy/base.
func loadClusterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile("../deploy/base/clusterrole.yaml")
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.UnmarshalStrict(data, &role))
	return &role
}

// serviceAccountKubeconfig creates a service account in rbacNamespace, binds
// a copy of role (named with suffix) to it, mints it a token and returns a
// kubeconfig that uses that token. The cluster-scoped objects are deleted
// when the test ends.
func serviceAccountKubeconfig(t *testing.T, c kubernetes.Interface, sa, suffix string, role *rbacv1.ClusterRole) string {
	t.Helper()
	ctx := t.Context()
	_, err := c.CoreV1().ServiceAccounts(rbacNamespace).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	require.NoError(t, err)

	name := role.Name + "-e2e-" + suffix
	cr := role.DeepCopy()
	cr.ObjectMeta = metav1.ObjectMeta{Name: name}
	_, err = c.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, c.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}))
	})
	_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: rbacNamespace}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, c.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}))
	})

	tr, err := c.CoreV1().ServiceAccounts(rbacNamespace).CreateToken(ctx, sa, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, tr.Status.Token)

	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: %s
  user:
    token: %s
contexts:
- name: local
  context: {cluster: local, user: %s}
current-context: local
`, env.cp.URL, sa, tr.Status.Token, sa)), 0o600))
	return path
}

// rbacConfig watches every resource with the given kubeconfig, pushing to
// url.
func rbacConfig(kubeconfig, url string) *agentConfig {
	cfg := newConfig(url)
	cfg.Kubeconfig = kubeconfig
	cfg.Resources = watch.Names()
	cfg.ListenAddress = ptr.To("127.0.0.1:0")
	cfg.ShutdownTimeout = 10 * time.Second
	cfg.endpoint().QueueConfig.MaxBackoff = 200 * time.Millisecond
	return cfg
}
