package watch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every resource knows the API group and resource it lists and watches, so
// that RBAC rules can be derived from the registry.
func TestGroupResource(t *testing.T) {
	known := map[string]string{
		"pods":                        "",
		"secrets":                     "",
		"configmaps":                  "",
		"endpoints":                   "",
		"deployments":                 "apps",
		"cronjobs":                    "batch",
		"horizontalpodautoscalers":    "autoscaling",
		"ingresses":                   "networking.k8s.io",
		"leases":                      "coordination.k8s.io",
		"certificatesigningrequests":  "certificates.k8s.io",
		"volumeattachments":           "storage.k8s.io",
		"validatingadmissionpolicies": "admissionregistration.k8s.io",
		"mutatingadmissionpolicies":   "admissionregistration.k8s.io",
		"clusterroles":                "rbac.authorization.k8s.io",
		"roles":                       "rbac.authorization.k8s.io",
		"poddisruptionbudgets":        "policy",
		"endpointslices":              "discovery.k8s.io",
	}
	seen := map[string]bool{}
	for _, r := range All() {
		t.Run(r.Name, func(t *testing.T) {
			gr := r.GroupResource()
			require.NotEmpty(t, gr.Resource)
			require.Equal(t, r.Name, gr.Resource)
			if g, ok := known[r.Name]; ok {
				require.Equal(t, g, gr.Group)
				seen[r.Name] = true
			}
		})
	}
	require.Len(t, seen, len(known), "every resource of the table is in All()")
}
