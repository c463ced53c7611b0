package watch

// persistentVolumeResource describes persistentvolumes: kube-state-metrics'
// internal/store/persistentvolume.go. Not written yet: nil leaves it out of All.
func persistentVolumeResource() *Resource { return nil }
