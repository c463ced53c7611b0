package watch

import (
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
)

// ksmExternalURL is the URL of kube-state-metrics' webhook reached without
// a service.
var ksmExternalURL = "example.com"

func TestValidatingWebhookConfigurationFamilies(t *testing.T) {
	type C = admissionv1.ValidatingWebhookConfiguration
	runAdmissionCases(t, validatingWebhookConfigurationResource, []admissionCase[*C]{
		{name: "numeric resource version",
			obj: &C{ObjectMeta: ksmAdmissionMeta("validatingwebhookconfiguration1", "ns1", "123456", false)},
			want: `
			kube_validatingwebhookconfiguration_info{namespace="ns1",validatingwebhookconfiguration="validatingwebhookconfiguration1"} 1
			kube_validatingwebhookconfiguration_metadata_resource_version{namespace="ns1",validatingwebhookconfiguration="validatingwebhookconfiguration1"} 123456`},
		{name: "created, non-numeric resource version",
			obj: &C{ObjectMeta: ksmAdmissionMeta("validatingwebhookconfiguration2", "ns2", "abcdef", true)},
			want: `
			kube_validatingwebhookconfiguration_created{namespace="ns2",validatingwebhookconfiguration="validatingwebhookconfiguration2"} 1.501569018e+09
			kube_validatingwebhookconfiguration_info{namespace="ns2",validatingwebhookconfiguration="validatingwebhookconfiguration2"} 1`},
		{name: "webhooks by service and by URL",
			obj: &C{ObjectMeta: ksmAdmissionMeta("validatingwebhookconfiguration3", "ns3", "abcdef", true),
				Webhooks: []admissionv1.ValidatingWebhook{
					{Name: "webhook_with_service", ClientConfig: admissionv1.WebhookClientConfig{
						Service: &admissionv1.ServiceReference{Name: "svc", Namespace: "ns"}}},
					{Name: "webhook_with_external_url", ClientConfig: admissionv1.WebhookClientConfig{URL: &ksmExternalURL}},
				}},
			families: []string{"kube_validatingwebhookconfiguration_webhook_clientconfig_service"},
			want: `
			kube_validatingwebhookconfiguration_webhook_clientconfig_service{namespace="ns3",validatingwebhookconfiguration="validatingwebhookconfiguration3",webhook_name="webhook_with_external_url"} 1
			kube_validatingwebhookconfiguration_webhook_clientconfig_service{namespace="ns3",service_name="svc",service_namespace="ns",validatingwebhookconfiguration="validatingwebhookconfiguration3",webhook_name="webhook_with_service"} 1`},
		{name: "malformed", obj: &C{ObjectMeta: malformedMeta(), Webhooks: []admissionv1.ValidatingWebhook{{}}},
			want: `
			kube_validatingwebhookconfiguration_info{} 1
			kube_validatingwebhookconfiguration_webhook_clientconfig_service{} 1`},
	})
}
