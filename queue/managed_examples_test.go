package queue

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// managedExamples are the results Prometheus' own tests expect of its
// managed-receiver test configurations (testdata/managed/README.md): ""
// loads, otherwise the error (azuread_test.go's exactly, sigv4's
// sigv4_config_test.go checks a prefix), here under the block's key.
var managedExamples = map[string]string{
	"azuread/azuread_bad_configmissing.yaml":                    "must provide an Azure Managed Identity, Azure Workload Identity, Azure OAuth, Azure Certificate or Azure SDK in the Azure AD config",
	"azuread/azuread_bad_invalidclientid.yaml":                  "the provided Azure Managed Identity client_id is invalid",
	"azuread/azuread_bad_invalidoauthconfig.yaml":               "must provide an Azure OAuth tenant_id in the Azure AD config",
	"azuread/azuread_bad_twoconfig.yaml":                        "cannot provide multiple authentication methods in the Azure AD config",
	"azuread/azuread_bad_oauthsdkconfig.yaml":                   "cannot provide multiple authentication methods in the Azure AD config",
	"azuread/azuread_bad_workloadidentity_invalidclientid.yaml": "the provided Azure Workload Identity client_id is invalid",
	"azuread/azuread_bad_workloadidentity_invalidtenantid.yaml": "the provided Azure Workload Identity tenant_id is invalid",
	"azuread/azuread_bad_workloadidentity_missingclientid.yaml": "must provide an Azure Workload Identity client_id in the Azure AD config",
	"azuread/azuread_bad_workloadidentity_missingtenantid.yaml": "must provide an Azure Workload Identity tenant_id in the Azure AD config",
	"azuread/azuread_bad_scope_invalid.yaml":                    "the provided scope contains invalid characters",
	"azuread/azuread_bad_certificate_missingclientid.yaml":      "must provide an Azure Certificate client_id in the Azure AD config",
	"azuread/azuread_bad_certificate_missingtenantid.yaml":      "must provide an Azure Certificate tenant_id in the Azure AD config",
	"azuread/azuread_bad_certificate_missingpath.yaml":          "must provide an Azure Certificate certificate_path in the Azure AD config",
	"azuread/azuread_bad_certificate_invalidclientid.yaml":      "the provided Azure Certificate client_id is invalid",
	"azuread/azuread_bad_certificate_oauth.yaml":                "cannot provide multiple authentication methods in the Azure AD config",
	"azuread/azuread_good_cloudmissing.yaml":                    "",
	"azuread/azuread_good_specificmanagedidentity.yaml":         "",
	"azuread/azuread_good_defaultmanagedidentity.yaml":          "",
	"azuread/azuread_good_oauth.yaml":                           "",
	"azuread/azuread_good_sdk.yaml":                             "",
	"azuread/azuread_good_workloadidentity.yaml":                "",
	"azuread/azuread_good_oauth_customscope.yaml":               "",
	"azuread/azuread_good_certificate.yaml":                     "",
	"azuread/azuread_good_certificate_with_key.yaml":            "",
	"azuread/azuread_good_certificate_pfx.yaml":                 "",
	"sigv4/sigv4_bad.yaml":                                      "must provide a AWS SigV4 Access key and Secret Key",
	"sigv4/sigv4_bad_external_id.yaml":                          "external_id can only be used with role_arn",
	"sigv4/sigv4_bad_session_too_short.yaml":                    "session_name must match",
	"sigv4/sigv4_bad_session_pattern.yaml":                      "session_name must match",
	"sigv4/sigv4_bad_session_no_role.yaml":                      "session_name can only be used with role_arn",
	"sigv4/sigv4_bad_tags_no_role.yaml":                         "tags can only be used with role_arn",
	"sigv4/sigv4_good.yaml":                                     "",
	"sigv4/sigv4_good_empty_keys.yaml":                          "",
	"sigv4/sigv4_good_session.yaml":                             "",
}

// Prometheus' own azuread and sigv4 test configurations, each the block
// of a remote_write entry, load or fail as Prometheus' tests say, the
// error under the block's key.
func TestManagedPrometheusExamples(t *testing.T) {
	files, err := filepath.Glob("testdata/managed/*/*.yaml")
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimPrefix(filepath.ToSlash(f), "testdata/managed/"))
	}
	require.ElementsMatch(t, keysOfMap(managedExamples), names, "every example has its expectation")

	t.Setenv("AZURE_FEDERATED_TOKEN_FILE", "")
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "managed", name))
			require.NoError(t, err)
			key := filepath.Dir(name)
			entry := "url: https://receiver.example/api/v1/write\n" + key + ":\n  " +
				strings.ReplaceAll(strings.TrimRight(string(body), "\n"), "\n", "\n  ") + "\n"
			_, err = decodeEntry(t, entry)
			want := managedExamples[name]
			if want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), key+": "+want), "%v, want %s: %s", err, key, want)
		})
	}
}

// keysOfMap returns the keys of m.
func keysOfMap[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
