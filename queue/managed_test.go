package queue

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// authServer is a recording Remote-Write receiver that checks each
// request's credentials as a managed receiver does, with check, and
// answers 403 Forbidden to a request check refuses (as Amazon, Azure and
// Google's managed Prometheus do), 204 to the others.
type authServer struct {
	*httptest.Server
	// check verifies a request, given its body; an error refuses it.
	check func(r *http.Request, body []byte) error
	// before, when not nil, may answer request i itself (true) before it
	// is checked: a 503 to see a retry signed again.
	before func(i int, w http.ResponseWriter) bool

	// mu guards reqs.
	mu   sync.Mutex
	reqs []authRequest
}

// authRequest is one request as an authServer saw it.
type authRequest struct {
	header  http.Header
	samples []gotSample
	// decodeErr is a problem decoding the body, checkErr what check said.
	decodeErr, checkErr error
}

func newAuthServer(t *testing.T, check func(r *http.Request, body []byte) error) *authServer {
	t.Helper()
	s := &authServer{check: check}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

func (s *authServer) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	req := authRequest{header: r.Header.Clone(), decodeErr: err}
	if err == nil {
		req.samples, req.decodeErr = decodeBody(bytes.NewReader(body))
	}
	s.mu.Lock()
	i := len(s.reqs)
	s.mu.Unlock()
	if s.before != nil && s.before(i, w) {
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		return
	}
	req.checkErr = s.check(r, body)
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	if req.checkErr != nil {
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, req.checkErr.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// requests returns a copy of what the server received, checking every body
// decoded.
func (s *authServer) requests(t *testing.T) []authRequest {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.reqs {
		require.NoError(t, r.decodeErr, "request %d", i)
	}
	return append([]authRequest(nil), s.reqs...)
}

// The managed receivers' keys load with Prometheus' defaults and are
// refused with Prometheus' messages, under the key they are about.
func TestManagedConfig(t *testing.T) {
	const url = "url: https://r/api/v1/write\n"
	c, err := decodeEntry(t, url+"sigv4: {}\n")
	require.NoError(t, err)
	require.Equal(t, &SigV4Config{}, c.SigV4Config, "sigv4: {} is the AWS SDK's default chain")
	require.Nil(t, c.AzureADConfig)
	require.Nil(t, c.GoogleIAMConfig)

	c, err = decodeEntry(t, url+`sigv4:
  region: eu-west-1
  access_key: AKIDEXAMPLE
  secret_key: example-secret
  profile: p
  role_arn: arn:aws:iam::123456789012:role/r
  external_id: ext
  session_name: kube-state-push
  tags: {team: obs}
  use_fips_sts_endpoint: true
  service_name: aps
`)
	require.NoError(t, err)
	require.Equal(t, &SigV4Config{
		Region: "eu-west-1", AccessKey: "AKIDEXAMPLE", SecretKey: "example-secret", Profile: "p",
		RoleARN: "arn:aws:iam::123456789012:role/r", ExternalID: "ext", SessionName: "kube-state-push",
		Tags: map[string]string{"team": "obs"}, UseFIPSSTSEndpoint: true, ServiceName: "aps",
	}, c.SigV4Config)

	c, err = decodeEntry(t, url+`azuread:
  oauth:
    client_id: 00000000-0000-0000-0000-000000000000
    client_secret: s
    tenant_id: 00000000-a12b-3cd4-e56f-000000000000
`)
	require.NoError(t, err)
	require.Equal(t, "AzurePublic", c.AzureADConfig.Cloud, "Prometheus' default cloud")

	t.Setenv("AZURE_FEDERATED_TOKEN_FILE", "")
	c, err = decodeEntry(t, url+`azuread:
  cloud: AzureChina
  workload_identity:
    client_id: 00000000-0000-0000-0000-000000000000
    tenant_id: 00000000-a12b-3cd4-e56f-000000000000
`)
	require.NoError(t, err)
	require.Equal(t, "AzureChina", c.AzureADConfig.Cloud)
	require.Equal(t, "/var/run/secrets/azure/tokens/azure-identity-token", c.AzureADConfig.WorkloadIdentity.TokenFilePath,
		"Prometheus' default token path")

	c, err = decodeEntry(t, url+"google_iam:\n  credentials_file: /etc/g.json\n")
	require.NoError(t, err)
	require.Equal(t, &GoogleIAMConfig{CredentialsFile: "/etc/g.json"}, c.GoogleIAMConfig)
	c, err = decodeEntry(t, url+"google_iam: {}\n")
	require.NoError(t, err)
	require.Equal(t, &GoogleIAMConfig{}, c.GoogleIAMConfig, "application default credentials")

	for _, tc := range []struct{ yaml, err string }{
		{"sigv4: {access_key: AKID}\n",
			"sigv4: must provide a AWS SigV4 Access key and Secret Key if credentials are specified in the SigV4 config"},
		{"sigv4: {secret_key: s}\n",
			"sigv4: must provide a AWS SigV4 Access key and Secret Key if credentials are specified in the SigV4 config"},
		{"sigv4: {external_id: e}\n", "sigv4: external_id can only be used with role_arn"},
		{"sigv4: {session_name: s}\n", "sigv4: session_name can only be used with role_arn"},
		{"sigv4: {tags: {a: b}}\n", "sigv4: tags can only be used with role_arn"},
		{"sigv4: {role_arn: r, session_name: 'a b'}\n",
			`sigv4: session_name must match ^[\w+=,.@-]{2,64}$ (2-64 alphanumeric and +=,.@- characters)`},
		{"azuread: {}\n",
			"azuread: must provide an Azure Managed Identity, Azure Workload Identity, Azure OAuth, Azure Certificate or Azure SDK in the Azure AD config"},
		{"azuread: {cloud: Mars, sdk: {}}\n", "azuread: must provide a cloud in the Azure AD config"},
		{"azuread: {sdk: {}, managed_identity: {}}\n", "azuread: cannot provide multiple authentication methods in the Azure AD config"},
		{"azuread: {managed_identity: {client_id: nope}}\n", "azuread: the provided Azure Managed Identity client_id is invalid"},
		{"azuread: {oauth: {client_id: 00000000-0000-0000-0000-000000000000, tenant_id: t}}\n",
			"azuread: must provide an Azure OAuth client_secret in the Azure AD config"},
		{"azuread: {sdk: {}, scope: 'a;b'}\n", "azuread: the provided scope contains invalid characters"},
		{"basic_auth: {username: u, password: p}\nsigv4: {}\n",
			"sigv4: at most one of basic_auth, authorization, oauth2, sigv4, azuread or google_iam must be configured. Currently configured: [basic_auth sigv4]"},
		{"authorization: {credentials: c}\ngoogle_iam: {}\n",
			"google_iam: at most one of basic_auth, authorization, oauth2, sigv4, azuread or google_iam must be configured. Currently configured: [authorization google_iam]"},
		{"oauth2: {client_id: i, client_secret: s, token_url: 'http://t/'}\nazuread: {sdk: {}}\n",
			"azuread: at most one of basic_auth, authorization, oauth2, sigv4, azuread or google_iam must be configured. Currently configured: [oauth2 azuread]"},
		{"sigv4: {}\nazuread: {sdk: {}}\ngoogle_iam: {}\n",
			"google_iam: at most one of basic_auth, authorization, oauth2, sigv4, azuread or google_iam must be configured. Currently configured: [sigv4 azuread google_iam]"},
		{"headers: {Authorization: x}\n",
			"headers.Authorization: use basic_auth, authorization, oauth2, sigv4, azuread or google_iam instead of an Authorization header"},
	} {
		_, err := decodeEntry(t, url+tc.yaml)
		require.EqualError(t, err, tc.err, "%s", tc.yaml)
	}

	// Two of prometheus/common's own are its error alone.
	_, err = decodeEntry(t, url+"basic_auth: {username: u}\nauthorization: {credentials: c}\n")
	require.EqualError(t, err, ": at most one of basic_auth, oauth2 & authorization must be configured")
}

// The managed receivers' secrets print as "<secret>" in an effective
// config (prometheus/common's config.Secret), and that loads again.
func TestManagedSecretsMasked(t *testing.T) {
	c, err := decodeEntry(t, `url: https://r/api/v1/write
sigv4: {region: us-east-1, access_key: AKIDEXAMPLE, secret_key: TOPSECRET-sigv4}
`)
	require.NoError(t, err)
	c2, err := decodeEntry(t, `url: https://r/api/v1/write
azuread:
  certificate:
    client_id: 00000000-0000-0000-0000-000000000000
    tenant_id: t
    certificate_path: /c.pfx
    certificate_password: TOPSECRET-pfx
`)
	require.NoError(t, err)
	c3, err := decodeEntry(t, `url: https://r/api/v1/write
azuread:
  oauth: {client_id: 00000000-0000-0000-0000-000000000000, tenant_id: t, client_secret: TOPSECRET-oauth}
`)
	require.NoError(t, err)
	for _, cfg := range []Config{c, c2, c3} {
		out, err := yaml.Marshal(&cfg)
		require.NoError(t, err)
		require.NotContains(t, string(out), "TOPSECRET")
		require.Contains(t, string(out), "<secret>")
		_, err = decodeEntry(t, string(out))
		require.NoError(t, err, "%s", out)
	}
}
