package watch

// serviceAccountResource describes serviceaccounts: kube-state-metrics'
// internal/store/serviceaccount.go. Not written yet: nil leaves it out of All.
func serviceAccountResource() *Resource { return nil }
