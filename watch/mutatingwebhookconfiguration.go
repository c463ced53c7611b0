package watch

// mutatingWebhookConfigurationResource describes mutatingwebhookconfigurations: kube-state-metrics'
// internal/store/mutatingwebhookconfiguration.go. Not written yet: nil leaves it out of All.
func mutatingWebhookConfigurationResource() *Resource { return nil }
