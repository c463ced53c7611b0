package watch

// validatingAdmissionPolicyBindingResource describes validatingadmissionpolicybindings: kube-state-metrics'
// internal/store/validatingadmissionpolicybinding.go. Not written yet: nil leaves it out of All.
func validatingAdmissionPolicyBindingResource() *Resource { return nil }
