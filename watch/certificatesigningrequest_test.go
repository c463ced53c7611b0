package watch

import (
	"testing"

	certv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Golden tests of the certificate signing request families. The cases port
// kube-state-metrics v2.20.0's internal/store/certificatesigningrequest_test.go.

func TestCSRFamiliesMetadata(t *testing.T) {
	requireStorageFamilies(t, csrResource(), []FamilyInfo{
		{Name: "kube_certificatesigningrequest_annotations", Help: "Kubernetes annotations converted to Prometheus labels."},
		{Name: "kube_certificatesigningrequest_labels", Help: "Kubernetes labels converted to Prometheus labels.", Stability: Stable},
		{Name: "kube_certificatesigningrequest_created", Help: "Unix creation timestamp", Stability: Stable},
		{Name: "kube_certificatesigningrequest_condition", Help: "The number of each certificatesigningrequest condition", Stability: Stable},
		{Name: "kube_certificatesigningrequest_cert_length", Help: "Length of the issued cert", Stability: Stable},
	})
}

func TestCSRFamilies(t *testing.T) {
	// csr is the request of every kube-state-metrics case, with the given
	// conditions and certificate.
	csr := func(cert string, types ...certv1.RequestConditionType) *certv1.CertificateSigningRequest {
		c := &certv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{
				Name: "certificate-test", UID: "uid-csr", Generation: 1,
				Labels:            map[string]string{"cert": "test"},
				CreationTimestamp: unixTime(1500000000),
			},
			Spec: certv1.CertificateSigningRequestSpec{SignerName: "signer"},
		}
		if cert != "" {
			c.Status.Certificate = []byte(cert)
		}
		for _, t := range types {
			c.Status.Conditions = append(c.Status.Conditions, certv1.CertificateSigningRequestCondition{Type: t})
		}
		return c
	}
	// want is the expected series for the given condition counts and
	// certificate length.
	want := func(approved, denied, failed, length string) string {
		const csr, signer = `certificatesigningrequest="certificate-test"`, `signer_name="signer"`
		return `
			kube_certificatesigningrequest_created{` + csr + `,` + signer + `} 1.5e+09
			kube_certificatesigningrequest_condition{` + csr + `,condition="approved",` + signer + `} ` + approved + `
			kube_certificatesigningrequest_condition{` + csr + `,condition="denied",` + signer + `} ` + denied + `
			kube_certificatesigningrequest_condition{` + csr + `,condition="failed",` + signer + `} ` + failed + `
			kube_certificatesigningrequest_cert_length{` + csr + `,` + signer + `} ` + length
	}
	approved, denied, failed := certv1.CertificateApproved, certv1.CertificateDenied, certv1.CertificateFailed
	runStorageCases(t, csrResource(), []storageCase{
		{name: "pending", obj: csr(""), want: want("0", "0", "0", "0")},
		{name: "denied", obj: csr("", denied), want: want("0", "1", "0", "0")},
		{name: "approved", obj: csr("", approved), want: want("1", "0", "0", "0")},
		{name: "failed", obj: csr("", failed), want: want("0", "0", "1", "0")},
		{name: "issued", obj: csr("just for test", approved), want: want("1", "0", "0", "13")},
		{name: "every condition", obj: csr("", approved, denied, failed), want: want("1", "1", "1", "0")},
		{
			name: "repeated conditions",
			obj:  csr("", approved, denied, approved, denied, failed, failed),
			want: want("2", "2", "2", "0"),
		},
		{
			// Other condition types are not counted.
			name: "unknown condition",
			obj:  csr("", "Custom", approved),
			want: want("1", "0", "0", "0"),
		},
		{
			name:     "allowlisted labels",
			opts:     FamilyOptions{LabelsAllowlist: []string{"cert"}, AnnotationsAllowlist: []string{"missing"}},
			obj:      csr(""),
			families: []string{"kube_certificatesigningrequest_labels", "kube_certificatesigningrequest_annotations"},
			want: `
				kube_certificatesigningrequest_annotations{certificatesigningrequest="certificate-test",signer_name="signer"} 1
				kube_certificatesigningrequest_labels{certificatesigningrequest="certificate-test",label_cert="test",signer_name="signer"} 1`,
		},
	})
}

// TestCSRMalformed renders every family of an empty request without
// panicking: without a signer the signer_name label is left out.
func TestCSRMalformed(t *testing.T) {
	runStorageCases(t, csrResource(), []storageCase{
		{
			name:     "empty",
			opts:     storageAllAllowed,
			obj:      &certv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			families: storageFamilyNames(csrResource()),
			want: `
				kube_certificatesigningrequest_annotations{} 1
				kube_certificatesigningrequest_labels{} 1
				kube_certificatesigningrequest_condition{condition="approved"} 0
				kube_certificatesigningrequest_condition{condition="denied"} 0
				kube_certificatesigningrequest_condition{condition="failed"} 0
				kube_certificatesigningrequest_cert_length{} 0`,
		},
		{
			name: "empty conditions",
			obj: &certv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{UID: "u", Name: "odd"},
				Status:     certv1.CertificateSigningRequestStatus{Conditions: []certv1.CertificateSigningRequestCondition{{}}, Certificate: []byte{}},
			},
			want: `
				kube_certificatesigningrequest_condition{certificatesigningrequest="odd",condition="approved"} 0
				kube_certificatesigningrequest_condition{certificatesigningrequest="odd",condition="denied"} 0
				kube_certificatesigningrequest_condition{certificatesigningrequest="odd",condition="failed"} 0
				kube_certificatesigningrequest_cert_length{certificatesigningrequest="odd"} 0`,
		},
	})
}
