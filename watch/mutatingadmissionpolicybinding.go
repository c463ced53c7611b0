package watch

// mutatingAdmissionPolicyBindingResource describes mutatingadmissionpolicybindings: kube-state-metrics'
// internal/store/mutatingadmissionpolicybinding.go. Not written yet: nil leaves it out of All.
func mutatingAdmissionPolicyBindingResource() *Resource { return nil }
