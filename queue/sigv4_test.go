package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/require"
)

// The test's AWS credentials.
const (
	testAccessKey = "AKIDKUBESTATEPUSH"
	testSecretKey = "kube-state-push-secret-key"
)

// sigv4Verifier checks a request's AWS Signature Version 4 as an AWS
// service does: it recomputes the signature from the request and the
// credentials it knows, with aws-sdk-go-v2's own signer, and compares it
// with the Authorization header; it also checks the credential scope
// (access key, date, region, service), X-Amz-Date's age, the payload hash
// when the request carries one, and the session token.
type sigv4Verifier struct {
	creds           aws.Credentials
	region, service string
}

// errSignatureMismatch is AWS' own wording for a wrong signature.
//
//nolint:revive,staticcheck // AWS' exact text, capital and full stop included.
var errSignatureMismatch = errors.New("The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.")

func (v sigv4Verifier) verify(r *http.Request, body []byte) error {
	const alg = "AWS4-HMAC-SHA256 "
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, alg) {
		return fmt.Errorf("missing SigV4 Authorization header, got %q", auth)
	}
	fields := map[string]string{}
	for _, f := range strings.Split(strings.TrimPrefix(auth, alg), ", ") {
		k, val, _ := strings.Cut(f, "=")
		fields[k] = val
	}
	date := r.Header.Get("X-Amz-Date")
	at, err := time.Parse("20060102T150405Z", date)
	if err != nil {
		return fmt.Errorf("X-Amz-Date %q: %w", date, err)
	}
	if d := time.Since(at); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("signature expired: %s is more than 5 minutes away", date)
	}
	scope := fmt.Sprintf("%s/%s/%s/%s/aws4_request", v.creds.AccessKeyID, at.Format("20060102"), v.region, v.service)
	if fields["Credential"] != scope {
		return fmt.Errorf("credential %q, want %q", fields["Credential"], scope)
	}
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != payload {
		return fmt.Errorf("x-amz-content-sha256 %s does not match the body's %s", h, payload)
	}
	if got := r.Header.Get("X-Amz-Security-Token"); got != v.creds.SessionToken {
		return fmt.Errorf("security token %q, want %q", got, v.creds.SessionToken)
	}
	// The request as the client signed it: its signed headers only (the
	// signer adds host, content-length and x-amz-date itself).
	signed, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	if err != nil {
		return err
	}
	signed.Host = r.Host
	signed.ContentLength = r.ContentLength
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		switch h {
		case "host", "content-length", "x-amz-date", "x-amz-security-token":
			continue
		}
		signed.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
	}
	if err := v4.NewSigner().SignHTTP(r.Context(), v.creds, signed, payload, v.service, v.region, at); err != nil {
		return fmt.Errorf("signing: %w", err)
	}
	if signed.Header.Get("Authorization") != auth {
		return errSignatureMismatch
	}
	return nil
}

// isolateAWS leaves the AWS SDK nothing from the machine: no credentials
// or region in the environment, empty shared config and credentials
// files, and no EC2 instance metadata (never asked for here).
func isolateAWS(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ENDPOINT_URL",
		"AWS_ENDPOINT_URL_STS", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
	} {
		t.Setenv(k, "") // restored after the test
		require.NoError(t, os.Unsetenv(k))
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// sendTwo sends two samples through an endpoint of cfg's sigv4 to srv and
// stops it.
func sendTwo(t *testing.T, url string, change func(*Config)) *Metrics {
	t.Helper()
	e, m := newTestEndpoint(t, url, change)
	require.Equal(t, 2, e.appendItems(t.Context(), items(2, 1000)))
	require.NoError(t, stop(t, e, 10*time.Second))
	return m
}

// Every request is signed as AWS checks it, a retried one again (the body
// replayed): the server recomputes each signature from the request and
// the test's credentials.
func TestSigV4Signs(t *testing.T) {
	isolateAWS(t)
	v := sigv4Verifier{creds: aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey}, region: "us-east-1", service: "aps"}
	srv := newAuthServer(t, v.verify)
	srv.before = func(i int, w http.ResponseWriter) bool {
		if i == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	m := sendTwo(t, srv.URL+"/workspaces/ws-1/api/v1/remote_write", func(c *Config) {
		c.SigV4Config = &SigV4Config{Region: "us-east-1", AccessKey: testAccessKey, SecretKey: testSecretKey}
	})
	reqs := srv.requests(t)
	require.Len(t, reqs, 2)
	for _, r := range reqs[1:] {
		require.NoError(t, r.checkErr)
		require.Equal(t, wantSamples(items(2, 1000)), r.samples)
		require.Equal(t, "1", r.header.Get(retryAttempt), "the retry is signed with its Retry-Attempt header")
		require.Contains(t, r.header.Get("Authorization"), "SignedHeaders=content-encoding;content-length;content-type;host;retry-attempt;x-amz-date;x-prometheus-remote-write-version;x-scope-orgid,",
			"the protocol and configured headers are signed")
	}
	require.Equal(t, 2.0, counter(t, m.samplesSent))
}

// A wrong secret is refused with 403, which is final: the batch is dropped
// and counted, not retried.
func TestSigV4WrongSecret(t *testing.T) {
	isolateAWS(t)
	v := sigv4Verifier{creds: aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey}, region: "us-east-1", service: "aps"}
	srv := newAuthServer(t, v.verify)
	m := sendTwo(t, srv.URL+"/api/v1/remote_write", func(c *Config) {
		c.SigV4Config = &SigV4Config{Region: "us-east-1", AccessKey: testAccessKey, SecretKey: "not-the-secret"}
	})
	reqs := srv.requests(t)
	require.Len(t, reqs, 1, "a 403 is not retried")
	require.ErrorIs(t, reqs[0].checkErr, errSignatureMismatch)
	require.Equal(t, 2.0, counter(t, m.samplesDropped, ReasonClientError))
	require.Equal(t, 1.0, counter(t, m.requests, "403"))
	require.Zero(t, counter(t, m.samplesSent))
	require.Zero(t, counter(t, m.samplesRetried))
}

// Keys left out come from the AWS SDK's default chain, as in Prometheus:
// the region from the environment or the profile, the credentials from a
// profile of the shared files, the service "aps"; role_arn assumes the
// role through STS and signs with its temporary credentials.
func TestSigV4Defaults(t *testing.T) {
	staticCreds := aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey}

	t.Run("region from the environment", func(t *testing.T) {
		isolateAWS(t)
		t.Setenv("AWS_REGION", "ap-south-1")
		srv := newAuthServer(t, sigv4Verifier{creds: staticCreds, region: "ap-south-1", service: "aps"}.verify)
		m := sendTwo(t, srv.URL, func(c *Config) {
			c.SigV4Config = &SigV4Config{AccessKey: testAccessKey, SecretKey: testSecretKey}
		})
		require.Equal(t, 2.0, counter(t, m.samplesSent))
	})

	t.Run("profile", func(t *testing.T) {
		isolateAWS(t)
		require.NoError(t, os.WriteFile(os.Getenv("AWS_CONFIG_FILE"), []byte("[profile kube]\nregion = eu-west-3\n"), 0o600))
		require.NoError(t, os.WriteFile(os.Getenv("AWS_SHARED_CREDENTIALS_FILE"),
			[]byte("[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret\n"+
				"[kube]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\n"), 0o600))
		profileCreds := aws.Credentials{AccessKeyID: "AKIDPROFILE", SecretAccessKey: "profile-secret"}
		srv := newAuthServer(t, sigv4Verifier{creds: profileCreds, region: "eu-west-3", service: "aps"}.verify)
		m := sendTwo(t, srv.URL, func(c *Config) { c.SigV4Config = &SigV4Config{Profile: "kube"} })
		require.Equal(t, 2.0, counter(t, m.samplesSent))

		// sigv4: {} takes the default profile; its region must come from
		// somewhere.
		t.Setenv("AWS_DEFAULT_REGION", "us-west-2")
		defaultCreds := aws.Credentials{AccessKeyID: "AKIDDEFAULT", SecretAccessKey: "default-secret"}
		srv = newAuthServer(t, sigv4Verifier{creds: defaultCreds, region: "us-west-2", service: "aps"}.verify)
		m = sendTwo(t, srv.URL, func(c *Config) { c.SigV4Config = &SigV4Config{} })
		require.Equal(t, 2.0, counter(t, m.samplesSent))
	})

	t.Run("service_name", func(t *testing.T) {
		isolateAWS(t)
		srv := newAuthServer(t, sigv4Verifier{creds: staticCreds, region: "us-east-1", service: "execute-api"}.verify)
		m := sendTwo(t, srv.URL, func(c *Config) {
			c.SigV4Config = &SigV4Config{Region: "us-east-1", AccessKey: testAccessKey, SecretKey: testSecretKey, ServiceName: "execute-api"}
		})
		require.Equal(t, 2.0, counter(t, m.samplesSent))
	})

	t.Run("no region", func(t *testing.T) {
		isolateAWS(t)
		_, _, err := buildTestEndpoint(t, "http://127.0.0.1:1/", func(c *Config) {
			c.SigV4Config = &SigV4Config{AccessKey: testAccessKey, SecretKey: testSecretKey}
		}, nil)
		require.ErrorContains(t, err, "region not configured in sigv4 or in default credentials chain")
	})

	t.Run("role_arn", func(t *testing.T) {
		isolateAWS(t)
		sts, assumed := newFakeSTS(t, staticCreds)
		t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)
		roleCreds := aws.Credentials{AccessKeyID: "ASIAROLE", SecretAccessKey: "role-secret", SessionToken: "role-session-token"}
		srv := newAuthServer(t, sigv4Verifier{creds: roleCreds, region: "eu-central-1", service: "aps"}.verify)
		m := sendTwo(t, srv.URL, func(c *Config) {
			c.SigV4Config = &SigV4Config{
				Region: "eu-central-1", AccessKey: testAccessKey, SecretKey: testSecretKey,
				RoleARN: "arn:aws:iam::123456789012:role/prometheus", ExternalID: "ext-1", SessionName: "kube-state-push",
			}
		})
		require.Equal(t, 2.0, counter(t, m.samplesSent))
		require.Equal(t, int64(1), assumed.Load(), "the role is assumed once, its credentials cached")
	})
}

// newFakeSTS serves AWS STS AssumeRole: it checks the request's signature
// with base (the caller's own credentials) and its parameters, and answers
// with the temporary credentials of ASIAROLE; assumed counts the calls.
func newFakeSTS(t *testing.T, base aws.Credentials) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var assumed atomic.Int64
	v := sigv4Verifier{creds: base, region: "eu-central-1", service: "sts"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = v.verify(r, body)
		}
		var form url.Values
		if err == nil {
			form, err = url.ParseQuery(string(body))
		}
		if err == nil && (form.Get("Action") != "AssumeRole" || form.Get("RoleArn") != "arn:aws:iam::123456789012:role/prometheus" ||
			form.Get("ExternalId") != "ext-1" || form.Get("RoleSessionName") != "kube-state-push") {
			err = fmt.Errorf("unexpected STS request %v", form)
		}
		if err != nil {
			t.Errorf("STS: %v", err)
			w.WriteHeader(http.StatusForbidden)
			return
		}
		assumed.Add(1)
		w.Header().Set("Content-Type", "text/xml")
		_, _ = fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/prometheus/kube-state-push</Arn><AssumedRoleId>AROA:kube-state-push</AssumedRoleId></AssumedRoleUser>
    <Credentials><AccessKeyId>ASIAROLE</AccessKeyId><SecretAccessKey>role-secret</SecretAccessKey><SessionToken>role-session-token</SessionToken><Expiration>%s</Expiration></Credentials>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>00000000-0000-0000-0000-000000000000</RequestId></ResponseMetadata>
</AssumeRoleResponse>`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	t.Cleanup(srv.Close)
	return srv, &assumed
}

// The verifier itself refuses what AWS refuses.
func TestSigV4VerifierRefuses(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey}
	v := sigv4Verifier{creds: creds, region: "us-east-1", service: "aps"}
	sign := func(change func(*http.Request)) (*http.Request, []byte) {
		body := []byte("body")
		r := httptest.NewRequest(http.MethodPost, "http://aps.example/api/v1/remote_write", strings.NewReader(string(body)))
		r.Header.Set("Content-Type", "application/x-protobuf")
		sum := sha256.Sum256(body)
		require.NoError(t, v4.NewSigner().SignHTTP(context.Background(), creds, r, hex.EncodeToString(sum[:]), "aps", "us-east-1", time.Now()))
		if change != nil {
			change(r)
		}
		return r, body
	}
	r, body := sign(nil)
	require.NoError(t, v.verify(r, body))
	r, _ = sign(nil)
	require.ErrorIs(t, v.verify(r, []byte("other body")), errSignatureMismatch)
	r, body = sign(func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") })
	require.ErrorIs(t, v.verify(r, body), errSignatureMismatch, "a signed header changed")
	r, body = sign(func(r *http.Request) { r.Header.Del("Authorization") })
	require.ErrorContains(t, v.verify(r, body), "missing SigV4 Authorization header")
	r, body = sign(func(r *http.Request) {
		r.Header.Set("X-Amz-Date", time.Now().Add(-time.Hour).UTC().Format("20060102T150405Z"))
	})
	require.ErrorContains(t, v.verify(r, body), "signature expired")
	other := v
	other.region = "eu-west-1"
	r, body = sign(nil)
	require.ErrorContains(t, other.verify(r, body), "credential")
}
