package watch

import (
	"context"
	"errors"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// cronJobResource describes cron jobs: kube-state-metrics'
// internal/store/cronjob.go.
func cronJobResource() *Resource {
	return newResource("cronjobs", true, &batchv1.CronJob{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.BatchV1().CronJobs(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.BatchV1().CronJobs(ns).Watch(ctx, o)
		},
		func(j *batchv1.CronJob, e *Emitter) {
			e.Identity("namespace", j.Namespace, "cronjob", j.Name)
		},
		cronJobFamilies,
	)
}

// cronJobFamilies lists the cron job families, in kube-state-metrics' order.
func cronJobFamilies(o FamilyOptions) []Family[*batchv1.CronJob] {
	type C = *batchv1.CronJob
	return []Family[C]{
		{
			Name: "kube_cronjob_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[C], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_cronjob_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[C], o.LabelsAllowlist),
		},
		{
			Name: "kube_cronjob_info", Help: "Info about cronjob.",
			Type: Gauge, Stability: Stable, Generate: cronJobInfo,
		},
		{
			Name: "kube_cronjob_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[C],
		},
		{
			Name: "kube_cronjob_status_active", Help: "Active holds pointers to currently running jobs.",
			Type: Gauge, Stability: Stable,
			Generate: func(j C, e *Emitter) { e.Emit(float64(len(j.Status.Active))) },
		},
		{
			Name: "kube_cronjob_status_last_schedule_time", Help: "LastScheduleTime keeps information of when was the last time the job was successfully scheduled.",
			Type: Gauge, Stability: Stable,
			Generate: func(j C, e *Emitter) { emitOptionalTime(e, j.Status.LastScheduleTime) },
		},
		{
			Name: "kube_cronjob_status_last_successful_time", Help: "LastSuccessfulTime keeps information of when was the last time the job was completed successfully.",
			Type: Gauge, Stability: Stable,
			Generate: func(j C, e *Emitter) { emitOptionalTime(e, j.Status.LastSuccessfulTime) },
		},
		{
			Name: "kube_cronjob_spec_suspend", Help: "Suspend flag tells the controller to suspend subsequent executions.",
			Type: Gauge, Stability: Stable,
			Generate: func(j C, e *Emitter) { e.Emit(boolFloat64(cronJobSuspended(j))) },
		},
		{
			Name: "kube_cronjob_spec_starting_deadline_seconds", Help: "Deadline in seconds for starting the job if it misses scheduled time for any reason.",
			Type: Gauge, Stability: Stable,
			Generate: optionalCountGauge(func(j C) *int64 { return j.Spec.StartingDeadlineSeconds }),
		},
		{
			Name: "kube_cronjob_next_schedule_time", Help: "Next time the cronjob should be scheduled. The time after lastScheduleTime, or after the cron job's creation time if it's never been scheduled. Use this to determine if the job is delayed.",
			Type: Gauge, Stability: Stable, Generate: cronJobNextSchedule,
		},
		{
			Name: "kube_cronjob_schedule_invalid", Help: "Emitted with value 1 for cronjobs whose schedule, in its configured timezone, cannot be parsed.",
			Type: Gauge, Stability: Alpha,
			Generate: func(j C, e *Emitter) {
				if _, err := parseCronSchedule(j.Spec.Schedule, j.Spec.TimeZone); err != nil {
					e.Emit(1)
				}
			},
		},
		{
			Name: "kube_cronjob_metadata_resource_version", Help: "Resource version representing a specific version of the cronjob.",
			Type: Gauge, Stability: Stable, Generate: emitResourceVersion[C],
		},
		{
			Name: "kube_cronjob_spec_successful_job_history_limit", Help: "Successful job history limit tells the controller how many completed jobs should be preserved.",
			Type: Gauge, Stability: Alpha,
			Generate: optionalCountGauge(func(j C) *int32 { return j.Spec.SuccessfulJobsHistoryLimit }),
		},
		{
			Name: "kube_cronjob_spec_failed_job_history_limit", Help: "Failed job history limit tells the controller how many failed jobs should be preserved.",
			Type: Gauge, Stability: Alpha,
			Generate: optionalCountGauge(func(j C) *int32 { return j.Spec.FailedJobsHistoryLimit }),
		},
	}
}

// cronJobLocalZone is the timezone label of a cron job without
// spec.timeZone, which runs in the controller manager's zone.
const cronJobLocalZone = "local"

func cronJobInfo(j *batchv1.CronJob, e *Emitter) {
	tz := cronJobLocalZone
	if j.Spec.TimeZone != nil {
		tz = *j.Spec.TimeZone
	}
	e.Emit(1, "schedule", j.Spec.Schedule, "concurrency_policy", string(j.Spec.ConcurrencyPolicy), "timezone", tz)
}

func cronJobSuspended(j *batchv1.CronJob) bool {
	return j.Spec.Suspend != nil && *j.Spec.Suspend
}

// cronJobNextSchedule renders the schedule's next activation after the last
// schedule time, or after the creation time if the job never ran, unless
// the cron job is suspended or its schedule does not parse. It depends on
// no clock, but a schedule without a time zone is evaluated in the zone the
// decoded times are in: the agent's local zone, as in kube-state-metrics.
func cronJobNextSchedule(j *batchv1.CronJob, e *Emitter) {
	if cronJobSuspended(j) {
		return
	}
	next, err := cronJobNextTime(j)
	if err != nil {
		return
	}
	e.Emit(float64(next.Unix()))
}

func cronJobNextTime(j *batchv1.CronJob) (time.Time, error) {
	s, err := parseCronSchedule(j.Spec.Schedule, j.Spec.TimeZone)
	if err != nil {
		return time.Time{}, err
	}
	if last := j.Status.LastScheduleTime; !last.IsZero() {
		return s.next(last.Time), nil
	}
	if !j.CreationTimestamp.IsZero() {
		return s.next(j.CreationTimestamp.Time), nil
	}
	return time.Time{}, errors.New("cron job has neither a last schedule time nor a creation time")
}
