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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/config"
	"github.com/stretchr/testify/require"
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
	rd, err := NewDirectReader(cfg, nil)
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
		rd, err := NewDirectReader(cfg, nil)
		require.NoError(t, err)
		_, err = rd.Read(t.Context(), n, PathCadvisor)
		require.Error(t, err, "a kubelet whose certificate the CA did not sign is refused")
	})
	t.Run("timeout", func(t *testing.T) {
		hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
		defer hang.Close()
		cfg := DefaultConfig
		cfg.Scheme, cfg.BearerTokenFile, cfg.TLSConfig = "http", "", config.TLSConfig{}
		rd, err := NewDirectReader(cfg, nil)
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
	rd, err := NewProxyReader(&rest.Config{Host: srv.URL, BearerToken: "agent-token"}, DefaultConfig.BodySizeLimit)
	require.NoError(t, err)
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

// A kubelet that redirects gets no second request: the redirect is the
// answer, and the token never goes where the kubelet points.
func TestReadersRefuseRedirects(t *testing.T) {
	var elsewhere sync.Map
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Store(r.URL.Path, r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(body))
	}))
	defer other.Close()
	redirect := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/stolen", http.StatusFound)
	}))
	defer redirect.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: redirect.Certificate().Raw}), 0o600))
	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("sa-token"), 0o600))
	cfg := DefaultConfig
	cfg.BearerTokenFile = token
	cfg.TLSConfig = config.TLSConfig{CAFile: ca}
	direct, err := NewDirectReader(cfg, nil)
	require.NoError(t, err)
	_, err = direct.Read(t.Context(), nodeAt(t, redirect.URL), PathCadvisor)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusFound, se.Code)

	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/stolen-through-proxy", http.StatusFound)
	}))
	defer apiserver.Close()
	proxy, err := NewProxyReader(&rest.Config{Host: apiserver.URL, BearerToken: "agent-token"}, cfg.BodySizeLimit)
	require.NoError(t, err)
	_, err = proxy.Read(t.Context(), Node{Name: "worker-1"}, PathCadvisor)
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusFound, se.Code)

	n := 0
	elsewhere.Range(func(k, v any) bool { n++; t.Errorf("%s reached with %q", k, v); return true })
	require.Zero(t, n, "no request followed a redirect")
}

// A body over body_size_limit fails the read in both modes, whether its
// length is announced or streamed, and nothing of it is returned.
func TestReadersBodySizeLimit(t *testing.T) {
	const limit = 4 << 10
	big := strings.Repeat("container_cpu_usage_seconds_total 1\n", 1000) // 36 KB
	for _, chunked := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if !chunked {
				w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			}
			for i := 0; i < len(big); i += 1000 {
				_, _ = w.Write([]byte(big[i:min(i+1000, len(big))]))
				w.(http.Flusher).Flush()
			}
		}))
		cfg := DefaultConfig
		cfg.Scheme, cfg.BearerTokenFile, cfg.TLSConfig, cfg.BodySizeLimit = "http", "", config.TLSConfig{}, limit
		direct, err := NewDirectReader(cfg, nil)
		require.NoError(t, err)
		got, err := direct.Read(t.Context(), nodeAt(t, srv.URL), PathCadvisor)
		require.ErrorIs(t, err, ErrBodySizeLimit, "chunked %v", chunked)
		require.Equal(t, ReasonBodySizeLimit, reasonOf(err))
		require.Nil(t, got)

		proxy, err := NewProxyReader(&rest.Config{Host: srv.URL}, limit)
		require.NoError(t, err)
		got, err = proxy.Read(t.Context(), Node{Name: "worker-1"}, PathCadvisor)
		require.ErrorIs(t, err, ErrBodySizeLimit, "chunked %v", chunked)
		require.Nil(t, got)
		srv.Close()
	}

	// At the limit exactly, the body is read.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(big[:limit])) }))
	defer srv.Close()
	proxy, err := NewProxyReader(&rest.Config{Host: srv.URL}, limit)
	require.NoError(t, err)
	got, err := proxy.Read(t.Context(), Node{Name: "worker-1"}, PathCadvisor)
	require.NoError(t, err)
	require.Len(t, got, limit)
}

// Without a CA of its own, the direct mode verifies the kubelets with the
// cluster's CA: tls_config's file outside a pod is the kubeconfig's.
func TestDirectReaderClusterCA(t *testing.T) {
	cluster := &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte("kubeconfig CA")}}
	if _, err := os.Stat(serviceAccountCA); err == nil {
		t.Skip("running in a pod: the pod's CA file exists")
	}
	require.Equal(t, "kubeconfig CA", clusterCA(config.TLSConfig{CAFile: serviceAccountCA}, cluster).CA)
	require.Empty(t, clusterCA(config.TLSConfig{CAFile: serviceAccountCA}, cluster).CAFile)
	require.Equal(t, "kubeconfig CA", clusterCA(config.TLSConfig{}, cluster).CA)
	require.Equal(t, config.TLSConfig{CAFile: "/etc/kubelet-ca.crt"}, clusterCA(config.TLSConfig{CAFile: "/etc/kubelet-ca.crt"}, cluster), "an operator's CA stays")
	require.Equal(t, "/in-cluster/ca.crt", clusterCA(config.TLSConfig{}, &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: "/in-cluster/ca.crt"}}).CAFile)
	require.Equal(t, config.TLSConfig{CAFile: serviceAccountCA}, clusterCA(config.TLSConfig{CAFile: serviceAccountCA}, nil))

	// End to end: a kubelet signed by the kubeconfig's CA verifies.
	rec := &recorder{code: http.StatusOK, body: body}
	srv := httptest.NewTLSServer(rec)
	defer srv.Close()
	cfg := DefaultConfig
	cfg.BearerTokenFile = ""
	rd, err := NewDirectReader(cfg, &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}})
	require.NoError(t, err)
	_, err = rd.Read(t.Context(), nodeAt(t, srv.URL), PathCadvisor)
	require.NoError(t, err)
}
