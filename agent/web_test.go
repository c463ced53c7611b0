package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/watch"
)

// servingAgent builds an agent listening on a free loopback port and
// starts its server (without Run); it returns the agent and its base URL.
func servingAgent(t *testing.T, extra string, o Options) (*Agent, string) {
	t.Helper()
	cfg, err := config.Load([]byte("listen_address: 127.0.0.1:0\nresources: [nodes]\n"+extra+"remote_write:\n  - url: http://127.0.0.1:1/write\n"), "web.yaml")
	require.NoError(t, err)
	clients := watch.Clients{Kube: reloadCluster()}
	o.Clients, o.Registry = &clients, prometheus.NewRegistry()
	a, err := New(cfg, o)
	require.NoError(t, err)
	servers := a.serve()
	t.Cleanup(func() {
		for _, srv := range servers {
			_ = srv.Shutdown(context.Background())
		}
		for _, e := range a.endpoints {
			e.q.Close()
		}
	})
	return a, "http://" + a.Addr().String()
}

func do(t *testing.T, c *http.Client, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// /-/reload is served only with EnableLifecycle (--web.enable-lifecycle),
// as Prometheus serves it: without, POST and PUT answer 403 with
// Prometheus' text, GET 405 either way; the read-only paths are served
// either way.
func TestLifecycleEndpoints(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		t.Run(map[bool]string{false: "disabled", true: "enabled"}[enabled], func(t *testing.T) {
			_, base := servingAgent(t, "", Options{EnableLifecycle: enabled})
			for _, method := range []string{http.MethodPost, http.MethodPut} {
				code, body := do(t, http.DefaultClient, method, base+"/-/reload")
				if !enabled {
					require.Equal(t, http.StatusForbidden, code)
					require.Equal(t, "Lifecycle API is not enabled.", body)
					continue
				}
				// Served: this agent has no file to read again.
				require.Equal(t, http.StatusInternalServerError, code)
				require.Contains(t, body, "not given a configuration file")
			}
			code, body := do(t, http.DefaultClient, http.MethodGet, base+"/-/reload")
			require.Equal(t, http.StatusMethodNotAllowed, code)
			require.Equal(t, "Only POST or PUT requests allowed", strings.TrimSpace(body))
			for _, path := range []string{"/metrics", "/healthz"} {
				code, _ := do(t, http.DefaultClient, http.MethodGet, base+path)
				require.Equal(t, http.StatusOK, code, path)
			}
		})
	}
}

// selfSignedCert writes a self-signed certificate for 127.0.0.1 and its key
// into dir and returns their paths and the certificate.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kube-state-push test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err = x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certFile, keyFile, cert
}

// With --web.config.file (exporter-toolkit's web configuration) the whole
// listener takes TLS and basic auth: HTTPS with the right credentials is
// served, without them or with a wrong password 401, and plain HTTP is
// refused.
func TestWebConfigTLSBasicAuth(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, cert := selfSignedCert(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret-pass"), bcrypt.MinCost)
	require.NoError(t, err)
	webConfig := filepath.Join(dir, "web.yaml")
	require.NoError(t, os.WriteFile(webConfig, []byte("tls_server_config:\n  cert_file: "+certFile+"\n  key_file: "+keyFile+
		"\nbasic_auth_users:\n  alice: "+string(hash)+"\n"), 0o600))
	_, base := servingAgent(t, "", Options{WebConfigFile: webConfig})
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()
	https := "https://" + strings.TrimPrefix(base, "http://")

	get := func(user, pass, url string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		require.NoError(t, err)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/-/reload"} {
		code, _ := get("", "", https+path)
		require.Equal(t, http.StatusUnauthorized, code, "%s without credentials", path)
		code, _ = get("alice", "wrong", https+path)
		require.Equal(t, http.StatusUnauthorized, code, "%s with a wrong password", path)
	}
	code, body := get("alice", "s3cret-pass", https+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "kube_state_push_")
	code, _ = get("alice", "s3cret-pass", https+"/healthz")
	require.Equal(t, http.StatusOK, code)

	// Plain HTTP on the TLS listener: Go's server answers 400 and serves
	// nothing.
	code, body = do(t, http.DefaultClient, http.MethodGet, base+"/metrics")
	require.Equal(t, http.StatusBadRequest, code)
	require.NotContains(t, body, "kube_state_push_")
}

// A web configuration that does not load fails New, before anything
// starts.
func TestWebConfigInvalid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.yaml")
	require.NoError(t, os.WriteFile(path, []byte("tls_server_config:\n  cert_file: /nonexistent.crt\n  key_file: /nonexistent.key\n"), 0o600))
	cfg, err := config.Load([]byte("listen_address: 127.0.0.1:0\nresources: [nodes]\nremote_write:\n  - url: http://127.0.0.1:1/write\n"), "web.yaml")
	require.NoError(t, err)
	clients := watch.Clients{Kube: reloadCluster()}
	_, err = New(cfg, Options{Clients: &clients, Registry: prometheus.NewRegistry(), WebConfigFile: path})
	require.ErrorContains(t, err, "web configuration "+path)
}

// Profiles are served only when asked for: without the option every
// /debug/pprof/ path answers 404.
func TestPprofOnlyWhenEnabled(t *testing.T) {
	_, off := servingAgent(t, "", Options{})
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1", "/debug/pprof/cmdline"} {
		code, _ := do(t, http.DefaultClient, http.MethodGet, off+path)
		require.Equal(t, http.StatusNotFound, code, path)
	}
	_, base := servingAgent(t, "", Options{EnablePprof: true})
	code, body := do(t, http.DefaultClient, http.MethodGet, base+"/debug/pprof/heap?debug=1")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "heap profile")
}

// Every server bounds reading the request, writing the answer and idle
// connections; with profiles served the write timeout lets a profile of
// up to five minutes through, which Go's pprof handler otherwise refuses.
func TestServerTimeouts(t *testing.T) {
	for _, tc := range []struct {
		pprof   bool
		minimum time.Duration
	}{{false, 0}, {true, 5 * time.Minute}} {
		cfg, err := config.Load([]byte("listen_address: 127.0.0.1:0\npull: {listen_address: 127.0.0.1:0}\nresources: [nodes]\nremote_write:\n  - url: http://127.0.0.1:1/write\n"), "web.yaml")
		require.NoError(t, err)
		clients := watch.Clients{Kube: reloadCluster()}
		a, err := New(cfg, Options{Clients: &clients, Registry: prometheus.NewRegistry(), EnablePprof: tc.pprof})
		require.NoError(t, err)
		servers := a.serve()
		require.Len(t, servers, 2)
		for _, srv := range servers {
			require.Positive(t, srv.ReadHeaderTimeout)
			require.Positive(t, srv.ReadTimeout)
			require.Positive(t, srv.WriteTimeout)
			require.Positive(t, srv.IdleTimeout)
			_ = srv.Shutdown(context.Background())
		}
		require.Greater(t, servers[0].WriteTimeout, tc.minimum, "pprof %v", tc.pprof)
		require.Equal(t, pullTimeouts.write, servers[1].WriteTimeout)
		for _, e := range a.endpoints {
			e.q.Close()
		}
	}
}

// A client that never finishes its request's headers is cut off.
func TestSlowClientCutOff(t *testing.T) {
	saved := metricsTimeouts
	t.Cleanup(func() { metricsTimeouts = saved })
	metricsTimeouts.readHeader, metricsTimeouts.read = 200*time.Millisecond, 200*time.Millisecond
	a, _ := servingAgent(t, "", Options{})
	conn, err := net.Dial("tcp", a.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n")) // no blank line: never ends
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	start := time.Now()
	_, err = io.ReadAll(conn)
	require.NoError(t, err, "the server closed the connection before the test's deadline")
	require.Less(t, time.Since(start), 3*time.Second)
}
