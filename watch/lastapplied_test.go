package watch

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectl apply copies the whole object into
// kubectl.kubernetes.io/last-applied-configuration: a ConfigMap's data, a
// Deployment's environment. "*" and patterns never select it; only its
// exact name does.
func TestLastAppliedConfigurationOnlyByName(t *testing.T) {
	const data = "applied-data-token-3f9a"
	applied := `{"apiVersion":"v1","kind":"ConfigMap","data":{"token":"` + data + `"}}`
	meta := metav1.ObjectMeta{Namespace: "ns1", Name: "o1", UID: "uid-o1",
		Annotations: map[string]string{"note": "n", "kubectl.kubernetes.io/restartedAt": "r", v1.LastAppliedConfigAnnotation: applied}}
	for _, tc := range []struct {
		name, family string
		r            *Resource
		obj          any
		label        string
	}{
		{"configmap", "kube_configmap_annotations", configMapResource(), &metav1.PartialObjectMetadata{ObjectMeta: meta}, `configmap="o1"`},
		{"deployment", "kube_deployment_annotations", deploymentResource(), &appsv1.Deployment{ObjectMeta: meta}, `deployment="o1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, allow := range [][]string{{"*"}, {"kubectl.kubernetes.io/*"}, {"*applied*"}, {"note", "kubectl.*"}} {
				got := renderText(t, tc.r, FamilyOptions{AnnotationsAllowlist: allow}, tc.obj, tc.family)
				require.Contains(t, got, tc.label, "allowlist %v renders the family", allow)
				require.NotContains(t, got, data, "allowlist %v", allow)
				require.NotContains(t, got, "last_applied", "allowlist %v", allow)
			}
			requireGolden(t, tc.family+`{annotation_kubectl_kubernetes_io_restarted_at="r",annotation_note="n",`+tc.label+`,namespace="ns1"} 1`,
				renderText(t, tc.r, FamilyOptions{AnnotationsAllowlist: []string{"*"}}, tc.obj, tc.family))
			// Named exactly, it is exported, as the operator asked.
			got := renderText(t, tc.r, FamilyOptions{AnnotationsAllowlist: []string{v1.LastAppliedConfigAnnotation}}, tc.obj, tc.family)
			require.Contains(t, got, `annotation_kubectl_kubernetes_io_last_applied_configuration=`)
			require.Contains(t, got, data)
			require.Len(t, meta.Annotations, 3, "the object itself is left alone")
		})
	}
}
