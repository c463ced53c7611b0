package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// kustomization is what the tests read of a kustomization.yaml.
type kustomization struct {
	Resources          []string `json:"resources"`
	ConfigMapGenerator []struct {
		Behavior string   `json:"behavior"`
		Files    []string `json:"files"`
	} `json:"configMapGenerator"`
	Patches []struct {
		Path string `json:"path"`
	} `json:"patches"`
}

// kustomizationFiles reads dir/kustomization.yaml, requires every file it
// names (resources, generator files, patches) to exist, and returns them
// with the parsed kustomization.
func kustomizationFiles(t *testing.T, dir string) ([]string, kustomization) {
	t.Helper()
	var k kustomization
	readManifest(t, filepath.Join(dir, "kustomization.yaml"), &k, false)
	files := append([]string(nil), k.Resources...)
	for _, g := range k.ConfigMapGenerator {
		files = append(files, g.Files...)
	}
	for _, p := range k.Patches {
		files = append(files, p.Path)
	}
	require.NotEmpty(t, files)
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, "%s/kustomization.yaml names %s", dir, f)
	}
	return files, k
}

// readManifest parses a YAML file into v, rejecting unknown fields when
// strict.
func readManifest(t *testing.T, path string, v any, strict bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if strict {
		require.NoError(t, yaml.UnmarshalStrict(data, v), path)
		return
	}
	require.NoError(t, yaml.Unmarshal(data, v), path)
}

// readRole reads dir/role.yaml and requires dir/rolebinding.yaml to bind it
// to the agent's ServiceAccount.
func readRole(t *testing.T, dir string) rbacv1.Role {
	t.Helper()
	var role rbacv1.Role
	readManifest(t, filepath.Join(dir, "role.yaml"), &role, true)
	require.Equal(t, "Role", role.Kind)
	require.Equal(t, "kube-state-push", role.Namespace)
	var rb rbacv1.RoleBinding
	readManifest(t, filepath.Join(dir, "rolebinding.yaml"), &rb, true)
	require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name}, rb.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kube-state-push", Namespace: "kube-state-push"}}, rb.Subjects)
	return role
}

// requireContainsAll requires the file to contain every string.
func requireContainsAll(t *testing.T, path string, want ...string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, s := range want {
		require.Contains(t, string(data), s, path)
	}
}

// downwardAPIEnv is what a pod needs to know its name and namespace.
var downwardAPIEnv = []string{"name: POD_NAME", "fieldPath: metadata.name", "name: POD_NAMESPACE", "fieldPath: metadata.namespace"}

// renderOverlay renders an overlay with kubectl kustomize; ok is false when
// kubectl is not installed.
func renderOverlay(t *testing.T, dir string) (out string, ok bool) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Log("kubectl not found: the overlay is not rendered")
		return "", false
	}
	b, err := exec.Command("kubectl", "kustomize", dir).CombinedOutput()
	require.NoError(t, err, "%s", b)
	return string(b), true
}
