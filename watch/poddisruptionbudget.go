package watch

// podDisruptionBudgetResource describes poddisruptionbudgets: kube-state-metrics'
// internal/store/poddisruptionbudget.go. Not written yet: nil leaves it out of All.
func podDisruptionBudgetResource() *Resource { return nil }
