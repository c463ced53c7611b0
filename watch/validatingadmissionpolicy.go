package watch

// validatingAdmissionPolicyResource describes validatingadmissionpolicies: kube-state-metrics'
// internal/store/validatingadmissionpolicy.go. Not written yet: nil leaves it out of All.
func validatingAdmissionPolicyResource() *Resource { return nil }
