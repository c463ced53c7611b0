package watch

import (
	"context"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// serviceAccountResource describes service accounts: kube-state-metrics'
// internal/store/serviceaccount.go. Families read the secrets and the token
// automount setting, so service accounts are watched whole.
func serviceAccountResource() *Resource {
	return newResource("serviceaccounts", true, &v1.ServiceAccount{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CoreV1().ServiceAccounts(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CoreV1().ServiceAccounts(ns).Watch(ctx, o)
		},
		func(sa *v1.ServiceAccount, e *Emitter) {
			e.Identity("namespace", sa.Namespace, "serviceaccount", sa.Name, "uid", string(sa.UID))
		},
		serviceAccountFamilies,
	)
}

// serviceAccountFamilies lists the service account families, in
// kube-state-metrics' order. All are alpha, the _labels family included,
// and some HELP texts lack a final period.
func serviceAccountFamilies(o FamilyOptions) []Family[*v1.ServiceAccount] {
	type S = *v1.ServiceAccount
	return []Family[S]{
		{
			Name: "kube_serviceaccount_info", Help: "Information about a service account",
			Type: Gauge, Stability: Alpha, Generate: serviceAccountInfo,
		},
		{
			Name: "kube_serviceaccount_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitCreated[S],
		},
		{
			// Named _deleted, not _deletion_timestamp as elsewhere.
			Name: "kube_serviceaccount_deleted", Help: "Unix deletion timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitDeletionTimestamp[S],
		},
		{
			Name: "kube_serviceaccount_secret", Help: "Secret being referenced by a service account",
			Type: Gauge, Stability: Alpha, Generate: serviceAccountSecrets,
		},
		{
			Name: "kube_serviceaccount_image_pull_secret", Help: "Secret being referenced by a service account for the purpose of pulling images",
			Type: Gauge, Stability: Alpha, Generate: serviceAccountImagePullSecrets,
		},
		{
			Name: "kube_serviceaccount_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[S], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_serviceaccount_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("label", objectLabels[S], o.LabelsAllowlist),
		},
	}
}

// serviceAccountInfo renders the token automount setting: "true", "false",
// or no label when unset.
func serviceAccountInfo(sa *v1.ServiceAccount, e *Emitter) {
	automount := ""
	if sa.AutomountServiceAccountToken != nil {
		automount = strconv.FormatBool(*sa.AutomountServiceAccountToken)
	}
	e.Emit(1, "automount_token", automount)
}

func serviceAccountSecrets(sa *v1.ServiceAccount, e *Emitter) {
	for _, s := range sa.Secrets {
		e.Emit(1, "name", s.Name)
	}
}

func serviceAccountImagePullSecrets(sa *v1.ServiceAccount, e *Emitter) {
	for _, s := range sa.ImagePullSecrets {
		e.Emit(1, "name", s.Name)
	}
}
