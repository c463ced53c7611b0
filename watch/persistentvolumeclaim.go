package watch

// persistentVolumeClaimResource describes persistentvolumeclaims: kube-state-metrics'
// internal/store/persistentvolumeclaim.go. Not written yet: nil leaves it out of All.
func persistentVolumeClaimResource() *Resource { return nil }
