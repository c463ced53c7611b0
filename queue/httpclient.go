package queue

import (
	"fmt"
	"net/http"

	"github.com/prometheus/common/config"
)

// newHTTPClient builds the endpoint's HTTP client from its http_config keys,
// with prometheus/common, as Prometheus' remote-write client is built
// (storage/remote/client.go NewWriteClient): HTTP/2 only with
// enable_http2: true (DefaultHTTPClientConfig), and remote_timeout bounding
// each request. With round_robin_dns, connections are dialed through
// resolver (dial.go). sigv4, azuread and google_iam wrap its transport
// (managed.go).
func newHTTPClient(cfg *Config, resolver hostResolver) (*http.Client, error) {
	var opts []config.HTTPClientOption
	if cfg.RoundRobinDNS {
		opts = append(opts, config.WithDialContextFunc(newRoundRobinDialer(resolver).DialContext))
	}
	hc, err := config.NewClientFromConfig(cfg.HTTPClientConfig, "remote_write_"+cfg.Name, opts...)
	if err != nil {
		return nil, fmt.Errorf("building HTTP client for endpoint %q: %w", cfg.Name, err)
	}
	if hc.Transport, err = managedRoundTripper(cfg, hc.Transport); err != nil {
		return nil, fmt.Errorf("building HTTP client for endpoint %q: %w", cfg.Name, err)
	}
	hc.Timeout = cfg.RemoteTimeout
	return hc, nil
}
