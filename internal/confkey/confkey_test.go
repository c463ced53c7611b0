package confkey

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSecret(t *testing.T) {
	for _, tc := range []struct {
		key, cut string
		secret   bool
	}{
		{"remote_write[0].url", "remote_write[0].url", false},
		{"remote_write[0].queue_config.max_shards", "remote_write[0].queue_config.max_shards", false},
		{"external_labels.cluster", "external_labels.cluster", false},
		{"remote_write[0].basic_auth", "remote_write[0].basic_auth", true},
		{"remote_write[0].basic_auth.password", "remote_write[0].basic_auth.password", true},
		{"remote_write[0].basic_auth.password[0]", "remote_write[0].basic_auth.password", true},
		{"remote_write[1].basic_auth.password.hunter2", "remote_write[1].basic_auth.password", true},
		{"remote_write[0].authorization.credentials.value", "remote_write[0].authorization.credentials", true},
		{"remote_write[0].oauth2.client_secret", "remote_write[0].oauth2.client_secret", true},
		{"remote_write[0].oauth2.endpoint_params.token.x", "remote_write[0].oauth2.endpoint_params.token", true},
		{"remote_write[0].bearer_token[0]", "remote_write[0].bearer_token", true},
		{"remote_write[0].http_headers.Authorization", "remote_write[0].http_headers.Authorization", true},
		{"remote_write[0].http_headers.Authorization.secrets[0].x", "remote_write[0].http_headers.Authorization.secrets", true},
		{"remote_write[0].headers", "remote_write[0].headers", true},
		{"remote_write[0].headers.X-Api-Key[0]", "remote_write[0].headers.X-Api-Key", true},
		{"remote_write[0].headers.X-Api-Key.hunter2", "remote_write[0].headers.X-Api-Key", true},
		{"remote_write[0].tls_config.key[0]", "remote_write[0].tls_config.key", true},
		{"remote_write[0].proxy_connect_header.Proxy-Authorization", "remote_write[0].proxy_connect_header.Proxy-Authorization", true},
	} {
		cut, secret := Secret(tc.key)
		require.Equal(t, tc.cut, cut, tc.key)
		require.Equal(t, tc.secret, secret, tc.key)
	}
}
