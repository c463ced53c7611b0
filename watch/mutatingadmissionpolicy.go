package watch

// mutatingAdmissionPolicyResource describes mutatingadmissionpolicies: kube-state-metrics'
// internal/store/mutatingadmissionpolicy.go. Not written yet: nil leaves it out of All.
func mutatingAdmissionPolicyResource() *Resource { return nil }
