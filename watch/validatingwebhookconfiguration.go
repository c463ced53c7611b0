package watch

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// validatingWebhookConfigurationResource describes
// validatingwebhookconfigurations: kube-state-metrics'
// internal/store/validatingwebhookconfiguration.go.
func validatingWebhookConfigurationResource() *Resource {
	return admissionResource("validatingwebhookconfigurations", "validatingwebhookconfiguration", &admissionv1.ValidatingWebhookConfiguration{},
		func(c Clients) admissionClient[*admissionv1.ValidatingWebhookConfigurationList] {
			return c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
		},
		validatingWebhookConfigurationFamilies,
	)
}

// validatingWebhookConfigurationFamilies lists the validating webhook
// configuration families, in kube-state-metrics' order.
func validatingWebhookConfigurationFamilies(FamilyOptions) []Family[*admissionv1.ValidatingWebhookConfiguration] {
	return webhookConfigurationFamilies("kube_validatingwebhookconfiguration", "ValidatingWebhookConfiguration", "validating",
		func(c *admissionv1.ValidatingWebhookConfiguration, e *Emitter) {
			for _, w := range c.Webhooks {
				emitWebhookService(e, w.Name, w.ClientConfig.Service)
			}
		})
}

// webhookConfigurationFamilies lists the families that validating and
// mutating webhook configurations share, in kube-state-metrics' order: prefix
// starts every name, kind names the object and webhook ("validating" or
// "mutating") the webhooks in HELP texts, and services renders one series per
// webhook with emitWebhookService.
func webhookConfigurationFamilies[T metav1.Object](prefix, kind, webhook string, services func(T, *Emitter)) []Family[T] {
	return []Family[T]{
		admissionInfo(prefix+"_info", kind, func(_ T, e *Emitter) { e.Emit(1) }),
		admissionCreated[T](prefix + "_created"),
		{
			Name: prefix + "_metadata_resource_version", Help: "Resource version representing a specific version of the " + kind + ".",
			Type: Gauge, Stability: Alpha, Generate: emitResourceVersion[T],
		},
		{
			Name: prefix + "_webhook_clientconfig_service", Help: "Service used by the apiserver to connect to a " + webhook + " webhook.",
			Type: Gauge, Stability: Alpha, Generate: services,
		},
	}
}

// emitWebhookService renders the _webhook_clientconfig_service series of
// one webhook: the service the API server calls, or empty service labels
// for a webhook reached by URL.
func emitWebhookService(e *Emitter, webhook string, svc *admissionv1.ServiceReference) {
	var name, namespace string
	if svc != nil {
		name, namespace = svc.Name, svc.Namespace
	}
	e.Emit(1, "webhook_name", webhook, "service_name", name, "service_namespace", namespace)
}
