package agent

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/watch"
)

// servingAgent builds an agent listening on a free loopback port and
// starts its server (without Run); it returns the agent and its base URL.
func servingAgent(t *testing.T, extra string, o Options) (*Agent, string) {
	t.Helper()
	cfg, err := Load([]byte("listen_address: 127.0.0.1:0\nresources: [nodes]\n"+extra+"remote_write:\n  - url: http://127.0.0.1:1/write\n"), "web.yaml")
	require.NoError(t, err)
	clients := watch.Clients{Kube: reloadCluster()}
	o.Clients, o.Registry = &clients, prometheus.NewRegistry()
	a, err := New(cfg, o)
	require.NoError(t, err)
	srv := a.serve()
	t.Cleanup(func() {
		_ = srv.Shutdown(context.Background())
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
