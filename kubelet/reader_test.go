package kubelet

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/config"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// recorder is an HTTP server that records each request and answers with
// the status and body set for it.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
	code int
	body string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Clone(context.Background()))
	code, body := r.code, r.body
	r.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

func (r *recorder) last() *http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

func nodeAt(t *testing.T, srvURL string) Node { return nodeAtURL(t, srvURL) }

func nodeAtURL(t testing.TB, srvURL string) Node {
	t.Helper()
	u, err := url.Parse(srvURL)
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	return Node{UID: "u1", Name: "n1", Address: host, Port: int32(p)}
}

func TestDirectReader(t *testing.T) {
	rec := &recorder{code: http.StatusOK, body: body}
	srv := httptest.NewTLSServer(rec)
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("sa-token\n"), 0o600))
	cfg := DefaultConfig
	cfg.BearerTokenFile = token
	cfg.TLSConfig = config.TLSConfig{CAFile: ca}
	rd, err := NewDirectReader(cfg)
	require.NoError(t, err)
	n := nodeAt(t, srv.URL)

	got, err := rd.Read(t.Context(), n, PathCadvisor)
	require.NoError(t, err)
	require.Equal(t, body, string(got))
	req := rec.last()
	require.Equal(t, "/metrics/cadvisor", req.URL.Path)
	require.Equal(t, "Bearer sa-token", req.Header.Get("Authorization"), "the token file's token, trimmed")
	require.Contains(t, req.Header.Get("Accept"), "text/plain;version=0.0.4")

	// The token rotates: read again on each request.
	require.NoError(t, os.WriteFile(token, []byte("rotated"), 0o600))
	_, err = rd.Read(t.Context(), n, PathResource)
	require.NoError(t, err)
	require.Equal(t, "Bearer rotated", rec.last().Header.Get("Authorization"))

	t.Run("status codes", func(t *testing.T) {
		for code, reason := range map[int]string{403: ReasonForbidden, 401: ReasonForbidden, 500: ReasonStatus, 404: ReasonStatus} {
			rec.mu.Lock()
			rec.code = code
			rec.mu.Unlock()
			_, err := rd.Read(t.Context(), n, PathCadvisor)
			require.Error(t, err)
			require.Equal(t, reason, reasonOf(err), "%d", code)
		}
	})
	t.Run("unknown CA", func(t *testing.T) {
		cfg := DefaultConfig
		cfg.BearerTokenFile = ""
		cfg.TLSConfig = config.TLSConfig{}
		rd, err := NewDirectReader(cfg)
		require.NoError(t, err)
		_, err = rd.Read(t.Context(), n, PathCadvisor)
		require.Error(t, err, "a kubelet whose certificate the CA did not sign is refused")
	})
	t.Run("timeout", func(t *testing.T) {
		hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
		defer hang.Close()
		cfg := DefaultConfig
		cfg.Scheme, cfg.BearerTokenFile, cfg.TLSConfig = "http", "", config.TLSConfig{}
		rd, err := NewDirectReader(cfg)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err = rd.Read(ctx, nodeAt(t, hang.URL), PathCadvisor)
		require.Equal(t, ReasonTimeout, reasonOf(err), "%v", err)
	})
	t.Run("no address", func(t *testing.T) {
		_, err := rd.Read(t.Context(), Node{Name: "bare"}, PathCadvisor)
		require.Equal(t, ReasonConnect, reasonOf(err))
	})
}

// TestProxyReaderRecorded reads through a recorded API server: the
// request is the node proxy's path with the agent's own credentials, and
// the proxy's refusal is a forbidden read.
func TestProxyReaderRecorded(t *testing.T) {
	rec := &recorder{code: http.StatusOK, body: body}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, BearerToken: "agent-token"})
	require.NoError(t, err)
	rd := NewProxyReader(cs.CoreV1().RESTClient())
	n := Node{UID: "u1", Name: "worker-1", Address: "10.0.0.9", Port: 10250}

	for _, path := range []string{PathCadvisor, PathResource, PathKubelet} {
		got, err := rd.Read(t.Context(), n, path)
		require.NoError(t, err)
		require.Equal(t, body, string(got))
		req := rec.last()
		require.Equal(t, http.MethodGet, req.Method)
		require.Equal(t, "/api/v1/nodes/worker-1/proxy"+path, req.URL.Path)
		require.Equal(t, "Bearer agent-token", req.Header.Get("Authorization"))
		require.Contains(t, req.Header.Get("Accept"), "text/plain;version=0.0.4")
	}

	rec.mu.Lock()
	rec.code = http.StatusForbidden
	rec.body = `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nodes \"worker-1\" is forbidden: User cannot get resource \"nodes/proxy\"","reason":"Forbidden","code":403}`
	rec.mu.Unlock()
	_, err = rd.Read(t.Context(), n, PathCadvisor)
	require.Error(t, err)
	require.Equal(t, ReasonForbidden, reasonOf(err), "%v", err)

	rec.mu.Lock()
	rec.code, rec.body = http.StatusServiceUnavailable, "no endpoints"
	rec.mu.Unlock()
	_, err = rd.Read(t.Context(), n, PathCadvisor)
	require.Equal(t, ReasonStatus, reasonOf(err), "%v", err)
}
