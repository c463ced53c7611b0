package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The secrets of the secrets test: each is used by one endpoint, and none
// may show anywhere but in the requests that carry it.
const (
	secretPassword     = "pw-basic-5c1e9f0b7d"
	secretCredentials  = "cred-authorization-8a2d4e6f13"
	secretClientSecret = "oauth-client-secret-3b7f0c9e21"
	secretAccessToken  = "oauth-access-token-6d4a2b8e05"
	secretFileToken    = "file-bearer-token-9e1c7a3f48"
	secretHeader       = "api-key-header-2f8b6d0c97"
	secretURLPassword  = "url-password-7c3e1a9d52"
	secretQueryToken   = "query-token-4e8b2f6a10"
	secretPlainHeader  = "plain-header-9d5c3b7e81"
	secretParam        = "endpoint-param-1a6f8c4d39"
)

var allSecrets = []string{secretPassword, secretCredentials, secretClientSecret, secretAccessToken, secretFileToken, secretHeader,
	secretURLPassword, secretQueryToken, secretPlainHeader, secretParam}

// Secrets never leak: the binary, at debug level, pushes through five
// endpoints that each need a credential the receiver checks (basic_auth's
// password, authorization credentials, an oauth2 client secret and
// endpoint_params traded for a token, a bearer token read from
// credentials_file, a password and a token in the URL with a plain secret
// header) plus a secret header (http_headers with secrets); a sixth
// endpoint, whose URL holds the same credentials, refuses connections, so
// that its errors are logged. The receiver gets every credential, and the
// tenant headers (X-Scope-OrgID, THANOS-TENANT); none appears in the
// agent's output (including a refused reload's error and the drop logs),
// in /-/reload's answers, in /metrics, or in check-config's effective
// configuration.
func TestSecretsNeverLeak(t *testing.T) {
	needEnv(t)
	bin := buildAgent(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(secretFileToken+"\n"), 0o600))

	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.FormValue("client_id"), r.FormValue("client_secret")
		}
		if id != "kube-state-push" || secret != secretClientSecret || r.FormValue("grant_type") != "client_credentials" ||
			r.FormValue("audience") != secretParam {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": secretAccessToken, "token_type": "Bearer", "expires_in": 3600})
	}))
	defer tokens.Close()

	authHeader := func(want string) func(*http.Request) error {
		return func(r *http.Request) error {
			if got := r.Header.Get("Authorization"); got != want {
				return fmt.Errorf("wrong Authorization")
			}
			return nil
		}
	}
	recv := newRecorder(t, map[string]func(*http.Request) error{
		"/basic": func(r *http.Request) error {
			user, pw, ok := r.BasicAuth()
			if !ok || user != "agent" || pw != secretPassword {
				return fmt.Errorf("wrong basic auth")
			}
			if r.Header.Get("X-Api-Key") != secretHeader {
				return fmt.Errorf("wrong X-Api-Key")
			}
			return nil
		},
		"/authorization": authHeader("Custom " + secretCredentials),
		"/oauth2":        authHeader("Bearer " + secretAccessToken),
		"/file":          authHeader("Bearer " + secretFileToken),
		"/query": func(r *http.Request) error {
			user, pw, ok := r.BasicAuth()
			if !ok || user != "agent" || pw != secretURLPassword || r.URL.Query().Get("api_key") != secretQueryToken {
				return fmt.Errorf("wrong URL credentials")
			}
			if r.Header.Get("X-Auth-Token") != secretPlainHeader {
				return fmt.Errorf("wrong X-Auth-Token")
			}
			return nil
		},
	})
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := dead.Addr().String()
	require.NoError(t, dead.Close()) // every connection is refused
	withCredentials := func(base, path string) string {
		return strings.Replace(base, "http://", "http://agent:"+secretURLPassword+"@", 1) + path + "?api_key=" + secretQueryToken
	}

	cfgText := fmt.Sprintf(`kubeconfig: %s
resources: [namespaces]
snapshot_interval: 1s
listen_address: %s
remote_write:
  - url: %[3]s/basic
    name: basic
    headers:
      X-Scope-OrgID: tenant-mimir
      THANOS-TENANT: tenant-thanos
    http_headers:
      X-Api-Key:
        secrets: [%[4]s]
    basic_auth:
      username: agent
      password: %[5]s
    queue_config: {batch_send_deadline: 100ms}
  - url: %[3]s/authorization
    name: authorization
    authorization:
      type: Custom
      credentials: %[6]s
    queue_config: {batch_send_deadline: 100ms}
  - url: %[3]s/oauth2
    name: oauth2
    oauth2:
      client_id: kube-state-push
      client_secret: %[7]s
      token_url: %[8]s/token
      endpoint_params: {audience: %[12]s}
    queue_config: {batch_send_deadline: 100ms}
  - url: %[3]s/file
    name: file
    authorization:
      credentials_file: %[9]s
    queue_config: {batch_send_deadline: 100ms}
  - url: %[10]s
    name: query
    headers:
      X-Scope-OrgID: tenant-mimir
      X-Auth-Token: %[13]s
    queue_config: {batch_send_deadline: 100ms}
  - url: %[11]s
    name: dead
    protobuf_message: io.prometheus.write.v2.Request
    failed_request_logging: true
    queue_config: {batch_send_deadline: 100ms, max_retry_duration: 500ms, min_backoff: 100ms}
`, env.cp.Kubeconfig, listenPlaceholder, recv.URL(""), secretHeader, secretPassword, secretCredentials,
		secretClientSecret, tokens.URL, tokenFile, withCredentials(recv.URL(""), "/query"),
		withCredentials("http://"+deadAddr, "/dead"), secretParam, secretPlainHeader)

	p := startAgent(t, agentOptions{binary: true, configText: cfgText, waitReady: true})
	paths := []string{"/basic", "/authorization", "/oauth2", "/file", "/query"}
	for _, path := range paths {
		eventually(t, 20*time.Second, "snapshots at "+path, recv.needTimestamps(2, path, `__name__="kube_namespace_created"`, `namespace="default"`))
	}
	require.Zero(t, recv.refusedCount(), "no request lacked its credential")
	for _, req := range recv.requests("/basic") {
		require.Equal(t, "tenant-mimir", req.header.Get("X-Scope-OrgID"))
		require.Equal(t, "tenant-thanos", req.header.Get("THANOS-TENANT"))
	}

	eventually(t, 20*time.Second, "the dead endpoint's drops logged", func() error {
		if !strings.Contains(p.logs.String(), `msg="dropping batch" endpoint=dead`) {
			return fmt.Errorf("not yet")
		}
		return nil
	})

	// A reload with a URL that does not parse (its port is the query
	// token, after the password) is refused with 400, naming the key; then
	// the good configuration reloads with 200.
	badURL := "http://agent:" + secretURLPassword + "@127.0.0.1:" + secretQueryToken + "/w"
	p.writeConfig(t, strings.Replace(cfgText, withCredentials("http://"+deadAddr, "/dead"), badURL, 1))
	code, badAnswer := p.reload(t)
	require.Equal(t, http.StatusBadRequest, code, badAnswer)
	require.Contains(t, badAnswer, "remote_write[5].url: is not a valid URL (invalid port after host)")
	p.writeConfig(t, cfgText)
	code, goodAnswer := p.reload(t)
	require.Equal(t, http.StatusOK, code, goodAnswer)
	require.Contains(t, goodAnswer, "configuration reloaded")

	// A reload refused for an unknown key logs its error: no secret in it.
	p.writeConfig(t, cfgText+"unknown_key: "+secretPassword+"\n")
	p.signal(t, syscall.SIGHUP)
	eventually(t, 10*time.Second, "the refused reload logged", func() error {
		if !strings.Contains(p.logs.String(), "unknown_key: unknown key") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	metrics := p.page(t)
	require.Contains(t, metrics, `kube_state_push_remote_samples_sent_total{endpoint="oauth2"}`)
	require.Contains(t, metrics, `kube_state_push_remote_samples_sent_total{endpoint="query"}`)
	require.Contains(t, metrics, `kube_state_push_remote_samples_dropped_total{endpoint="dead",reason="retries_ended"}`)
	require.NoError(t, p.stop())

	p.writeConfig(t, cfgText)
	effective, err := exec.Command(bin, "check-config", p.configPath).CombinedOutput()
	require.NoError(t, err, "%s", effective)
	require.Contains(t, string(effective), "password: <secret>")
	require.Contains(t, string(effective), "credentials: <secret>")
	require.Contains(t, string(effective), "client_secret: <secret>")
	require.Contains(t, string(effective), "credentials_file: "+tokenFile)
	require.Contains(t, string(effective), "url: "+strings.Replace(recv.URL("/query"), "http://", "http://agent:xxxxx@", 1)+"?api_key=xxxxx")
	require.Contains(t, string(effective), "X-Auth-Token: <secret>")
	require.Contains(t, string(effective), "X-Scope-OrgID: tenant-mimir", "tenant headers are shown")
	require.Contains(t, string(effective), "audience: <secret>")

	out := p.logs.String()
	require.Contains(t, out, "level=DEBUG", "debug logging on")
	require.Contains(t, out, `msg="failed to send remote write 2.0 request" endpoint=dead`)
	require.Contains(t, out, "api_key=xxxxx", "the drop logs quote the URL, masked")
	require.Contains(t, out, "remote_write[5].url: is not a valid URL", "the refused reload logged")
	for _, s := range allSecrets {
		require.NotContains(t, out, s, "the agent's output")
		require.NotContains(t, metrics, s, "/metrics")
		require.NotContains(t, string(effective), s, "check-config")
		require.NotContains(t, badAnswer+goodAnswer, s, "/-/reload")
	}
	t.Logf("checked %d bytes of output, %d of /metrics, %d of check-config, %d of /-/reload", len(out), len(metrics), len(effective), len(badAnswer+goodAnswer))
}

// A configuration that gives a secret-bearing key a value of the wrong type
// (config/testdata/secret_wrong_types.yaml, where every such key holds
// TOPSECRET-4f9c) is refused naming each key and line, and neither
// check-config nor the binary's start shows the value: not on stdout, not
// on stderr. (A reload reads the file through the same loader.)
func TestConfigErrorsHideSecrets(t *testing.T) {
	bin := buildAgent(t)
	path, err := filepath.Abs("../config/testdata/secret_wrong_types.yaml")
	require.NoError(t, err)
	const secret = "TOPSECRET-4f9c"
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, 24+1, strings.Count(string(raw), secret), "the file holds the secret in every key (and its comment names it)")
	for _, args := range [][]string{{"check-config", path}, {"--config.file=" + path}} {
		cmd := exec.Command(bin, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v", args)
		require.Equal(t, 1, ee.ExitCode(), "%v", args)
		require.Contains(t, stderr.String(), "secret_wrong_types.yaml:8: remote_write[0].basic_auth.password: cannot unmarshal", "%v", args)
		require.Contains(t, stderr.String(), "secret_wrong_types.yaml:58: remote_write[15].proxy_connect_header.Proxy-Authorization:", "%v", args)
		for _, out := range []string{stdout.String(), stderr.String()} {
			// yaml.v3 would quote the first 7 bytes.
			require.NotContains(t, out, secret[:7], "%v", args)
		}
	}
}

// A URL that does not parse, with a password and a token in it, is refused
// at start and by check-config naming the key and the reason: neither
// stdout nor stderr quotes it. (proxy_url is parsed as it is decoded, the
// others once the file is read.)
func TestBadURLNeverQuoted(t *testing.T) {
	bin := buildAgent(t)
	withSecrets := "http://agent:" + secretURLPassword + "@127.0.0.1:" + secretQueryToken + "/w?api_key=" + secretQueryToken
	for _, tc := range []struct{ cfg, want string }{
		{"remote_write:\n  - url: " + withSecrets + "\n",
			"bad-url.yaml:2: remote_write[0].url: is not a valid URL (invalid port after host)"},
		{"remote_write:\n  - url: http://127.0.0.1:9/w\n    oauth2: {client_id: c, client_secret: s, token_url: \"" + withSecrets + "\"}\n",
			"bad-url.yaml:3: remote_write[0].oauth2.token_url: is not a valid URL (invalid port after host)"},
		{"remote_write:\n  - url: http://127.0.0.1:9/w\n    proxy_url: \"http://p:" + secretURLPassword + "@[::1?" + secretQueryToken + "\"\n",
			"bad-url.yaml:3: remote_write[0].proxy_url: is not a valid URL (missing ']' in host)"},
	} {
		path := filepath.Join(t.TempDir(), "bad-url.yaml")
		require.NoError(t, os.WriteFile(path, []byte(tc.cfg), 0o600))
		for _, args := range [][]string{{"check-config", path}, {"--config.file=" + path}} {
			cmd := exec.Command(bin, args...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%v", args)
			require.Equal(t, 1, ee.ExitCode(), "%v", args)
			require.Contains(t, stderr.String(), tc.want, "%v", args)
			for _, out := range []string{stdout.String(), stderr.String()} {
				for _, s := range allSecrets {
					require.NotContains(t, out, s, "%v", args)
				}
			}
		}
	}
}
