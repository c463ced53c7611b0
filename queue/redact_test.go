package queue

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/config"
	"github.com/stretchr/testify/require"
)

// net/http's errors quote the request's URL, its query included, and an
// OAuth 2.0 token request's error quotes the token URL: the drop and
// failed-request log lines show neither the password nor a query value.
func TestLogsMaskURLCredentials(t *testing.T) {
	const pw, token = "pw-url-0d3f6a", "query-token-51c8e2"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // every connection is refused

	for name, change := range map[string]func(*Config){
		"url": func(*Config) {},
		"oauth2 token_url": func(c *Config) {
			c.HTTPClientConfig.OAuth2 = &config.OAuth2{
				ClientID: "id", ClientSecret: "s",
				TokenURL:       "http://tok:" + pw + "@" + addr + "/token?key=" + token,
				EndpointParams: map[string]string{"audience": token},
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			var logs syncBuffer
			cfg := DefaultConfig
			cfg.URL = "http://agent:" + pw + "@" + addr + "/api/v1/write?api_key=" + token
			cfg.Name = testEndpoint
			cfg.ProtobufMessage = ProtoV2
			cfg.FailedRequestLogging = true
			cfg.QueueConfig.MinBackoff = time.Millisecond
			cfg.QueueConfig.MaxBackoff = 5 * time.Millisecond
			cfg.QueueConfig.BatchSendDeadline = time.Millisecond
			cfg.QueueConfig.MaxRetryDuration = 50 * time.Millisecond
			change(&cfg)
			require.NoError(t, cfg.Validate())
			m := NewMetrics(prometheus.NewRegistry())
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			e, err := New(cfg, Options{Logger: log, Metrics: m, UserAgent: testUserAgent})
			require.NoError(t, err)
			e.startShards()
			require.Equal(t, 3, e.appendItems(t.Context(), items(3, 1)))
			require.Eventually(t, func() bool { return counter(t, m.samplesDropped, ReasonRetriesDone) >= 3 }, 10*time.Second, time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			require.NoError(t, e.Stop(ctx))

			out := logs.String()
			require.Contains(t, out, "dropping batch")
			require.Contains(t, out, "failed to send remote write 2.0 request")
			require.Contains(t, out, "xxxxx", "the URL is quoted, masked")
			require.NotContains(t, out, pw)
			require.NotContains(t, out, token)
		})
	}
}
