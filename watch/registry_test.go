package watch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// kubeStateMetricsFamilies is the number of families of each resource in
// kube-state-metrics v2.20.0 (internal/store/*.go).
var kubeStateMetricsFamilies = map[string]int{
	"certificatesigningrequests":        5,
	"clusterrolebindings":               5,
	"clusterroles":                      5,
	"configmaps":                        5,
	"cronjobs":                          14,
	"daemonsets":                        13,
	"deployments":                       18,
	"endpoints":                         6,
	"endpointslices":                    7,
	"horizontalpodautoscalers":          15,
	"ingressclasses":                    4,
	"ingresses":                         7,
	"jobs":                              17,
	"leases":                            2,
	"limitranges":                       2,
	"mutatingadmissionpolicies":         2,
	"mutatingadmissionpolicybindings":   2,
	"mutatingwebhookconfigurations":     4,
	"namespaces":                        5,
	"networkpolicies":                   5,
	"nodes":                             13,
	"persistentvolumeclaims":            9,
	"persistentvolumes":                 11,
	"poddisruptionbudgets":              9,
	"pods":                              60,
	"replicasets":                       11,
	"replicationcontrollers":            9,
	"resourcequotas":                    4,
	"rolebindings":                      5,
	"roles":                             5,
	"secrets":                           7,
	"serviceaccounts":                   7,
	"services":                          8,
	"statefulsets":                      16,
	"storageclasses":                    4,
	"validatingadmissionpolicies":       2,
	"validatingadmissionpolicybindings": 3,
	"validatingwebhookconfigurations":   4,
	"volumeattachments":                 6,
}

// Every resource of kube-state-metrics v2.20.0 is implemented with the same
// number of families, and no family name appears twice.
func TestFamilyCounts(t *testing.T) {
	require.Len(t, kubeStateMetricsFamilies, 39)
	seen := map[string]string{}
	for name, want := range kubeStateMetricsFamilies {
		t.Run(name, func(t *testing.T) {
			r, ok := Lookup(name)
			require.True(t, ok, "resource %s is not implemented", name)
			fs := r.Families(FamilyOptions{})
			for _, f := range fs {
				require.Empty(t, seen[f.Name], "family %s is also in %s", f.Name, seen[f.Name])
				seen[f.Name] = name
				require.NotEmpty(t, f.Help, f.Name)
			}
			require.Equal(t, want, len(fs))
		})
	}
}

func TestDefaultResourcesExist(t *testing.T) {
	require.Len(t, DefaultResources, 32)
	_, ok := Lookup("pod")
	require.False(t, ok)
}
