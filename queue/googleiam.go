package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// Prometheus' googleiam builds its round tripper with Google's API client
// (google.golang.org/api/transport/http), which links gRPC, OpenTelemetry
// and S2A into the binary for a bearer token: about 4 MB of code and 180
// packages, most of them initialised at start-up. The same credentials, the
// same scope and the same token come from golang.org/x/oauth2/google alone.

// googleMonitoringWriteScope is the scope Prometheus' googleiam asks for.
const googleMonitoringWriteScope = "https://www.googleapis.com/auth/monitoring.write"

// newGoogleIAMRoundTripper wraps next in a round tripper that sends a Google
// access token with every request: from the service account key in
// cfg.CredentialsFile (only a service account key, as Prometheus accepts),
// else from the application default credentials. As Google's API client
// does, it names the quota project of the credentials (or of
// $GOOGLE_CLOUD_QUOTA_PROJECT) in X-Goog-User-Project.
func newGoogleIAMRoundTripper(cfg *GoogleIAMConfig, next http.RoundTripper) (http.RoundTripper, error) {
	ctx := context.Background()
	var creds *google.Credentials
	if cfg.CredentialsFile != "" {
		b, err := os.ReadFile(cfg.CredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("reading credentials_file: %w", err)
		}
		if creds, err = google.CredentialsFromJSONWithType(ctx, b, google.ServiceAccount, googleMonitoringWriteScope); err != nil {
			return nil, fmt.Errorf("credentials_file %s: %w", cfg.CredentialsFile, err)
		}
	} else {
		var err error
		if creds, err = google.FindDefaultCredentials(ctx, googleMonitoringWriteScope); err != nil {
			return nil, fmt.Errorf("error finding default Google credentials: %w", err)
		}
	}
	rt := &oauth2.Transport{Source: creds.TokenSource, Base: next}
	if p := quotaProject(creds.JSON); p != "" {
		return &quotaProjectRoundTripper{project: p, next: rt}, nil
	}
	return rt, nil
}

// quotaProject is $GOOGLE_CLOUD_QUOTA_PROJECT, else the quota_project_id
// of the credentials' JSON (empty for instance metadata credentials).
func quotaProject(credsJSON []byte) string {
	if p := os.Getenv("GOOGLE_CLOUD_QUOTA_PROJECT"); p != "" {
		return p
	}
	var f struct {
		QuotaProjectID string `json:"quota_project_id"`
	}
	if len(credsJSON) == 0 || json.Unmarshal(credsJSON, &f) != nil {
		return ""
	}
	return f.QuotaProjectID
}

// quotaProjectRoundTripper names the quota project a request is billed to.
type quotaProjectRoundTripper struct {
	project string
	next    http.RoundTripper
}

// RoundTrip implements http.RoundTripper; it leaves req unchanged.
func (q *quotaProjectRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("X-Goog-User-Project", q.project)
	return q.next.RoundTrip(r)
}
