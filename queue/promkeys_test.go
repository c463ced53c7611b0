package queue

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// decodeEntry decodes one remote_write entry as the agent's loader does:
// unknown keys are an error.
func decodeEntry(t *testing.T, text string) (Config, error) {
	t.Helper()
	var c Config
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// send_exemplars, send_native_histograms and convert_nhcb_to_classic load,
// with Prometheus' defaults (false), and change nothing that is sent.
func TestNoOpKeys(t *testing.T) {
	c, err := decodeEntry(t, "url: http://r:9090/api/v1/write\n")
	require.NoError(t, err)
	require.False(t, c.SendExemplars)
	require.False(t, c.SendNativeHistograms)
	require.False(t, c.ConvertNHCBToClassic)

	c, err = decodeEntry(t, `
url: http://r:9090/api/v1/write
send_exemplars: true
send_native_histograms: true
convert_nhcb_to_classic: true
`)
	require.NoError(t, err)
	require.True(t, c.SendExemplars)
	require.True(t, c.SendNativeHistograms)
	require.True(t, c.ConvertNHCBToClassic)

	_, err = decodeEntry(t, "url: http://r:9090/api/v1/write\nsend_exemplars: maybe\n")
	require.ErrorContains(t, err, "bool", "booleans, as in Prometheus")

	// The same samples reach the receiver with the keys on or off.
	var got [][]gotSample
	for _, on := range []bool{false, true} {
		srv := newTestServer(t, answers(status(http.StatusNoContent)))
		e, _ := newTestEndpoint(t, srv.URL, func(c *Config) {
			c.SendExemplars, c.SendNativeHistograms, c.ConvertNHCBToClassic = on, on, on
		})
		require.Equal(t, 2, e.appendItems(t.Context(), items(2, 1000)))
		require.NoError(t, stop(t, e, 10*time.Second))
		reqs := srv.requests(t)
		require.Len(t, reqs, 1)
		require.NoError(t, reqs[0].err)
		got = append(got, reqs[0].samples)
	}
	require.Equal(t, got[0], got[1])
}

// Remote write's HTTP client defaults to HTTP/1.1, as Prometheus' does
// (config.DefaultRemoteWriteHTTPClientConfig); enable_http2: true is kept
// and speaks HTTP/2 to a TLS receiver that offers it.
func TestHTTP2Default(t *testing.T) {
	c, err := decodeEntry(t, "url: https://r/api/v1/write\n")
	require.NoError(t, err)
	require.False(t, c.HTTPClientConfig.EnableHTTP2)
	require.True(t, c.HTTPClientConfig.FollowRedirects)
	require.False(t, DefaultConfig.HTTPClientConfig.EnableHTTP2)

	c2, err := decodeEntry(t, "url: https://r/api/v1/write\nenable_http2: true\n")
	require.NoError(t, err)
	require.True(t, c2.HTTPClientConfig.EnableHTTP2)

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		cfg   Config
		proto string
	}{{c, "HTTP/1.1"}, {c2, "HTTP/2.0"}} {
		tc.cfg.HTTPClientConfig.TLSConfig.InsecureSkipVerify = true
		hc, err := newHTTPClient(&tc.cfg, net.DefaultResolver)
		require.NoError(t, err)
		resp, err := hc.Get(srv.URL)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, tc.proto, string(body), "enable_http2: %v", tc.cfg.HTTPClientConfig.EnableHTTP2)
		hc.CloseIdleConnections()
	}
}
