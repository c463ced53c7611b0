package redact

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"https://mimir.example/api/v1/push", "https://mimir.example/api/v1/push"},
		{"https://agent:pw-5c1e@mimir.example/api/v1/push", "https://agent:xxxxx@mimir.example/api/v1/push"},
		{"https://token-only@mimir.example/", "https://token-only@mimir.example/"},
		{"https://vm.example/api/v1/write?api_key=tok-9e1c&extra_label=a%3Db", "https://vm.example/api/v1/write?api_key=xxxxx&extra_label=xxxxx"},
		{"https://vm.example/write?flag&k=", "https://vm.example/write?flag&k=xxxxx"},
		{"https://vm.example/write?a=1;b=%zz", "https://vm.example/write?a=xxxxx"},
		{"https://vm.example/write#tok-9e1c", "https://vm.example/write#xxxxx"},
		{"http://user:pw-5c1e@host:abc/", "<invalid URL>"},
	} {
		require.Equal(t, tc.want, URL(tc.in), tc.in)
	}
}

// A parse error says why, never what: each URL below holds its secret in
// the part that makes it fail.
func TestParseErrorQuotesNothing(t *testing.T) {
	for _, raw := range []string{
		"http://u:pw-5c1e@host:abc/",
		"http://user:pw-5c1e@host:pw-5c1e/",
		"http://host/%pw-5c1e",
		"http://pw 5c1e.example/",
		"http://[pw-5c1e/",
		"pw-5c1e:not-a-scheme/\x7f",
		":pw-5c1e",
	} {
		_, err := url.Parse(raw)
		require.Error(t, err, raw)
		msg := ParseError(err)
		require.NotEmpty(t, msg, raw)
		if strings.HasSuffix(raw, ":abc/") {
			require.Equal(t, "invalid port after host", msg)
		}
		require.NotContains(t, msg, "pw", raw)
		require.NotContains(t, msg, "5c1e", raw)
	}
}

// The http client's errors quote the URL with its query; Error masks every
// *url.Error of the chain, nested ones too.
func TestErrorMasksClientErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:9/write?api_key=tok-9e1c", nil)
	require.NoError(t, err)
	_, err = http.DefaultClient.Do(req)
	require.Error(t, err)
	require.Contains(t, err.Error(), "tok-9e1c", "the client quotes the query")
	inner := &url.Error{Op: "Post", URL: "https://a:pw-5c1e@auth.example/token?secret=tok-9e1c", Err: errors.New("refused")}
	wrapped := errors.Join(fmt.Errorf("sending batch: %w", err), fmt.Errorf("token: %w", inner))
	got := Error(wrapped).Error()
	require.NotContains(t, got, "tok-9e1c")
	require.NotContains(t, got, "pw-5c1e")
	require.Contains(t, got, "api_key=xxxxx")
	require.Contains(t, got, "https://a:xxxxx@auth.example/token?secret=xxxxx")
	require.ErrorIs(t, wrapped, context.Canceled, "the chain is kept")
	require.NoError(t, Error(nil))
}

func TestHeadersAndValues(t *testing.T) {
	h := map[string]string{"X-Scope-OrgID": "tenant", "X-Api-Key": "key-2f8b"}
	require.Equal(t, map[string]string{"X-Scope-OrgID": "tenant", "X-Api-Key": Secret}, Headers(h, []string{"x-scope-orgid"}))
	require.Equal(t, map[string]string{"X-Scope-OrgID": Secret, "X-Api-Key": Secret}, Headers(h, nil))
	require.Equal(t, "key-2f8b", h["X-Api-Key"], "the input is not changed")
	require.Equal(t, map[string]string{"audience": Secret}, Values(map[string]string{"audience": "a-9"}))
	require.Nil(t, Headers(nil, nil))
	require.Nil(t, Values(nil))
}

// A message frozen by fmt.Errorf before Error saw it is masked as text.
func TestErrorMasksFrozenText(t *testing.T) {
	inner := &url.Error{Op: "Post", URL: "https://auth.example/token?secret=tok-9e1c", Err: errors.New("refused")}
	err := fmt.Errorf("oauth2: %w", inner)
	got := Error(err)
	require.NotContains(t, got.Error(), "tok-9e1c")
	require.Equal(t, `oauth2: Post "https://auth.example/token?secret=xxxxx": refused`, got.Error())
	var ue *url.Error
	require.ErrorAs(t, got, &ue)
	require.Equal(t, "hello http://a/?b=xxxxx ftp://u:xxxxx@h/", Text("hello http://a/?b=c ftp://u:p@h/"))
}
