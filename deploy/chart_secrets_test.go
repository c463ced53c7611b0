package deploy_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-state-push/kube-state-push/internal/ociimage"
)

// chartCredentials are values of the chart holding a credential of every
// kind the configuration takes inline, each a distinct string (secretValues)
// that must never leave the configuration Secret.
const chartCredentials = `
externalLabels: {cluster: c}
remoteWrite:
  - url: https://user:urlpassword7c1f@basic.example.com/api/v1/write?api_key=querytoken2b8e
    name: basic
    basic_auth: {username: u, password: basicpassword4d2a}
    proxy_url: http://proxy:proxypassword9a3e@proxy.example.com:3128
    proxy_connect_header:
      Proxy-Authorization: [proxyheader5f7b]
  - url: https://bearer.example.com/api/v1/write
    name: bearer
    bearer_token: bearertoken1e9d
  - url: https://authorization.example.com/api/v1/write
    name: authorization
    authorization: {type: Bearer, credentials: credentials6b4c}
    headers: {X-Api-Key: headervalue3c8f}
    http_headers:
      X-Other-Key: {secrets: [httpheader8e2a]}
  - url: https://oauth2.example.com/api/v1/write
    name: oauth2
    oauth2:
      client_id: kube-state-push
      client_secret: clientsecret2a7d
      token_url: https://auth.example.com/token
      endpoint_params: {audience: endpointparam4e1b}
  - url: https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write
    name: sigv4
    sigv4: {region: eu-west-1, access_key: accesskey7f3a, secret_key: sigv4secret1c6e}
  - url: https://azure.example.com/api/v1/write
    name: azuread
    azuread:
      cloud: AzurePublic
      oauth: {client_id: 00000000-0000-0000-0000-000000000001, client_secret: azuresecret5d9b, tenant_id: 00000000-0000-0000-0000-000000000002}
`

// secretValues are chartCredentials' credentials.
var secretValues = []string{
	"urlpassword7c1f", "querytoken2b8e", "basicpassword4d2a", "proxypassword9a3e", "proxyheader5f7b",
	"bearertoken1e9d", "credentials6b4c", "headervalue3c8f", "httpheader8e2a", "clientsecret2a7d",
	"endpointparam4e1b", "accesskey7f3a", "sigv4secret1c6e", "azuresecret5d9b",
}

// writeValues writes a values file into a test directory. helm -f splits
// at commas: the test's name must have none.
func writeValues(t *testing.T, values string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(p, []byte(values), 0o600))
	return p
}

// secretLeaks returns where any of the secrets appears in the rendered
// objects outside the data of a Secret: in a ConfigMap, an annotation, a
// label, an env value, anywhere. A secret is looked for as it is and
// base64-encoded, as a Secret's data or a careless template would hold it.
func secretLeaks(t *testing.T, objs []map[string]any, secrets []string) []string {
	t.Helper()
	var leaks []string
	for _, obj := range objs {
		shown := obj
		if obj["kind"] == "Secret" {
			// A Secret's data is where secrets belong; its metadata is not.
			shown = map[string]any{"metadata": obj["metadata"]}
		}
		data, err := json.Marshal(shown)
		require.NoError(t, err)
		for _, s := range secrets {
			for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s))} {
				if strings.Contains(string(data), form) {
					leaks = append(leaks, fmt.Sprintf("%s %v shows %s", obj["kind"], nested(obj, "metadata", "name"), s))
				}
			}
		}
	}
	return leaks
}

// No credential given in the values reaches anything but the configuration
// Secret's data, for every values file the chart ships and for values
// holding every kind of credential the configuration takes: not a
// ConfigMap (the chart renders none), not an annotation (the configuration's
// checksum is no plain hash of it), not a label.
func TestChartKeepsSecretsInSecrets(t *testing.T) {
	rw := "remoteWrite[0].url=http://prometheus:9090/api/v1/write"
	files := map[string][]string{
		"values.yaml": {"-f", filepath.Join(chartDir, "values.yaml"), "--set", rw},
	}
	shipped, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join(chartDir, "*values*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, shipped)
	for _, f := range append(shipped, more...) {
		if filepath.Base(f) != "values.yaml" {
			files[f] = []string{"-f", f}
		}
	}
	creds := writeValues(t, chartCredentials)
	files["credentials"] = []string{"-f", creds}
	files["credentials, every feature"] = []string{"-f", creds, "-f", writeValues(t, `
leaderElection: {enabled: true}
pull: {enabled: true}
kubelet: {enabled: true}
networkPolicy: {enabled: true, ingressFrom: [{podSelector: {matchLabels: {app: prometheus}}}]}
podAnnotations: {example.com/a: b}
podLabels: {team: observability}
service: {annotations: {example.com/s: t}}
persistence: {enabled: true, annotations: {example.com/p: q}}
`)}
	files["credentials, sharded"] = []string{"-f", filepath.Join(chartShapes, "sharded-values.yaml"), "-f", creds}

	for name, args := range files {
		t.Run(name, func(t *testing.T) {
			out, err := runHelm(t, append([]string{"template", "kube-state-push", chartDir, "--namespace", "kube-state-push"}, args...)...)
			require.NoError(t, err)
			objs := splitManifests(t, out)
			require.Empty(t, secretLeaks(t, objs, secretValues))
			for _, obj := range objs {
				require.NotEqual(t, "ConfigMap", obj["kind"])
			}
			r := renderChart(t, args...)
			if strings.HasPrefix(name, "credentials") {
				// The credentials are rendered, into the Secret: the check
				// above looked at output that holds them.
				for _, s := range secretValues {
					require.Contains(t, string(r.config), s)
				}
				require.NotEmpty(t, secretLeaks(t, []map[string]any{{"kind": "ConfigMap", "data": map[string]any{configFile: string(r.config)}}}, secretValues),
					"the check finds the credentials in a ConfigMap")
				cfg := loadRendered(t, name, r)
				require.Len(t, cfg.RemoteWrite, 6, "every entry is one the agent loads")
			}
			// The checksum annotation is no plain hash of the configuration,
			// which would let anyone who may read pods test password guesses
			// at the speed of sha256.
			tmpl := podTemplateAnnotations(t, r)
			sum, ok := tmpl["checksum/config"]
			require.True(t, ok, "a checksum of the configuration rolls the pods")
			require.Regexp(t, "^[0-9a-f]{64}$", sum)
			require.NotEqual(t, sha256Hex(r.config), sum)
			require.NotEqual(t, sha256Hex(append(r.config, '\n')), sum)
		})
	}
}

// The checksum annotation changes with the configuration, a credential
// included, so that a new password rolls the pods, and is the same for the
// same configuration, so that an unchanged upgrade rolls nothing.
func TestChartChecksumRolls(t *testing.T) {
	render := func(password string) string {
		r := renderChart(t, "-f", writeValues(t, fmt.Sprintf(`
remoteWrite:
  - url: https://mimir.example.com/api/v1/push
    basic_auth: {username: u, password: %s}
`, password)))
		return podTemplateAnnotations(t, r)["checksum/config"]
	}
	a, again, b := render("first4c2e"), render("first4c2e"), render("second8d1f")
	require.NotEmpty(t, a)
	require.Equal(t, a, again)
	require.NotEqual(t, a, b)
}

// sha256Hex is what Helm's sha256sum gives.
func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// podTemplateAnnotations returns the annotations of the workload's pods.
func podTemplateAnnotations(t *testing.T, r rendered) map[string]string {
	t.Helper()
	w := r.workload(t)
	if w.deployment != nil {
		return w.deployment.Spec.Template.Annotations
	}
	return w.statefulSet.Spec.Template.Annotations
}

// Credentials reach the agent from a Secret of the user's through the chart
// alone: extraVolumes mounts it, extraVolumeMounts places it, and the
// remoteWrite entry's *_file keys name its files, which the configuration
// the chart renders loads with, at paths inside that mount of that Secret.
// extraEnv and extraEnvFrom reach the container too.
func TestChartCredentialsFromSecret(t *testing.T) {
	r := renderChart(t, "-f", writeValues(t, `
remoteWrite:
  - url: https://mimir.example.com/api/v1/push
    name: mimir
    basic_auth: {username: kube-state-push, password_file: /etc/kube-state-push-secrets/password}
  - url: https://other.example.com/api/v1/write
    name: other
    authorization: {credentials_file: /etc/kube-state-push-secrets/token}
    http_headers:
      X-Api-Key: {files: [/etc/kube-state-push-secrets/api-key]}
extraVolumes:
  - name: remote-write-credentials
    secret: {secretName: remote-write-credentials}
extraVolumeMounts:
  - {name: remote-write-credentials, mountPath: /etc/kube-state-push-secrets, readOnly: true}
extraEnv:
  - name: CLUSTER
    valueFrom: {secretKeyRef: {name: cluster-name, key: name}}
extraEnvFrom:
  - secretRef: {name: aws-credentials}
externalLabels: {cluster: "${CLUSTER}"}
`))
	t.Setenv("CLUSTER", "from-a-secret")
	cfg := loadRendered(t, "credentials", r)
	require.Equal(t, "from-a-secret", cfg.ExternalLabels["cluster"], "extraEnv feeds ${VAR}")
	require.Len(t, cfg.RemoteWrite, 2)
	files := []string{
		cfg.RemoteWrite[0].HTTPClientConfig.BasicAuth.PasswordFile,
		cfg.RemoteWrite[1].HTTPClientConfig.Authorization.CredentialsFile,
	}
	files = append(files, cfg.RemoteWrite[1].HTTPClientConfig.HTTPHeaders.Headers["X-Api-Key"].Files...)
	require.Equal(t, []string{"/etc/kube-state-push-secrets/password", "/etc/kube-state-push-secrets/token", "/etc/kube-state-push-secrets/api-key"}, files)

	pod := r.workload(t).pod()
	c := pod.Containers[0]
	for _, f := range files {
		require.Equal(t, "remote-write-credentials", secretVolumeOf(t, pod, c, f), "%s is a file of the user's Secret", f)
	}
	require.Contains(t, c.Env, corev1.EnvVar{Name: "CLUSTER", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cluster-name"}, Key: "name",
	}}})
	require.Equal(t, []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "aws-credentials"}}}}, c.EnvFrom)
	require.Equal(t, "kube-state-push-config", secretVolumeOf(t, pod, c, "/etc/kube-state-push/config.yaml"), "the configuration is a Secret too")
}

// secretVolumeOf returns the name of the Secret whose volume holds path in
// the container, failing if no Secret volume's mount holds it.
func secretVolumeOf(t *testing.T, pod *corev1.PodSpec, c corev1.Container, path string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, path)
		if err != nil || strings.HasPrefix(rel, "..") || m.SubPath != "" {
			continue
		}
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		require.GreaterOrEqual(t, i, 0, "mount %s has a volume", m.Name)
		s := pod.Volumes[i].Secret
		require.NotNil(t, s, "%s is on volume %s, not a Secret", path, m.Name)
		require.True(t, m.ReadOnly, "mount %s is read-only", m.Name)
		if len(s.Items) > 0 {
			require.True(t, slices.ContainsFunc(s.Items, func(k corev1.KeyToPath) bool { return k.Path == rel }), "%s is one of volume %s's items", rel, m.Name)
		}
		return s.SecretName
	}
	t.Fatalf("%s is on no volume mount of the container", path)
	return ""
}

// With existingConfigSecret the chart renders no configuration and mounts
// that Secret, which holds the whole configuration; nothing of it is known
// to the chart, so there is no checksum, and a buffer size must be given.
func TestChartExistingConfigSecret(t *testing.T) {
	out, err := runHelm(t, "template", "kube-state-push", chartDir, "--namespace", "kube-state-push",
		"--set", "existingConfigSecret=my-config", "--set", "persistence.size=2Gi")
	require.NoError(t, err)
	r := rendered{objects: splitManifests(t, out)}
	for _, obj := range r.objects {
		require.NotContains(t, []string{"Secret", "ConfigMap"}, obj["kind"], "no configuration rendered")
	}
	pod := r.workload(t).pod()
	require.Equal(t, "my-config", secretVolumeOf(t, pod, pod.Containers[0], "/etc/kube-state-push/config.yaml"))
	require.NotContains(t, podTemplateAnnotations(t, r), "checksum/config")

	_, err = runHelm(t, "template", "x", chartDir, "--set", "existingConfigSecret=my-config")
	require.ErrorContains(t, err, "persistence.size: required with existingConfigSecret")
}

// The image is the chart's appVersion unless image.tag says otherwise;
// never latest. make image names its image as the chart renders it.
func TestChartImageTag(t *testing.T) {
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	readManifest(t, filepath.Join(chartDir, "Chart.yaml"), &chart, false)
	require.NotEmpty(t, chart.AppVersion)
	rw := "remoteWrite[0].url=http://prometheus:9090/api/v1/write"
	image := func(args ...string) string {
		return renderChart(t, append([]string{"--set", rw}, args...)...).workload(t).pod().Containers[0].Image
	}
	require.Equal(t, "kube-state-push:"+chart.AppVersion, image())
	made, err := ociimage.ChartImage(chartDir)
	require.NoError(t, err)
	require.Equal(t, image(), made, "make image's default name")
	require.Equal(t, "docker.io/library/kube-state-push:"+chart.AppVersion, ociimage.Normalize(made), "as the kubelet asks containerd for it")
	require.Equal(t, "registry.example.com/kube-state-push:v9", image("--set", "image.tag=v9", "--set", "image.registry=registry.example.com"))
}
