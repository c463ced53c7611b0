package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// secretWrongTypes is testdata/secret_wrong_types.yaml's secret; the e2e
// tests grep the binary's output for it too.
const secretWrongTypes = "TOPSECRET-4f9c"

// A YAML type error on a secret-bearing key names the key and the line,
// never the value: neither the value yaml.v3 would quote nor a map key
// typed below a secret (perhaps the secret itself).
func TestTypeErrorsHideSecrets(t *testing.T) {
	_, err := LoadFile("testdata/secret_wrong_types.yaml")
	require.Error(t, err)
	const f = "testdata/secret_wrong_types.yaml:"
	want := []string{
		f + "8: remote_write[0].basic_auth.password: cannot unmarshal !!seq into config.plain",
		f + "11: remote_write[1].basic_auth.password: cannot unmarshal !!map into config.plain",
		f + "13: remote_write[2].basic_auth: cannot unmarshal !!str `<secret>` into config.plain",
		f + "16: remote_write[3].authorization.credentials: cannot unmarshal !!map into config.plain",
		f + "18: remote_write[4].authorization: cannot unmarshal !!str `<secret>` into config.Authorization",
		f + "23: remote_write[5].oauth2.client_secret: cannot unmarshal !!seq into config.plain",
		f + "28: remote_write[6].oauth2.endpoint_params: cannot unmarshal !!str `<secret>` into map[string]string",
		f + "33: remote_write[7].oauth2.client_certificate_key: cannot unmarshal !!seq into config.plain",
		f + "35: remote_write[8].bearer_token: cannot unmarshal !!seq into config.plain",
		f + "38: remote_write[9].http_headers.Authorization: cannot unmarshal !!str `<secret>` into config.Header",
		f + "42: remote_write[10].http_headers.X-Api-Key.secrets: cannot unmarshal !!str `<secret>` into []config.Secret",
		f + "45: remote_write[11].headers.X-Api-Key: cannot unmarshal !!seq into string",
		f + "47: remote_write[12].headers: cannot unmarshal !!str `<secret>` into map[string]string",
		f + "51: remote_write[13].headers.X-Api-Key: cannot unmarshal !!map into string",
		f + "54: remote_write[14].tls_config.key: cannot unmarshal !!seq into config.plain",
		f + "58: remote_write[15].proxy_connect_header.Proxy-Authorization: cannot unmarshal !!str `<secret>` into []config.Secret",
		f + "61: remote_write[16].oauth2: cannot unmarshal !!str `<secret>` into config.plain",
		f + "65: remote_write[17].sigv4.secret_key: cannot unmarshal !!seq into config.plain",
		f + "67: remote_write[18].sigv4: cannot unmarshal !!str `<secret>` into queue.SigV4Config",
		f + "73: remote_write[19].azuread.oauth.client_secret: cannot unmarshal !!map into config.plain",
		f + "76: remote_write[20].azuread.oauth: cannot unmarshal !!str `<secret>` into azuread.OAuthConfig",
		f + "80: remote_write[21].azuread.certificate.certificate_password: cannot unmarshal !!seq into config.plain",
		f + "82: remote_write[22].google_iam: cannot unmarshal !!str `<secret>` into queue.GoogleIAMConfig",
		f + "85: remote_write[23].google_iam.credentials_file: cannot unmarshal !!map into string",
	}
	require.Equal(t, want, strings.Split(err.Error(), "\n"))
	// yaml.v3 quotes a value's first 7 bytes when it is longer than 10.
	require.NotContains(t, err.Error(), secretWrongTypes[:7])
}

// Values of keys that hold no secret are still quoted: they are what a
// person needs to see to fix the file.
func TestTypeErrorsQuoteOtherValues(t *testing.T) {
	_, err := Load([]byte("snapshot_interval: abc\nremote_write:\n  - url: http://a/\n    queue_config: {max_shards: many}\n"), "c.yaml")
	require.EqualError(t, err, "c.yaml:1: snapshot_interval: cannot unmarshal !!str `abc` into time.Duration\n"+
		"c.yaml:4: remote_write[0].queue_config.max_shards: cannot unmarshal !!str `many` into int")
}

// An unknown key in a block of secrets is reported by its block and line:
// the key itself may be a secret typed in the wrong place.
func TestUnknownKeysAmongSecretsAreNotNamed(t *testing.T) {
	for _, block := range []string{
		"basic_auth: {username: u, " + secretWrongTypes + ": x}",
		"authorization: {" + secretWrongTypes + ": x}",
		"oauth2: {client_id: c, token_url: http://127.0.0.1/t, " + secretWrongTypes + ": x}",
		"sigv4: {region: eu-west-1, " + secretWrongTypes + ": x}",
	} {
		_, err := Load([]byte("remote_write:\n  - url: http://127.0.0.1:9/w\n    "+block+"\n"), "c.yaml")
		require.Error(t, err, block)
		require.NotContains(t, err.Error(), secretWrongTypes, block)
		require.Contains(t, err.Error(), "c.yaml:3: remote_write[0].", block)
		require.Contains(t, err.Error(), "unknown key (its name is not shown", block)
	}
	// Elsewhere the unknown key is named, as a typo is best shown.
	_, err := Load([]byte("remote_write:\n  - url: http://127.0.0.1:9/w\n    queue_config: {max_shardz: 3}\n"), "c.yaml")
	require.ErrorContains(t, err, "c.yaml:3: remote_write[0].queue_config.max_shardz: unknown key")
}

// URLs carry credentials in their userinfo and query: a URL that does not
// parse is refused naming its key and the reason, never quoted, and
// check-config masks what a valid one holds.
func TestURLErrorsHideCredentials(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"remote_write:\n  - url: http://agent:" + secretWrongTypes + "@mimir.example:" + secretWrongTypes + "/push\n",
			"c.yaml:2: remote_write[0].url: is not a valid URL (invalid port after host)"},
		{"remote_write:\n  - url: http://mimir.example/push?api_key=%" + secretWrongTypes + "\n",
			""},
		{"remote_write:\n  - url: http://" + secretWrongTypes + " .example/push\n",
			"c.yaml:2: remote_write[0].url: is not a valid URL (invalid character in host name)"},
		{"remote_write:\n  - url: http://127.0.0.1:9/w\n    proxy_url: http://proxy:" + secretWrongTypes + "@proxy.example:" + secretWrongTypes + "/\n",
			"c.yaml:3: remote_write[0].proxy_url: is not a valid URL (invalid port after host)"},
		{"remote_write:\n  - url: http://127.0.0.1:9/w\n    oauth2:\n      client_id: c\n      client_secret: s\n      token_url: http://127.0.0.1/t\n      proxy_url: \"%" + secretWrongTypes + "\"\n",
			"c.yaml:7: remote_write[0].oauth2.proxy_url: is not a valid URL (invalid URL escape)"},
		{"remote_write:\n  - url: http://127.0.0.1:9/w\n    oauth2:\n      client_id: c\n      client_secret: s\n      token_url: http://t:" + secretWrongTypes + "@127.0.0.1:" + secretWrongTypes + "/t\n",
			"c.yaml:6: remote_write[0].oauth2.token_url: is not a valid URL (invalid port after host)"},
	} {
		_, err := Load([]byte(tc.yaml), "c.yaml")
		if tc.want == "" {
			// A bad escape in the query parses (it is only checked when
			// the query is read): the URL loads and is masked below.
			require.NoError(t, err, tc.yaml)
			continue
		}
		require.EqualError(t, err, tc.want, tc.yaml)
		require.NotContains(t, err.Error(), secretWrongTypes[:7])
	}
}

// check-config masks every credential a URL, a header or an OAuth 2.0
// parameter holds, and shows what names them.
func TestEffectiveMasksURLsHeadersAndParams(t *testing.T) {
	const (
		pw     = "url-password-41d7"
		query  = "query-token-93be"
		header = "header-secret-6a0f"
		param  = "endpoint-param-c25e"
		tenant = "tenant-visible-7b11"
	)
	cfg, err := Load([]byte(`
remote_write:
  - url: https://agent:`+pw+`@mimir.example/api/v1/push?api_key=`+query+`&extra_label=env%3D`+query+`
    headers:
      X-Scope-OrgID: `+tenant+`
      X-Api-Key: `+header+`
    proxy_url: http://proxy:`+pw+`@proxy.example:3128/?token=`+query+`
    oauth2:
      client_id: id
      client_secret: s
      token_url: https://auth:`+pw+`@auth.example/token?key=`+query+`
      endpoint_params: {audience: `+param+`, resource: `+param+`}
  - url: https://vm.example/api/v1/write
    non_secret_headers: []
    headers:
      X-Scope-OrgID: `+header+`
`), "c.yaml")
	require.NoError(t, err)
	out, err := cfg.Effective()
	require.NoError(t, err)
	s := string(out)
	for _, secret := range []string{pw, query, header, param} {
		require.NotContains(t, s, secret)
	}
	for _, shown := range []string{
		"url: https://agent:xxxxx@mimir.example/api/v1/push?api_key=xxxxx&extra_label=xxxxx",
		"X-Scope-OrgID: " + tenant,
		"X-Api-Key: <secret>",
		"proxy_url: http://proxy:xxxxx@proxy.example:3128/?token=xxxxx",
		"token_url: https://auth:xxxxx@auth.example/token?key=xxxxx",
		"audience: <secret>",
		"resource: <secret>",
		"non_secret_headers: []",
		"X-Scope-OrgID: <secret>",
		"- X-Scope-OrgID\n",
	} {
		require.Contains(t, s, shown)
	}
	require.Equal(t, "https://agent:"+pw+"@mimir.example/api/v1/push?api_key="+query+"&extra_label=env%3D"+query, cfg.RemoteWrite[0].URL, "masking leaves the loaded configuration alone")
	require.Equal(t, header, cfg.RemoteWrite[0].Headers["X-Api-Key"])
	require.Equal(t, param, cfg.RemoteWrite[0].HTTPClientConfig.OAuth2.EndpointParams["audience"])
}
