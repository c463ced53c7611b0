package watch

// volumeAttachmentResource describes volumeattachments: kube-state-metrics'
// internal/store/volumeattachment.go. Not written yet: nil leaves it out of All.
func volumeAttachmentResource() *Resource { return nil }
