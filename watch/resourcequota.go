package watch

// resourceQuotaResource describes resourcequotas: kube-state-metrics'
// internal/store/resourcequota.go. Not written yet: nil leaves it out of All.
func resourceQuotaResource() *Resource { return nil }
