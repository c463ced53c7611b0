package watch

// replicationControllerResource describes replicationcontrollers: kube-state-metrics'
// internal/store/replicationcontroller.go. Not written yet: nil leaves it out of All.
func replicationControllerResource() *Resource { return nil }
