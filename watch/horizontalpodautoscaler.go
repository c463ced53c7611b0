package watch

// hpaResource describes horizontalpodautoscalers: kube-state-metrics'
// internal/store/horizontalpodautoscaler.go. Not written yet: nil leaves it out of All.
func hpaResource() *Resource { return nil }
