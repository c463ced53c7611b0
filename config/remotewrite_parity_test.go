package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The effective configuration (check-config) shows remote write's HTTP/2
// default, false as in Prometheus, keeps an explicit enable_http2: true and
// the accepted no-op keys, and loads back the same.
func TestEffectiveRemoteWriteParity(t *testing.T) {
	cfg, err := Load([]byte(`
remote_write:
  - url: https://a.example/api/v1/write
  - url: https://b.example/api/v1/write
    enable_http2: true
    send_exemplars: true
    send_native_histograms: true
    convert_nhcb_to_classic: true
`), "parity.yaml")
	require.NoError(t, err)
	require.False(t, cfg.RemoteWrite[0].HTTPClientConfig.EnableHTTP2)
	require.True(t, cfg.RemoteWrite[1].HTTPClientConfig.EnableHTTP2)
	out, err := cfg.Effective()
	require.NoError(t, err)
	s := string(out)
	require.Contains(t, s, "enable_http2: false")
	require.Contains(t, s, "enable_http2: true")
	require.Contains(t, s, "send_exemplars: true")
	require.Contains(t, s, "send_native_histograms: true")
	require.Contains(t, s, "convert_nhcb_to_classic: true")

	back, err := Load(out, "effective.yaml")
	require.NoError(t, err)
	require.Equal(t, cfg.RemoteWrite, back.RemoteWrite)
}
