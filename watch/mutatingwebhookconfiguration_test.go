package watch

import (
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
)

func TestMutatingWebhookConfigurationFamilies(t *testing.T) {
	type C = admissionv1.MutatingWebhookConfiguration
	runAdmissionCases(t, mutatingWebhookConfigurationResource, []admissionCase[*C]{
		{name: "numeric resource version",
			obj: &C{ObjectMeta: ksmAdmissionMeta("mutatingwebhookconfiguration1", "ns1", "123456", false)},
			want: `
			kube_mutatingwebhookconfiguration_info{mutatingwebhookconfiguration="mutatingwebhookconfiguration1",namespace="ns1"} 1
			kube_mutatingwebhookconfiguration_metadata_resource_version{mutatingwebhookconfiguration="mutatingwebhookconfiguration1",namespace="ns1"} 123456`},
		{name: "created, non-numeric resource version",
			obj: &C{ObjectMeta: ksmAdmissionMeta("mutatingwebhookconfiguration2", "ns2", "abcdef", true)},
			want: `
			kube_mutatingwebhookconfiguration_created{mutatingwebhookconfiguration="mutatingwebhookconfiguration2",namespace="ns2"} 1.501569018e+09
			kube_mutatingwebhookconfiguration_info{mutatingwebhookconfiguration="mutatingwebhookconfiguration2",namespace="ns2"} 1`},
		{name: "webhooks by service and by URL",
			obj: &C{ObjectMeta: ksmAdmissionMeta("mutatingwebhookconfiguration3", "ns3", "abcdef", true),
				Webhooks: []admissionv1.MutatingWebhook{
					{Name: "webhook_with_service", ClientConfig: admissionv1.WebhookClientConfig{
						Service: &admissionv1.ServiceReference{Name: "svc", Namespace: "ns"}}},
					{Name: "webhook_with_external_url", ClientConfig: admissionv1.WebhookClientConfig{URL: &ksmExternalURL}},
				}},
			families: []string{"kube_mutatingwebhookconfiguration_webhook_clientconfig_service"},
			want: `
			kube_mutatingwebhookconfiguration_webhook_clientconfig_service{mutatingwebhookconfiguration="mutatingwebhookconfiguration3",namespace="ns3",webhook_name="webhook_with_external_url"} 1
			kube_mutatingwebhookconfiguration_webhook_clientconfig_service{mutatingwebhookconfiguration="mutatingwebhookconfiguration3",namespace="ns3",service_name="svc",service_namespace="ns",webhook_name="webhook_with_service"} 1`},
		{name: "malformed", obj: &C{ObjectMeta: malformedMeta(), Webhooks: []admissionv1.MutatingWebhook{{}}},
			want: `
			kube_mutatingwebhookconfiguration_info{} 1
			kube_mutatingwebhookconfiguration_webhook_clientconfig_service{} 1`},
	})
}
