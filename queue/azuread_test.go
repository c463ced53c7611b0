package queue

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/storage/remote/azuread"
	"github.com/stretchr/testify/require"
)

// Prometheus' azuread package builds its azidentity credential for one of
// three fixed clouds (AzurePublic, AzureGovernment, AzureChina), so the
// token endpoint is always login.microsoftonline.com (or its national
// twins), and the Azure SDK sends through its own HTTP client, which no
// option of that package reaches. The test therefore runs the real package
// unchanged in a child process whose environment gives that client what
// any Go program honours: HTTPS_PROXY, a local proxy that answers CONNECT
// login.microsoftonline.com:443 itself (it never dials out), and
// SSL_CERT_FILE, a CA made by the test that signed the proxy's certificate
// for login.microsoftonline.com. The environment is read once per process,
// hence the child.

const (
	azureChildEnv     = "KSP_TEST_AZUREAD_CHILD"
	azureHost         = "login.microsoftonline.com"
	azureClientID     = "00000000-0000-0000-0000-00000000c11d"
	azureTenantID     = "00000000-a12b-3cd4-e56f-000000000000"
	azureClientSecret = "azure-client-secret"
	azureToken        = "azure-access-token"
	// azureFederatedToken is the Kubernetes service account token that
	// workload identity presents as its client assertion.
	azureFederatedToken = "kubernetes-service-account-token"
	// azureScope is Prometheus' ingestion audience for AzurePublic.
	azureScope = "https://monitor.azure.com//.default"
)

// azuread's oauth client credentials are exchanged for an access token at
// the Microsoft identity platform's token endpoint (a local one), and the
// token is sent as a bearer token with every request.
func TestAzureADOAuth(t *testing.T) {
	if os.Getenv(azureChildEnv) == "" {
		runAzureChild(t, "TestAzureADOAuth")
		return
	}
	aad := newAzureADFake(t)

	srv := newAuthServer(t, bearer(azureToken))
	e, m := newTestEndpoint(t, srv.URL+"/dataCollectionRules/dcr-1/streams/Microsoft-PrometheusMetrics/api/v1/write", func(c *Config) {
		c.AzureADConfig = &AzureADConfig{OAuth: &azuread.OAuthConfig{
			ClientID: azureClientID, ClientSecret: azureClientSecret, TenantID: azureTenantID,
		}}
		c.QueueConfig.MaxSamplesPerSend = 2
	})
	require.Equal(t, 4, e.appendItems(t.Context(), items(4, 1000)))
	require.NoError(t, stop(t, e, 10*time.Second))
	reqs := srv.requests(t)
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		require.NoError(t, r.checkErr)
	}
	require.Equal(t, 4.0, counter(t, m.samplesSent))

	got := aad.seen()
	require.Equal(t, []string{
		"GET /common/discovery/instance",
		"GET /" + azureTenantID + "/v2.0/.well-known/openid-configuration",
		"POST /" + azureTenantID + "/oauth2/v2.0/token",
	}, got, "instance and tenant discovery, then one token for both requests")
	require.Empty(t, aad.problems())
}

// workload_identity presents the projected service account token of its
// token_file_path as the client assertion (the federated credential of
// AKS' workload identity) and sends the token it gets.
func TestAzureADWorkloadIdentity(t *testing.T) {
	if os.Getenv(azureChildEnv) == "" {
		runAzureChild(t, "TestAzureADWorkloadIdentity")
		return
	}
	aad := newAzureADFake(t)
	tokenFile := filepath.Join(t.TempDir(), "azure-identity-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(azureFederatedToken), 0o600))
	srv := newAuthServer(t, bearer(azureToken))
	e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
		c.AzureADConfig = &AzureADConfig{WorkloadIdentity: &azuread.WorkloadIdentityConfig{
			ClientID: azureClientID, TenantID: azureTenantID, TokenFilePath: tokenFile,
		}}
		c.QueueConfig.MaxSamplesPerSend = 2
	})
	require.Equal(t, 2, e.appendItems(t.Context(), items(2, 1000)))
	require.NoError(t, stop(t, e, 10*time.Second))
	reqs := srv.requests(t)
	require.Len(t, reqs, 1)
	require.NoError(t, reqs[0].checkErr)
	require.Equal(t, 2.0, counter(t, m.samplesSent))
	require.Contains(t, aad.seen(), "POST /"+azureTenantID+"/oauth2/v2.0/token")
	require.Empty(t, aad.problems())
	require.Zero(t, aad.refusedCount())
}

// A client secret the identity platform refuses gets no token: no request
// reaches the receiver. Prometheus' client takes the failed token request
// for a recoverable error, and so does this one: the batch is retried
// until the stop deadline, then counted as dropped at shutdown.
func TestAzureADWrongSecret(t *testing.T) {
	if os.Getenv(azureChildEnv) == "" {
		runAzureChild(t, "TestAzureADWrongSecret")
		return
	}
	aad := newAzureADFake(t)
	srv := newAuthServer(t, bearer(azureToken))
	e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
		c.AzureADConfig = &AzureADConfig{OAuth: &azuread.OAuthConfig{
			ClientID: azureClientID, ClientSecret: "not-the-secret", TenantID: azureTenantID,
		}}
		c.QueueConfig.MinBackoff = 50 * time.Millisecond
		c.QueueConfig.MaxBackoff = 100 * time.Millisecond
		c.QueueConfig.MaxSamplesPerSend = 2
	})
	require.Equal(t, 2, e.appendItems(t.Context(), items(2, 1000)))
	require.Eventually(t, func() bool { return aad.refusedCount() >= 1 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // a few retries
	require.Error(t, stop(t, e, 200*time.Millisecond))
	require.Greater(t, aad.refusedCount(), 1, "retried")
	require.Empty(t, srv.requests(t), "nothing is sent without a token")
	require.Zero(t, counter(t, m.samplesSent))
	require.Equal(t, 2.0, counter(t, m.samplesDropped, ReasonShutdown))
	require.Positive(t, counter(t, m.samplesRetried))
}

// runAzureChild runs test in a child process set up as the comment at the
// top of this file says, and fails with its output if it fails.
func runAzureChild(t *testing.T, test string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), azureChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child:\n%s", out)
	require.Contains(t, string(out), "--- PASS: "+test+" ", "child:\n%s", out)
}

// azureADFake is a Microsoft identity platform for one tenant behind a
// local CONNECT proxy that serves login.microsoftonline.com itself.
type azureADFake struct {
	// mu guards the fields below.
	mu sync.Mutex
	// requests are the method and path of each request, in order.
	requests []string
	// refused counts token requests refused for their credentials.
	refused int
	// bad are requests that are not what the platform expects.
	bad []string
}

// newAzureADFake starts the proxy and the identity platform and points
// this process at them (HTTPS_PROXY, SSL_CERT_FILE); it checks that
// requests to login.microsoftonline.com would go through the proxy before
// anything is sent there.
func newAzureADFake(t *testing.T) *azureADFake {
	t.Helper()
	f := &azureADFake{}
	caPEM, leaf := azureCerts(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, caPEM, 0o600))

	// The identity platform, served over the proxy's tunnels.
	tunnels := &connListener{conns: make(chan net.Conn), done: make(chan struct{})}
	platform := &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = platform.Serve(tunnels)
	}()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect || r.Host != azureHost+":443" {
			f.problem("proxy: %s %s", r.Method, r.Host)
			http.Error(w, "this proxy only reaches "+azureHost, http.StatusForbidden)
			return
		}
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			f.problem("proxy: hijack: %v", err)
			return
		}
		_, _ = rw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n")
		_ = rw.Flush()
		tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12})
		select {
		case tunnels.conns <- tc:
		case <-tunnels.done:
			_ = conn.Close()
		}
	}))
	t.Cleanup(func() {
		_ = platform.Close()
		<-served
		proxy.Close()
	})

	for _, k := range []string{"NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "https_proxy", "AZURE_AUTHORITY_HOST", "AZURE_REGIONAL_AUTHORITY_NAME"} {
		t.Setenv(k, "")
		require.NoError(t, os.Unsetenv(k))
	}
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("SSL_CERT_FILE", caFile)
	t.Setenv("SSL_CERT_DIR", t.TempDir())
	// The Azure SDK's transport uses http.ProxyFromEnvironment, which reads
	// the environment once: it must see the proxy, or nothing is tried.
	probe, err := http.NewRequest(http.MethodGet, "https://"+azureHost+"/", nil)
	require.NoError(t, err)
	p, err := http.ProxyFromEnvironment(probe)
	require.NoError(t, err)
	require.NotNil(t, p, "requests to %s would not go through the test's proxy", azureHost)
	require.Equal(t, proxy.Listener.Addr().String(), p.Host)
	pool, err := x509.SystemCertPool()
	require.NoError(t, err)
	_, err = leaf.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: azureHost})
	require.NoError(t, err, "the system roots must be the test's CA")
	return f
}

// serve answers as the Microsoft identity platform does for the tenant:
// its OpenID configuration, and tokens for the client credentials grant.
func (f *azureADFake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	base := "https://" + azureHost + "/" + azureTenantID
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/common/discovery/instance":
		// MSAL's instance discovery, as login.microsoftonline.com answers it.
		_ = json.NewEncoder(w).Encode(map[string]any{
			"tenant_discovery_endpoint": base + "/v2.0/.well-known/openid-configuration",
			"api-version":               "1.1",
			"metadata": []map[string]any{{
				"preferred_network": azureHost, "preferred_cache": "login.windows.net",
				"aliases": []string{azureHost, "login.windows.net", "login.microsoft.com", "sts.windows.net"},
			}},
		})
	case r.Method == http.MethodGet && r.URL.Path == "/"+azureTenantID+"/v2.0/.well-known/openid-configuration":
		_ = json.NewEncoder(w).Encode(map[string]any{
			"token_endpoint":                        base + "/oauth2/v2.0/token",
			"authorization_endpoint":                base + "/oauth2/v2.0/authorize",
			"issuer":                                base + "/v2.0",
			"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
		})
	case r.Method == http.MethodPost && r.URL.Path == "/"+azureTenantID+"/oauth2/v2.0/token":
		if err := r.ParseForm(); err != nil {
			f.problem("token: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		form := r.PostForm
		if form.Get("grant_type") != "client_credentials" || form.Get("client_id") != azureClientID ||
			!strings.Contains(" "+form.Get("scope")+" ", " "+azureScope+" ") {
			f.problem("token request %v", redactForm(form))
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_request"}`)
			return
		}
		federated := form.Get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" &&
			form.Get("client_assertion") == azureFederatedToken
		if form.Get("client_secret") != azureClientSecret && !federated {
			f.mu.Lock()
			f.refused++
			f.mu.Unlock()
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided.","error_codes":[7000215]}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": azureToken,
		})
	default:
		f.problem("unexpected %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusNotFound)
	}
}

// redactForm returns form without its client secret, for messages.
func redactForm(form url.Values) url.Values {
	out := url.Values{}
	for k, v := range form {
		if k == "client_secret" {
			v = []string{"<secret>"}
		}
		out[k] = v
	}
	return out
}

func (f *azureADFake) problem(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bad = append(f.bad, fmt.Sprintf(format, args...))
}

func (f *azureADFake) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func (f *azureADFake) problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.bad...)
}

func (f *azureADFake) refusedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

// connListener is a net.Listener of the connections handed to it.
type connListener struct {
	conns chan net.Conn
	// done is closed by Close; once guards it.
	done chan struct{}
	once sync.Once
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// azureCerts makes a CA and a certificate it signed for
// login.microsoftonline.com; it returns the CA in PEM and the leaf.
func azureCerts(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kube-state-push test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: azureHost}, DNSNames: []string{azureHost},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(leafDER)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key, Leaf: leaf}
}
