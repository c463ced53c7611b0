package watch

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
)

// mutatingWebhookConfigurationResource describes
// mutatingwebhookconfigurations: kube-state-metrics'
// internal/store/mutatingwebhookconfiguration.go.
func mutatingWebhookConfigurationResource() *Resource {
	return admissionResource("mutatingwebhookconfigurations", "mutatingwebhookconfiguration", &admissionv1.MutatingWebhookConfiguration{},
		func(c Clients) admissionClient[*admissionv1.MutatingWebhookConfigurationList] {
			return c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
		},
		mutatingWebhookConfigurationFamilies,
	)
}

// mutatingWebhookConfigurationFamilies lists the mutating webhook
// configuration families, in kube-state-metrics' order.
func mutatingWebhookConfigurationFamilies(FamilyOptions) []Family[*admissionv1.MutatingWebhookConfiguration] {
	return webhookConfigurationFamilies("kube_mutatingwebhookconfiguration", "MutatingWebhookConfiguration", "mutating",
		func(c *admissionv1.MutatingWebhookConfiguration, e *Emitter) {
			for _, w := range c.Webhooks {
				emitWebhookService(e, w.Name, w.ClientConfig.Service)
			}
		})
}
