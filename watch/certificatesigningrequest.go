package watch

import (
	"context"
	"strings"

	certv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// csrResource describes certificate signing requests: kube-state-metrics'
// internal/store/certificatesigningrequest.go.
func csrResource() *Resource {
	return newResource("certificatesigningrequests", false, &certv1.CertificateSigningRequest{},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CertificatesV1().CertificateSigningRequests().List(ctx, o)
		},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CertificatesV1().CertificateSigningRequests().Watch(ctx, o)
		},
		func(csr *certv1.CertificateSigningRequest, e *Emitter) {
			e.Identity("certificatesigningrequest", csr.Name, "signer_name", csr.Spec.SignerName)
		},
		csrFamilies,
	)
}

// csrFamilies lists the certificate signing request families, in
// kube-state-metrics' order.
func csrFamilies(o FamilyOptions) []Family[*certv1.CertificateSigningRequest] {
	type CSR = *certv1.CertificateSigningRequest
	return []Family[CSR]{
		{
			Name: "kube_certificatesigningrequest_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[CSR], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_certificatesigningrequest_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[CSR], o.LabelsAllowlist),
		},
		{
			Name: "kube_certificatesigningrequest_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[CSR],
		},
		{
			Name: "kube_certificatesigningrequest_condition", Help: "The number of each certificatesigningrequest condition",
			Type: Gauge, Stability: Stable, Generate: csrConditions,
		},
		{
			// The length in bytes of the PEM-encoded certificate; 0 until
			// one is issued.
			Name: "kube_certificatesigningrequest_cert_length", Help: "Length of the issued cert",
			Type: Gauge, Stability: Stable,
			Generate: func(csr CSR, e *Emitter) { e.Emit(float64(len(csr.Status.Certificate))) },
		},
	}
}

// csrConditionTypes are the condition types kube_certificatesigningrequest_condition
// counts, each reported in lower case.
var csrConditionTypes = []certv1.RequestConditionType{certv1.CertificateApproved, certv1.CertificateDenied, certv1.CertificateFailed}

// csrConditions renders, for each of csrConditionTypes, how many conditions
// of that type the request has (0 included).
func csrConditions(csr *certv1.CertificateSigningRequest, e *Emitter) {
	for _, t := range csrConditionTypes {
		n := 0
		for _, c := range csr.Status.Conditions {
			if c.Type == t {
				n++
			}
		}
		e.Emit(float64(n), "condition", strings.ToLower(string(t)))
	}
}
