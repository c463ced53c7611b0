package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/watch"
)

// By default (kube_api_compression: false) the agent's clients get
// uncompressed lists and watches from the real API server; with it on, the
// watch the reflectors open (a watch-list: the initial objects, then every
// change, on one stream that lasts minutes) comes gzipped, and the
// transport inflates it: the CPU the default spares the agent (and the
// API server the gzip). The clients are the ones the agent builds, from
// the kubeconfig file it is given.
func TestKubeAPICompression(t *testing.T) {
	needEnv(t)
	for _, tc := range []struct {
		name        string
		compression bool
	}{{"default off", false}, {"on", true}} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := watch.RESTConfig(env.cp.Kubeconfig, tc.compression)
			require.NoError(t, err)
			var mu sync.Mutex
			gzipped := map[string]bool{} // by kind of request
			rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
				return promhttp.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
					// The transport asks for gzip itself (below this
					// wrapper) unless compression is disabled, and marks
					// an answer it inflated as Uncompressed.
					resp, err := rt.RoundTrip(r)
					if err == nil && strings.HasSuffix(r.URL.Path, "/pods") {
						kind := "list"
						if r.URL.Query().Get("watch") == "true" {
							kind = "watch"
						}
						mu.Lock()
						gzipped[kind] = resp.Uncompressed
						mu.Unlock()
					}
					return resp, err
				})
			}
			clients, err := watch.NewClients(rc, "compression-test", watch.ReadBatching{})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = clients.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
			require.NoError(t, err)
			w, err := clients.Kube.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{
				SendInitialEvents: new(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true,
			})
			require.NoError(t, err)
			w.Stop()
			mu.Lock()
			defer mu.Unlock()
			require.Contains(t, gzipped, "list")
			require.Contains(t, gzipped, "watch")
			require.Equal(t, tc.compression, gzipped["watch"], "the watch-list stream is gzipped exactly when compression is on")
			if !tc.compression {
				require.False(t, gzipped["list"])
			}
		})
	}
}
