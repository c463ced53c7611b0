package watch

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// jobResource describes jobs: kube-state-metrics' internal/store/job.go.
func jobResource() *Resource {
	return newResource("jobs", true, &batchv1.Job{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.BatchV1().Jobs(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.BatchV1().Jobs(ns).Watch(ctx, o)
		},
		func(j *batchv1.Job, e *Emitter) {
			e.Identity("namespace", j.Namespace, "job_name", j.Name)
		},
		jobFamilies,
	)
}

// jobFailureReasons are the Failed condition reasons kube_job_status_failed
// reports by name, in kube-state-metrics' order.
var jobFailureReasons = []string{
	batchv1.JobReasonBackoffLimitExceeded, batchv1.JobReasonDeadlineExceeded, "Evicted",
}

// jobFamilies lists the job families, in kube-state-metrics' order.
func jobFamilies(o FamilyOptions) []Family[*batchv1.Job] {
	type J = *batchv1.Job
	return []Family[J]{
		{
			Name: "kube_job_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[J], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_job_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[J], o.LabelsAllowlist),
		},
		{
			Name: "kube_job_info", Help: "Information about job.",
			Type: Gauge, Stability: Stable,
			Generate: func(_ J, e *Emitter) { e.Emit(1) },
		},
		{
			Name: "kube_job_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[J],
		},
		{
			Name: "kube_job_spec_parallelism", Help: "The maximum desired number of pods the job should run at any given time.",
			Type: Gauge, Stability: Stable,
			Generate: optionalCountGauge(func(j J) *int32 { return j.Spec.Parallelism }),
		},
		{
			Name: "kube_job_spec_completions", Help: "The desired number of successfully finished pods the job should be run with.",
			Type: Gauge, Stability: Stable,
			Generate: optionalCountGauge(func(j J) *int32 { return j.Spec.Completions }),
		},
		{
			Name: "kube_job_spec_active_deadline_seconds", Help: "The duration in seconds relative to the startTime that the job may be active before the system tries to terminate it.",
			Type: Gauge, Stability: Stable,
			Generate: optionalCountGauge(func(j J) *int64 { return j.Spec.ActiveDeadlineSeconds }),
		},
		{
			Name: "kube_job_status_succeeded", Help: "The number of pods which reached Phase Succeeded.",
			Type: Gauge, Stability: Stable,
			Generate: func(j J, e *Emitter) { e.Emit(float64(j.Status.Succeeded)) },
		},
		{
			Name: "kube_job_status_failed", Help: "The number of pods which reached Phase Failed and the reason for failure.",
			Type: Gauge, Stability: Stable, Generate: jobStatusFailed,
		},
		{
			Name: "kube_job_status_active", Help: "The number of actively running pods.",
			Type: Gauge, Stability: Stable,
			Generate: func(j J, e *Emitter) { e.Emit(float64(j.Status.Active)) },
		},
		{
			// Unlike the spec families, an unset count renders as 0.
			Name: "kube_job_status_ready", Help: "The number of ready pods that belong to this Job.",
			Type: Gauge, Stability: Alpha,
			Generate: func(j J, e *Emitter) {
				var ready int32
				if j.Status.Ready != nil {
					ready = *j.Status.Ready
				}
				e.Emit(float64(ready))
			},
		},
		{
			Name: "kube_job_complete", Help: "The job has completed its execution.",
			Type: Gauge, Stability: Stable, Generate: jobConditionState(batchv1.JobComplete),
		},
		{
			Name: "kube_job_failed", Help: "The job has failed its execution.",
			Type: Gauge, Stability: Stable, Generate: jobConditionState(batchv1.JobFailed),
		},
		{
			Name: "kube_job_status_start_time", Help: "StartTime represents time when the job was acknowledged by the Job Manager.",
			Type: Gauge, Stability: Stable,
			Generate: func(j J, e *Emitter) { emitOptionalTime(e, j.Status.StartTime) },
		},
		{
			Name: "kube_job_status_completion_time", Help: "CompletionTime represents time when the job was completed.",
			Type: Gauge, Stability: Stable,
			Generate: func(j J, e *Emitter) { emitOptionalTime(e, j.Status.CompletionTime) },
		},
		{
			// One series per Suspended condition: 1 while it is true.
			Name: "kube_job_status_suspended", Help: "The number of pods which reached Phase Suspended.",
			Type: Gauge, Stability: Alpha,
			Generate: func(j J, e *Emitter) {
				for _, c := range j.Status.Conditions {
					if c.Type == batchv1.JobSuspended {
						e.Emit(boolFloat64(c.Status == v1.ConditionTrue))
					}
				}
			},
		},
		{
			Name: "kube_job_owner", Help: "Information about the Job's owner.",
			Type: Gauge, Stability: Stable, Generate: emitOwners[J],
		},
	}
}

// jobStatusFailed renders the failed pod count: unlabelled while it is 0;
// otherwise, for every Failed condition, a 0/1 series per known reason, plus
// the count itself (without a reason) when no condition gives a known one.
func jobStatusFailed(j *batchv1.Job, e *Emitter) {
	failed := float64(j.Status.Failed)
	if failed == 0 {
		e.Emit(0)
		return
	}
	known := false
	for _, c := range j.Status.Conditions {
		if c.Type != batchv1.JobFailed {
			continue
		}
		for _, r := range jobFailureReasons {
			known = known || c.Reason == r
			e.Emit(boolFloat64(c.Reason == r), "reason", r)
		}
	}
	if !known {
		e.Emit(failed, "reason", "")
	}
}

// jobConditionState renders every condition of type t as a state set over
// the condition statuses, in the `condition` label.
func jobConditionState(t batchv1.JobConditionType) func(*batchv1.Job, *Emitter) {
	return func(j *batchv1.Job, e *Emitter) {
		for _, c := range j.Status.Conditions {
			if c.Type == t {
				emitConditionState(e, "condition", c.Status)
			}
		}
	}
}

// emitOptionalTime renders an optional time as Unix seconds, when set (even to
// the zero time, as kube-state-metrics checks only for nil).
func emitOptionalTime(e *Emitter, t *metav1.Time) {
	if t != nil {
		e.Emit(timestampSeconds(*t))
	}
}
