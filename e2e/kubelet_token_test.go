package e2e

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// headerRecorder is a hostile kubelet's listener: it records every
// connection it accepts, every TLS hello, and every request's headers.
type headerRecorder struct {
	mu      sync.Mutex
	conns   int
	hellos  int
	headers []http.Header
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.headers = append(h.headers, r.Header.Clone())
	h.mu.Unlock()
	_, _ = w.Write([]byte("kubelet_running_pods 1\n"))
}

func (h *headerRecorder) connState(_ net.Conn, s http.ConnState) {
	if s == http.StateNew {
		h.mu.Lock()
		h.conns++
		h.mu.Unlock()
	}
}

// authorizations returns the Authorization headers received, and how many
// connections and TLS hellos arrived.
func (h *headerRecorder) authorizations() (auth []string, conns, hellos int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, hd := range h.headers {
		if v := hd.Values("Authorization"); len(v) > 0 {
			auth = append(auth, v...)
		}
	}
	return auth, h.conns, h.hellos
}

// startRecorder serves a headerRecorder on 127.0.0.1: over plain HTTP, or
// over TLS with cert.
func startRecorder(t *testing.T, cert *tls.Certificate) (*headerRecorder, *httptest.Server) {
	t.Helper()
	h := &headerRecorder{}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = h.connState
	if cert == nil {
		srv.Start()
	} else {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			h.mu.Lock()
			h.hellos++
			h.mu.Unlock()
			return nil, nil
		}}
		srv.StartTLS()
	}
	t.Cleanup(srv.Close)
	return h, srv
}

// TestKubeletTokenOnlyToVerifiedKubelets puts hostile kubelets on Node
// addresses: one over plain HTTP, one whose certificate the kubelet CA did
// not sign, and an honest one. The agent refuses at load to send its
// token over plain HTTP or without verification unless the opt-in key
// says so; in the default https mode the hostile ones never receive the
// token, though the agent dials them, while the verified one does.
func TestKubeletTokenOnlyToVerifiedKubelets(t *testing.T) {
	needEnv(t)
	client, err := env.cp.Client()
	require.NoError(t, err)
	dir := t.TempDir()
	tl := writeKubeletTLS(t, dir)
	kubeletCert, err := tls.LoadX509KeyPair(tl.certFile, tl.keyFile)
	require.NoError(t, err)
	// A certificate for 127.0.0.1 that the kubelet CA did not sign.
	other := writeKubeletTLS(t, t.TempDir())
	otherCert, err := tls.LoadX509KeyPair(other.certFile, other.keyFile)
	require.NoError(t, err)

	plain, plainSrv := startRecorder(t, nil)
	forged, forgedSrv := startRecorder(t, &otherCert)
	honest, honestSrv := startRecorder(t, &kubeletCert)
	nodePlain, nodeForged, nodeHonest := "kubelet-token-plain", "kubelet-token-forged-cert", "kubelet-token-honest"
	fakeNode(t, client, nodePlain, plainSrv.URL)
	fakeNode(t, client, nodeForged, forgedSrv.URL)
	fakeNode(t, client, nodeHonest, honestSrv.URL)
	t.Cleanup(func() { cleanupNodes(t, client, []string{nodePlain, nodeForged, nodeHonest}) })

	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("e2e-secret-token\n"), 0o600))
	config := func(extra map[string]any) *agentConfig {
		cfg := pipelineConfig()
		cfg.Resources = []string{"nodes"}
		cfg.Kubelet = newKubelet("direct", tl.caFile)
		cfg.Kubelet.BearerTokenFile = &token
		cfg.Kubelet.Extra = extra
		return cfg
	}

	t.Run("refused at load without the opt-in key", func(t *testing.T) {
		bin := buildAgent(t)
		for name, extra := range map[string]map[string]any{
			"http":                 {"scheme": "http"},
			"insecure_skip_verify": nil,
		} {
			text := config(extra).yamlText(t)
			if extra == nil {
				caKey := "ca_file: " + tl.caFile
				require.Contains(t, text, caKey)
				text = strings.Replace(text, caKey, caKey+", insecure_skip_verify: true", 1)
			}
			file := filepath.Join(t.TempDir(), "config.yaml")
			require.NoError(t, os.WriteFile(file, []byte(text), 0o600))
			out, err := exec.Command(bin, "--config.file="+file).CombinedOutput()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "%s: the agent must not start: %v\n%s", name, err, out)
			require.Equal(t, 1, ee.ExitCode())
			require.Contains(t, string(out), "allow_token_over_unverified_connection", name)
		}
	})

	t.Run("https: only the verified kubelet gets the token", func(t *testing.T) {
		a := startAgent(t, agentOptions{config: config(nil)})
		nodes := `node=~"kubelet-token-.*"`
		expectQuery(t, `up{job="kubelet",`+nodes+`}`, "node", map[string]float64{nodePlain: 0, nodeForged: 0, nodeHonest: 1})
		require.NoError(t, a.stop())

		auth, conns, _ := honest.authorizations()
		require.NotZero(t, conns)
		require.Contains(t, auth, "Bearer e2e-secret-token", "the verified kubelet is read with the token")
		auth, conns, _ = plain.authorizations()
		require.NotZero(t, conns, "the agent dialed the plain kubelet")
		require.Empty(t, auth, "a plain-HTTP kubelet never gets the token")
		auth, _, hellos := forged.authorizations()
		require.NotZero(t, hellos, "the agent started TLS with the unverified kubelet")
		require.Empty(t, auth, "a kubelet whose certificate does not verify never gets the token")
		t.Logf("connections: plain %d; TLS hellos to the unverified kubelet %d; none carried a token", conns, hellos)
	})

	t.Run("the opt-in key sends it over http, with a warning", func(t *testing.T) {
		cfg := config(map[string]any{"scheme": "http", "allow_token_over_unverified_connection": true})
		cfg.Kubelet.TLSConfig = nil
		a := startAgent(t, agentOptions{config: cfg})
		eventually(t, 30*time.Second, "a read of the plain kubelet with the token", func() error {
			if auth, _, _ := plain.authorizations(); len(auth) == 0 {
				return errors.New("no token yet")
			}
			return nil
		})
		require.NoError(t, a.stop())
		require.Contains(t, a.logs.String(), "allow_token_over_unverified_connection")
		require.Contains(t, a.logs.String(), "level=WARN")
	})
}
