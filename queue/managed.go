package queue

import (
	"fmt"
	"net/http"

	"github.com/prometheus/prometheus/storage/remote/azuread"
	"github.com/prometheus/sigv4"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// The managed receivers' keys (sigv4, azuread, google_iam) are Prometheus'
// own: the types below are Prometheus' (github.com/prometheus/sigv4 and
// Prometheus' storage/remote/azuread package, as its
// config.RemoteWriteConfig uses them; google_iam's has the keys of its
// googleiam.Config), redeclared only so that YAML decodes
// them plainly. Prometheus' types validate inside UnmarshalYAML, whose error
// yaml.v3 can only report without a line or key; Config.Validate calls the
// same Validate methods instead and names the key. The round trippers are
// Prometheus' too (but google_iam's: googleiam.go), wrapped around the HTTP
// client in the order Prometheus' storage/remote/client.go NewWriteClient
// uses.

// SigV4Config signs every request with AWS Signature Version 4
// (github.com/prometheus/sigv4.SigV4Config), as Amazon Managed Service for
// Prometheus requires. Empty keys come from the AWS SDK's default chain
// (environment, shared config and credentials files, web identity, ECS and
// EC2 instance roles); `sigv4: {}` uses it whole.
type SigV4Config sigv4.SigV4Config

// AzureADConfig gets an Azure AD (Microsoft Entra) access token for every
// request (Prometheus' azuread.AzureADConfig), as Azure Monitor's managed
// Prometheus requires: exactly one of managed_identity, workload_identity,
// oauth, sdk or certificate; cloud defaults to AzurePublic.
type AzureADConfig azuread.AzureADConfig

// GoogleIAMConfig gets a Google OAuth 2.0 access token for every request
// (the keys of Prometheus' googleiam.Config), as Google Cloud Managed
// Service for Prometheus requires: from the service account key in
// credentials_file, or from Google's application default credentials when
// it is empty (googleiam.go).
type GoogleIAMConfig struct {
	// CredentialsFile is a service account key file.
	CredentialsFile string `yaml:"credentials_file,omitempty"`
}

// validateAuth checks the managed receivers' keys and that at most one way
// of authenticating is configured, with Prometheus' messages
// (config.validateAuthConfigs and each type's Validate). It fills in
// azuread's defaults (cloud, workload_identity.token_file_path) as
// Prometheus' Validate does. prometheus/common's HTTPClientConfig.Validate
// already refuses two of basic_auth, authorization and oauth2; this adds
// the managed ones.
func (c *Config) validateAuth() []error {
	var errs []error
	if c.SigV4Config != nil {
		if err := (*sigv4.SigV4Config)(c.SigV4Config).Validate(); err != nil {
			errs = append(errs, &confkey.Error{Key: "sigv4", Err: err})
		}
	}
	if c.AzureADConfig != nil {
		if err := (*azuread.AzureADConfig)(c.AzureADConfig).Validate(); err != nil {
			errs = append(errs, &confkey.Error{Key: "azuread", Err: err})
		}
	}
	var configured []string
	h := &c.HTTPClientConfig
	for _, a := range []struct {
		key string
		on  bool
	}{
		{"basic_auth", h.BasicAuth != nil},
		{"authorization", h.Authorization != nil},
		{"oauth2", h.OAuth2 != nil},
		{"sigv4", c.SigV4Config != nil},
		{"azuread", c.AzureADConfig != nil},
		{"google_iam", c.GoogleIAMConfig != nil},
	} {
		if a.on {
			configured = append(configured, a.key)
		}
	}
	// Two of the first three are prometheus/common's error already.
	if n := len(configured); n > 1 && managedKey(configured[n-1]) {
		errs = append(errs, confkey.Errorf(configured[n-1],
			"at most one of basic_auth, authorization, oauth2, sigv4, azuread or google_iam must be configured. Currently configured: %v", configured))
	}
	return errs
}

// managedKey reports whether key is one of the managed receivers' keys.
func managedKey(key string) bool {
	return key == "sigv4" || key == "azuread" || key == "google_iam"
}

// managedRoundTripper wraps next in the round trippers of the managed
// receivers configured, as Prometheus' NewWriteClient does: sigv4 signs
// the request as it will be sent, azuread and google_iam set its
// Authorization header. Each may read credentials (files, environment,
// instance metadata) when built.
func managedRoundTripper(cfg *Config, next http.RoundTripper) (http.RoundTripper, error) {
	var err error
	if cfg.SigV4Config != nil {
		if next, err = sigv4.NewSigV4RoundTripper((*sigv4.SigV4Config)(cfg.SigV4Config), next); err != nil {
			return nil, fmt.Errorf("sigv4: %w", err)
		}
	}
	if cfg.AzureADConfig != nil {
		if next, err = azuread.NewAzureADRoundTripper((*azuread.AzureADConfig)(cfg.AzureADConfig), next); err != nil {
			return nil, fmt.Errorf("azuread: %w", err)
		}
	}
	if cfg.GoogleIAMConfig != nil {
		if next, err = newGoogleIAMRoundTripper(cfg.GoogleIAMConfig, next); err != nil {
			return nil, fmt.Errorf("google_iam: %w", err)
		}
	}
	return next, nil
}
