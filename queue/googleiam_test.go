package queue

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The service account of the test's credentials file.
const (
	testGoogleEmail = "kube-state-push@test-project.iam.gserviceaccount.com"
	testGoogleKeyID = "test-key-1"
	// googleMonitoringScope is the scope Prometheus' googleiam asks for.
	googleMonitoringScope = "https://www.googleapis.com/auth/monitoring.write"
	jwtBearerGrant        = "urn:ietf:params:oauth:grant-type:jwt-bearer"
)

// googleTokenServer is a local Google OAuth 2.0 token endpoint for service
// accounts (the JWT bearer grant of RFC 7523, as oauth2.googleapis.com
// serves it): it verifies the assertion's RS256 signature with the
// service account's public key and its claims, and issues token.
type googleTokenServer struct {
	*httptest.Server
	// key is the service account's public key.
	key *rsa.PublicKey
	// token is the access token issued.
	token string
	// issued counts tokens issued; refused counts requests refused.
	issued, refused atomic.Int64
}

func newGoogleTokenServer(t *testing.T, key *rsa.PublicKey, token string) *googleTokenServer {
	t.Helper()
	s := &googleTokenServer{key: key, token: token}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.verify(r); err != nil {
			s.refused.Add(1)
			t.Logf("token endpoint refused: %v", err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": err.Error()})
			return
		}
		s.issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": s.token, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(s.Close)
	return s
}

// verify checks a token request as Google does: a POST of the JWT bearer
// grant whose assertion is signed by the service account's key, issued by
// its email, for this endpoint, with the monitoring scope, valid now for
// at most an hour.
func (s *googleTokenServer) verify(r *http.Request) error {
	if r.Method != http.MethodPost || r.URL.Path != "/token" {
		return fmt.Errorf("%s %s", r.Method, r.URL.Path)
	}
	if err := r.ParseForm(); err != nil {
		return err
	}
	if g := r.PostForm.Get("grant_type"); g != jwtBearerGrant {
		return fmt.Errorf("grant_type %q", g)
	}
	return verifyJWT(r.PostForm.Get("assertion"), s.key, s.URL+"/token")
}

// verifyJWT checks a service account's JWT assertion: its RS256 signature
// with key, and its claims.
func verifyJWT(assertion string, key *rsa.PublicKey, audience string) error {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return fmt.Errorf("assertion of %d parts", len(parts))
	}
	var header struct{ Alg, Typ, Kid string }
	if err := decodeJWTPart(parts[0], &header); err != nil {
		return err
	}
	if header.Alg != "RS256" || header.Kid != testGoogleKeyID {
		return fmt.Errorf("header %+v", header)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("invalid JWT signature: %w", err)
	}
	var claims struct {
		Iss, Scope, Aud string
		Iat, Exp        int64
	}
	if err := decodeJWTPart(parts[1], &claims); err != nil {
		return err
	}
	now := time.Now().Unix()
	switch {
	case claims.Iss != testGoogleEmail:
		return fmt.Errorf("iss %q", claims.Iss)
	case claims.Scope != googleMonitoringScope:
		return fmt.Errorf("scope %q", claims.Scope)
	case claims.Aud != audience:
		return fmt.Errorf("aud %q, want %q", claims.Aud, audience)
	case claims.Iat > now+60 || claims.Exp < now || claims.Exp-claims.Iat > 3600:
		return fmt.Errorf("iat %d exp %d at %d", claims.Iat, claims.Exp, now)
	}
	return nil
}

func decodeJWTPart(part string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return fmt.Errorf("JWT part: %w", err)
	}
	return json.Unmarshal(b, v)
}

// writeServiceAccount writes a Google service account key file of key
// whose token_uri is tokenURI, as the Cloud console downloads it.
func writeServiceAccount(t *testing.T, key *rsa.PrivateKey, tokenURI string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	b, err := json.Marshal(map[string]string{
		"type":                        "service_account",
		"project_id":                  "test-project",
		"private_key_id":              testGoogleKeyID,
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                testGoogleEmail,
		"client_id":                   "100000000000000000001",
		"auth_uri":                    "https://accounts.google.com/o/oauth2/auth",
		"token_uri":                   tokenURI,
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
		"universe_domain":             "googleapis.com",
	})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "service-account.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// bearer returns an authServer check that wants Authorization: Bearer
// token.
func bearer(token string) func(*http.Request, []byte) error {
	return func(r *http.Request, _ []byte) error {
		if got := r.Header.Get("Authorization"); got != "Bearer "+token {
			return fmt.Errorf("Authorization %q", got)
		}
		return nil
	}
}

// google_iam exchanges the credentials file's service account key for an
// access token at its token_uri (the JWT bearer grant, the assertion's
// signature verified with the test's key) and sends it as a bearer token
// with every request; the token is fetched once and reused.
func TestGoogleIAM(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tokens := newGoogleTokenServer(t, &key.PublicKey, "ya29.test-access-token")
	creds := writeServiceAccount(t, key, tokens.URL+"/token")

	srv := newAuthServer(t, bearer("ya29.test-access-token"))
	e, m := newTestEndpoint(t, srv.URL+"/v1/projects/test-project/location/global/prometheus/api/v1/write", func(c *Config) {
		c.GoogleIAMConfig = &GoogleIAMConfig{CredentialsFile: creds}
		c.QueueConfig.MaxSamplesPerSend = 2
	})
	require.Equal(t, 4, e.appendItems(t.Context(), items(4, 1000)))
	require.NoError(t, stop(t, e, 10*time.Second))
	reqs := srv.requests(t)
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		require.NoError(t, r.checkErr)
	}
	require.Equal(t, 4.0, counter(t, m.samplesSent))
	require.Equal(t, int64(1), tokens.issued.Load(), "the token is cached")
	require.Zero(t, tokens.refused.Load())
}

// The token endpoint refuses an assertion signed by another key.
func TestGoogleTokenServerRefuses(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	sign := func(k *rsa.PrivateKey, aud string) string {
		enc := func(v any) string {
			b, err := json.Marshal(v)
			require.NoError(t, err)
			return base64.RawURLEncoding.EncodeToString(b)
		}
		now := time.Now().Unix()
		signing := enc(map[string]string{"alg": "RS256", "typ": "JWT", "kid": testGoogleKeyID}) + "." +
			enc(map[string]any{"iss": testGoogleEmail, "scope": googleMonitoringScope, "aud": aud, "iat": now, "exp": now + 3600})
		sum := sha256.Sum256([]byte(signing))
		sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
		require.NoError(t, err)
		return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
	}
	require.NoError(t, verifyJWT(sign(key, "http://t/token"), &key.PublicKey, "http://t/token"))
	err = verifyJWT(sign(other, "http://t/token"), &key.PublicKey, "http://t/token")
	require.True(t, errors.Is(err, rsa.ErrVerification), "%v", err)
	require.ErrorContains(t, verifyJWT(sign(key, "http://elsewhere/token"), &key.PublicKey, "http://t/token"), "aud")
}

// google_iam without credentials_file takes Google's application default
// credentials, as Prometheus does: here the key file that
// GOOGLE_APPLICATION_CREDENTIALS names, the first place they are looked
// for (before gcloud's file and the GCE metadata server, never reached).
func TestGoogleIAMDefaultCredentials(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tokens := newGoogleTokenServer(t, &key.PublicKey, "ya29.default-credentials-token")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", writeServiceAccount(t, key, tokens.URL+"/token"))

	srv := newAuthServer(t, bearer("ya29.default-credentials-token"))
	e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
		c.GoogleIAMConfig = &GoogleIAMConfig{}
		c.QueueConfig.MaxSamplesPerSend = 2
	})
	require.Equal(t, 2, e.appendItems(t.Context(), items(2, 1000)))
	require.NoError(t, stop(t, e, 10*time.Second))
	reqs := srv.requests(t)
	require.Len(t, reqs, 1)
	require.NoError(t, reqs[0].checkErr)
	require.Equal(t, 2.0, counter(t, m.samplesSent))
	require.Equal(t, int64(1), tokens.issued.Load())
}

// The quota project comes from $GOOGLE_CLOUD_QUOTA_PROJECT, else from the
// credentials, and is named in X-Goog-User-Project without changing the
// caller's request.
func TestGoogleIAMQuotaProject(t *testing.T) {
	require.Equal(t, "from-creds", quotaProject([]byte(`{"type":"authorized_user","quota_project_id":"from-creds"}`)))
	require.Empty(t, quotaProject(nil))
	require.Empty(t, quotaProject([]byte(`not json`)))
	t.Setenv("GOOGLE_CLOUD_QUOTA_PROJECT", "from-env")
	require.Equal(t, "from-env", quotaProject([]byte(`{"quota_project_id":"from-creds"}`)))

	var got string
	rt := &quotaProjectRoundTripper{project: "billing", next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.Header.Get("X-Goog-User-Project")
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
	})}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://receiver/write", http.NoBody)
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "billing", got)
	require.Empty(t, req.Header.Get("X-Goog-User-Project"))
}

// roundTripFunc is a function as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
