package testenv

import (
	"context"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// batchFixtureTime is the time written into status fields (a Sunday, 04:34
// UTC), so that the fixtures render the same series on every run.
var batchFixtureTime = metav1.NewTime(time.Date(2024, 3, 10, 4, 34, 56, 0, time.UTC))

// batchFixtureLater is batchFixtureTime plus an hour: completion and
// last-success times.
var batchFixtureLater = metav1.NewTime(batchFixtureTime.Add(time.Hour))

// batchFixtureFinalizer keeps a deleted fixture in the Terminating state,
// since no controller ever removes it: its deletion timestamp is then
// rendered.
const batchFixtureFinalizer = "example.com/keep"

// FixturesBatch creates, in ns, cron jobs, jobs, horizontal pod autoscalers
// and pod disruption budgets in the states their families render, and
// writes their status as the missing controllers would.
//
// Values that depend on the clock: creation timestamps; the deletion
// timestamps of the autoscaler and the budget left Terminating; and the next
// schedule time of the cron job that never ran, which follows its creation
// time. The other next schedule times follow fixed last schedule times;
// those of schedules without a time zone are computed in the local zone of
// the process rendering them (kube-state-metrics' too).
func FixturesBatch(ctx context.Context, c kubernetes.Interface, ns string) error {
	nightly, err := createBatchCronJobs(ctx, c, ns)
	if err != nil {
		return err
	}
	if err := createBatchJobs(ctx, c, ns, nightly); err != nil {
		return err
	}
	if err := createBatchAutoscalers(ctx, c, ns); err != nil {
		return err
	}
	return createBatchDisruptionBudgets(ctx, c, ns)
}

// batchMeta is the metadata of a fixture, with labels and annotations for
// the allowlisted families.
func batchMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: ns,
		Labels:      map[string]string{"app": "batch", "tier": name},
		Annotations: map[string]string{"team.example.com/owner": "data"},
	}
}

// batchPodTemplate is a pod template that runs to completion.
func batchPodTemplate(restart v1.RestartPolicy) v1.PodTemplateSpec {
	return v1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "batch"}},
		Spec: v1.PodSpec{
			RestartPolicy: restart,
			Containers:    []v1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"true"}}},
		},
	}
}

// batchCronJob is a fixture cron job; status, when set, is written after.
type batchCronJob struct {
	cj     *batchv1.CronJob
	status *batchv1.CronJobStatus
}

// createBatchCronJobs creates cron jobs with and without a time zone,
// suspended, never scheduled, and with schedules kube-state-metrics parses
// its own way. It returns the "nightly" one, which owns a job.
func createBatchCronJobs(ctx context.Context, c kubernetes.Interface, ns string) (*batchv1.CronJob, error) {
	cronJob := func(name, schedule string, tz *string, suspend *bool) *batchv1.CronJob {
		return &batchv1.CronJob{
			ObjectMeta: batchMeta(ns, name),
			Spec: batchv1.CronJobSpec{
				Schedule: schedule, TimeZone: tz, Suspend: suspend,
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: batchPodTemplate(v1.RestartPolicyOnFailure)}},
			},
		}
	}
	nightly := cronJob("nightly", "0 */6 * * *", ptr.To("Asia/Shanghai"), ptr.To(false))
	nightly.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
	nightly.Spec.StartingDeadlineSeconds = ptr.To[int64](300)
	nightly.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](5)
	nightly.Spec.FailedJobsHistoryLimit = ptr.To[int32](2)
	scheduled := &batchv1.CronJobStatus{LastScheduleTime: &batchFixtureTime}
	fixtures := []batchCronJob{
		{cj: nightly, status: &batchv1.CronJobStatus{LastScheduleTime: &batchFixtureTime, LastSuccessfulTime: &batchFixtureLater}},
		// No time zone: the next time is in the renderer's local zone.
		{cj: cronJob("local", "15 3 * * *", nil, nil), status: scheduled},
		// Suspended: no next schedule time.
		{cj: cronJob("paused", "0 */3 * * *", ptr.To("UTC"), ptr.To(true)), status: scheduled},
		// Never ran: the next time follows the creation time.
		{cj: cronJob("fresh", "25 * * * *", ptr.To("Europe/Berlin"), nil)},
		// The API server accepts a step as large as the range; go-cron,
		// kube-state-metrics' parser, does not: schedule_invalid.
		{cj: cronJob("bad-step", "*/60 * * * *", ptr.To("UTC"), nil), status: scheduled},
		// No 30 February in five years: the zero time, -62135596800.
		{cj: cronJob("never", "0 0 30 2 *", ptr.To("UTC"), nil), status: scheduled},
		// Day of month and day of week both apply: a Monday the 1st.
		{cj: cronJob("first-monday", "0 0 1 * 1", ptr.To("UTC"), nil), status: scheduled},
		{cj: cronJob("weekly", "@weekly", ptr.To("America/New_York"), nil), status: scheduled},
	}
	var owner *batchv1.CronJob
	for _, f := range fixtures {
		created, err := c.BatchV1().CronJobs(ns).Create(ctx, f.cj, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating cron job %s/%s: %w", ns, f.cj.Name, err)
		}
		if f.status != nil {
			created.Status = *f.status
			if created, err = c.BatchV1().CronJobs(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return nil, fmt.Errorf("writing status of cron job %s/%s: %w", ns, f.cj.Name, err)
			}
		}
		if f.cj == nightly {
			owner = created
		}
	}
	return owner, nil
}

// batchJob is a fixture job and the status written after it is created.
type batchJob struct {
	job    *batchv1.Job
	status batchv1.JobStatus
}

// createBatchJobs creates jobs running, complete, failed for a known and an
// unknown reason, failing without a condition yet, and suspended. The
// running one belongs to the cron job owner, and is its active job.
func createBatchJobs(ctx context.Context, c kubernetes.Interface, ns string, owner *batchv1.CronJob) error {
	job := func(name string, spec batchv1.JobSpec) *batchv1.Job {
		spec.Template = batchPodTemplate(v1.RestartPolicyNever)
		return &batchv1.Job{ObjectMeta: batchMeta(ns, name), Spec: spec}
	}
	cond := func(t batchv1.JobConditionType, s v1.ConditionStatus, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: s, Reason: reason, LastProbeTime: batchFixtureLater, LastTransitionTime: batchFixtureLater}
	}
	failed := func(reason string) []batchv1.JobCondition {
		return []batchv1.JobCondition{
			cond(batchv1.JobFailureTarget, v1.ConditionTrue, reason),
			cond(batchv1.JobFailed, v1.ConditionTrue, reason),
		}
	}
	running := job("running", batchv1.JobSpec{Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](4), ActiveDeadlineSeconds: ptr.To[int64](600)})
	running.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "batch/v1", Kind: "CronJob", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true),
	}}
	jobs := []batchJob{
		{job: running, status: batchv1.JobStatus{Active: 2, Ready: ptr.To[int32](1), Succeeded: 1, StartTime: &batchFixtureTime}},
		{job: job("complete", batchv1.JobSpec{}), status: batchv1.JobStatus{
			Succeeded: 1, StartTime: &batchFixtureTime, CompletionTime: &batchFixtureLater,
			Conditions: []batchv1.JobCondition{
				cond(batchv1.JobSuccessCriteriaMet, v1.ConditionTrue, batchv1.JobReasonCompletionsReached),
				cond(batchv1.JobComplete, v1.ConditionTrue, batchv1.JobReasonCompletionsReached),
			},
		}},
		{job: job("backoff", batchv1.JobSpec{BackoffLimit: ptr.To[int32](1)}), status: batchv1.JobStatus{
			Failed: 2, StartTime: &batchFixtureTime, Conditions: failed(batchv1.JobReasonBackoffLimitExceeded),
		}},
		// A reason outside kube-state-metrics' list: the count has no reason.
		{job: job("policy", batchv1.JobSpec{}), status: batchv1.JobStatus{
			Failed: 1, StartTime: &batchFixtureTime, Conditions: failed(batchv1.JobReasonPodFailurePolicy),
		}},
		// Failed pods, no Failed condition yet.
		{job: job("retrying", batchv1.JobSpec{}), status: batchv1.JobStatus{
			Active: 1, Failed: 1, Ready: ptr.To[int32](0), StartTime: &batchFixtureTime,
		}},
		{job: job("suspended", batchv1.JobSpec{Suspend: ptr.To(true)}), status: batchv1.JobStatus{
			Conditions: []batchv1.JobCondition{cond(batchv1.JobSuspended, v1.ConditionTrue, "JobSuspended")},
		}},
		{job: job("resumed", batchv1.JobSpec{Suspend: ptr.To(false)}), status: batchv1.JobStatus{
			Active: 1, StartTime: &batchFixtureTime,
			Conditions: []batchv1.JobCondition{cond(batchv1.JobSuspended, v1.ConditionFalse, "JobResumed")},
		}},
	}
	for _, j := range jobs {
		created, err := c.BatchV1().Jobs(ns).Create(ctx, j.job, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating job %s/%s: %w", ns, j.job.Name, err)
		}
		created.Status = j.status
		if _, err := c.BatchV1().Jobs(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("writing status of job %s/%s: %w", ns, j.job.Name, err)
		}
		if j.job == running {
			owner.Status.Active = []v1.ObjectReference{{APIVersion: "batch/v1", Kind: "Job", Namespace: ns, Name: created.Name, UID: created.UID}}
			if _, err := c.BatchV1().CronJobs(ns).UpdateStatus(ctx, owner, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("writing status of cron job %s/%s: %w", ns, owner.Name, err)
			}
		}
	}
	return nil
}

// createBatchAutoscalers creates an autoscaler with every metric source,
// tolerances, conditions and a current metric whose source is missing (the
// API server does not validate status), and a minimal one left Terminating.
func createBatchAutoscalers(ctx context.Context, c kubernetes.Interface, ns string) error {
	q := resource.MustParse
	target := func(t autoscalingv2.MetricTargetType, value *resource.Quantity, utilization *int32) autoscalingv2.MetricTarget {
		mt := autoscalingv2.MetricTarget{Type: t, AverageUtilization: utilization}
		switch t {
		case autoscalingv2.ValueMetricType:
			mt.Value = value
		case autoscalingv2.AverageValueMetricType:
			mt.AverageValue = value
		}
		return mt
	}
	web := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: batchMeta(ns, "web"),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: v1.ResourceCPU, Target: target(autoscalingv2.UtilizationMetricType, nil, ptr.To[int32](80)),
				}},
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: v1.ResourceMemory, Target: target(autoscalingv2.AverageValueMetricType, ptr.To(q("800Ki")), nil),
				}},
				{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
					Name: v1.ResourceCPU, Container: "app", Target: target(autoscalingv2.UtilizationMetricType, nil, ptr.To[int32](60)),
				}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "transactions_processed"},
					Target: target(autoscalingv2.AverageValueMetricType, ptr.To(q("33")), nil),
				}},
				{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
					DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main-route"},
					Metric:          autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
					Target:          target(autoscalingv2.ValueMetricType, ptr.To(q("2500m")), nil),
				}},
				{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue_messages_ready"},
					Target: target(autoscalingv2.AverageValueMetricType, ptr.To(q("30")), nil),
				}},
			},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   &autoscalingv2.HPAScalingRules{Tolerance: ptr.To(q("50m"))},
				ScaleDown: &autoscalingv2.HPAScalingRules{Tolerance: ptr.To(q("0.25"))},
			},
		},
	}
	webStatus := autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: ptr.To[int64](1), CurrentReplicas: 3, DesiredReplicas: 4,
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.AbleToScale, Status: v1.ConditionTrue, Reason: "ReadyForNewScale", LastTransitionTime: batchFixtureTime},
			{Type: autoscalingv2.ScalingActive, Status: v1.ConditionTrue, Reason: "ValidMetricFound", LastTransitionTime: batchFixtureTime},
			{Type: autoscalingv2.ScalingLimited, Status: v1.ConditionFalse, Reason: "DesiredWithinRange", LastTransitionTime: batchFixtureTime},
		},
		CurrentMetrics: []autoscalingv2.MetricStatus{
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
				Name: v1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(q("62m")), AverageUtilization: ptr.To[int32](6)},
			}},
			{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
				Name: v1.ResourceCPU, Container: "app", Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(q("1442m")), AverageUtilization: ptr.To[int32](24)},
			}},
			{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
				Metric: autoscalingv2.MetricIdentifier{Name: "transactions_processed"}, Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(q("31"))},
			}},
			{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricStatus{
				DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main-route"},
				Metric:          autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
				Current:         autoscalingv2.MetricValueStatus{Value: ptr.To(q("2900m"))},
			}},
			{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
				Metric:  autoscalingv2.MetricIdentifier{Name: "queue_messages_ready"},
				Current: autoscalingv2.MetricValueStatus{Value: ptr.To(q("0")), AverageValue: ptr.To(q("26335914666m"))},
			}},
			// A type without its source: skipped.
			{Type: autoscalingv2.ResourceMetricSourceType},
		},
	}
	if err := createBatchAutoscaler(ctx, c, web, &webStatus); err != nil {
		return err
	}
	// Min replicas and metrics left to the API defaults (1, CPU at 80%), no
	// status: left Terminating.
	minimal := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: batchMeta(ns, "minimal"),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"},
			MaxReplicas:    3,
		},
	}
	minimal.Finalizers = []string{batchFixtureFinalizer}
	if err := createBatchAutoscaler(ctx, c, minimal, nil); err != nil {
		return err
	}
	if err := c.AutoscalingV2().HorizontalPodAutoscalers(ns).Delete(ctx, minimal.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting autoscaler %s/%s: %w", ns, minimal.Name, err)
	}
	return nil
}

// createBatchAutoscaler creates an autoscaler and writes status, if any.
func createBatchAutoscaler(ctx context.Context, c kubernetes.Interface, a *autoscalingv2.HorizontalPodAutoscaler, status *autoscalingv2.HorizontalPodAutoscalerStatus) error {
	created, err := c.AutoscalingV2().HorizontalPodAutoscalers(a.Namespace).Create(ctx, a, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating autoscaler %s/%s: %w", a.Namespace, a.Name, err)
	}
	if status == nil {
		return nil
	}
	created.Status = *status
	if _, err := c.AutoscalingV2().HorizontalPodAutoscalers(a.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing status of autoscaler %s/%s: %w", a.Namespace, a.Name, err)
	}
	return nil
}

// createBatchDisruptionBudgets creates a budget by minAvailable that allows
// a disruption, one by maxUnavailable that allows none, and one without
// status left Terminating.
func createBatchDisruptionBudgets(ctx context.Context, c kubernetes.Interface, ns string) error {
	budget := func(name string, minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: batchMeta(ns, name),
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: minAvailable, MaxUnavailable: maxUnavailable,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			},
		}
	}
	allowed := metav1.Condition{
		Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, Reason: policyv1.SufficientPodsReason,
		ObservedGeneration: 1, LastTransitionTime: batchFixtureTime,
	}
	blocked := allowed
	blocked.Status, blocked.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
	budgets := []struct {
		pdb    *policyv1.PodDisruptionBudget
		status *policyv1.PodDisruptionBudgetStatus
	}{
		{pdb: budget("web", ptr.To(intstr.FromInt32(2)), nil), status: &policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: 1, DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3,
			Conditions: []metav1.Condition{allowed},
		}},
		{pdb: budget("db", nil, ptr.To(intstr.FromString("50%"))), status: &policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: 1, CurrentHealthy: 1, DesiredHealthy: 2, ExpectedPods: 4,
			Conditions: []metav1.Condition{blocked},
		}},
		{pdb: budget("gone", ptr.To(intstr.FromInt32(1)), nil)},
	}
	gone := budgets[2].pdb
	gone.Finalizers = []string{batchFixtureFinalizer}
	for _, b := range budgets {
		created, err := c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, b.pdb, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating disruption budget %s/%s: %w", ns, b.pdb.Name, err)
		}
		if b.status == nil {
			continue
		}
		created.Status = *b.status
		if _, err := c.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("writing status of disruption budget %s/%s: %w", ns, b.pdb.Name, err)
		}
	}
	if err := c.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting disruption budget %s/%s: %w", ns, gone.Name, err)
	}
	return nil
}
