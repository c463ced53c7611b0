package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The effective configuration shows the defaults and never a secret.
func TestEffectiveMasksSecrets(t *testing.T) {
	cfg, err := Load([]byte(`
resources: [pods]
remote_write:
  - url: https://a.example/api/v1/write
    basic_auth:
      username: agent
      password: hunter2-password
  - url: https://b.example/api/v1/write
    authorization:
      type: Bearer
      credentials: s3cr3t-credentials
  - url: https://c.example/api/v1/write
    oauth2:
      client_id: id
      client_secret: oauth-client-secret
      token_url: https://auth.example/token
  - url: https://d.example/api/v1/write
    headers:
      X-Scope-OrgID: tenant-shown
    http_headers:
      X-Api-Key:
        secrets: [api-key-secret]
    write_relabel_configs:
      - action: labeldrop
        regex: uid
`), "test.yaml")
	require.NoError(t, err)
	out, err := cfg.Effective()
	require.NoError(t, err)
	s := string(out)
	for _, secret := range []string{"hunter2-password", "s3cr3t-credentials", "oauth-client-secret", "api-key-secret"} {
		require.NotContains(t, s, secret)
	}
	require.Contains(t, s, "username: agent")
	require.Contains(t, s, "password: <secret>")
	require.Contains(t, s, "credentials: <secret>")
	require.Contains(t, s, "client_secret: <secret>")
	require.Contains(t, s, "- <secret>", "http_headers secrets")
	require.Contains(t, s, "X-Scope-OrgID: tenant-shown", "headers are not secrets: tenants are shown")
	require.Contains(t, s, "regex: uid", "relabel rules are shown")
	require.Contains(t, s, "# resources: 1 of ")
	// Defaults are filled in.
	require.Contains(t, s, "snapshot_interval: 30s")
	require.Contains(t, s, "max_shards: 50")

	// The output is itself a valid configuration (secrets aside).
	_, err = Load(out, "effective.yaml")
	require.NoError(t, err)
}

// check-config says which built-in resources are on.
func TestEffectiveResourcesComment(t *testing.T) {
	const rw = "remote_write: [{url: http://a:9090/}]\n"
	for text, want := range map[string]string{
		rw: "# resources: the 32 defaults\nresources:\n",
		"resources: []\ncustom_resource_state: {spec: {resources: []}}\n" + rw: "# resources: none (custom resources only)\nresources: []\n",
		"resources: [pods, nodes]\n" + rw:                                      "# resources: 2 of 39\nresources:\n  - pods\n  - nodes\n",
	} {
		cfg, err := Load([]byte(text), "r.yaml")
		require.NoError(t, err, text)
		out, err := cfg.Effective()
		require.NoError(t, err)
		require.Contains(t, string(out), want)
	}
}
