package watch

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// rfc3339Time parses a test time.
func rfc3339Time(t *testing.T, s string) *metav1.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return &metav1.Time{Time: tm}
}

// The cases of kube-state-metrics' job_test.go, plus failure reasons,
// allowlists and a malformed job.
func TestJobFamilies(t *testing.T) {
	spec := batchv1.JobSpec{ActiveDeadlineSeconds: ptr.To[int64](900), Parallelism: ptr.To[int32](1), Completions: ptr.To[int32](1)}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "ns1", UID: types.UID("u-" + name), Generation: 1, Labels: map[string]string{"app": "example"}}
	}
	cases := []struct {
		name  string
		opts  FamilyOptions
		job   *batchv1.Job
		names []string
		want  string
	}{
		{
			name: "running",
			job: &batchv1.Job{
				ObjectMeta: func() metav1.ObjectMeta {
					m := meta("RunningJob1")
					m.CreationTimestamp = metav1.NewTime(time.Unix(1500000000, 0))
					m.OwnerReferences = []metav1.OwnerReference{{Kind: "CronJob", Name: "cronjob-name", Controller: ptr.To(true)}}
					return m
				}(),
				Spec:   spec,
				Status: batchv1.JobStatus{Active: 1, StartTime: rfc3339Time(t, "2017-05-26T12:00:07Z")},
			},
			want: `
				kube_job_owner{job_name="RunningJob1",namespace="ns1",owner_is_controller="true",owner_kind="CronJob",owner_name="cronjob-name"} 1
				kube_job_created{job_name="RunningJob1",namespace="ns1"} 1.5e+09
				kube_job_info{job_name="RunningJob1",namespace="ns1"} 1
				kube_job_spec_active_deadline_seconds{job_name="RunningJob1",namespace="ns1"} 900
				kube_job_spec_completions{job_name="RunningJob1",namespace="ns1"} 1
				kube_job_spec_parallelism{job_name="RunningJob1",namespace="ns1"} 1
				kube_job_status_active{job_name="RunningJob1",namespace="ns1"} 1
				kube_job_status_failed{job_name="RunningJob1",namespace="ns1"} 0
				kube_job_status_ready{job_name="RunningJob1",namespace="ns1"} 0
				kube_job_status_start_time{job_name="RunningJob1",namespace="ns1"} 1.495800007e+09
				kube_job_status_succeeded{job_name="RunningJob1",namespace="ns1"} 0`,
		},
		{
			name: "succeeded",
			job: &batchv1.Job{
				ObjectMeta: meta("SuccessfulJob1"),
				Spec:       spec,
				Status: batchv1.JobStatus{
					Succeeded:      1,
					StartTime:      rfc3339Time(t, "2017-05-26T12:00:07Z"),
					CompletionTime: rfc3339Time(t, "2017-05-26T13:00:07Z"),
					Conditions:     []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: v1.ConditionTrue}},
				},
			},
			want: `
				kube_job_owner{job_name="SuccessfulJob1",namespace="ns1"} 1
				kube_job_complete{condition="false",job_name="SuccessfulJob1",namespace="ns1"} 0
				kube_job_complete{condition="true",job_name="SuccessfulJob1",namespace="ns1"} 1
				kube_job_complete{condition="unknown",job_name="SuccessfulJob1",namespace="ns1"} 0
				kube_job_info{job_name="SuccessfulJob1",namespace="ns1"} 1
				kube_job_spec_active_deadline_seconds{job_name="SuccessfulJob1",namespace="ns1"} 900
				kube_job_spec_completions{job_name="SuccessfulJob1",namespace="ns1"} 1
				kube_job_spec_parallelism{job_name="SuccessfulJob1",namespace="ns1"} 1
				kube_job_status_active{job_name="SuccessfulJob1",namespace="ns1"} 0
				kube_job_status_completion_time{job_name="SuccessfulJob1",namespace="ns1"} 1.495803607e+09
				kube_job_status_failed{job_name="SuccessfulJob1",namespace="ns1"} 0
				kube_job_status_ready{job_name="SuccessfulJob1",namespace="ns1"} 0
				kube_job_status_start_time{job_name="SuccessfulJob1",namespace="ns1"} 1.495800007e+09
				kube_job_status_succeeded{job_name="SuccessfulJob1",namespace="ns1"} 1`,
		},
		{
			name: "failed with a known reason",
			job: &batchv1.Job{
				ObjectMeta: meta("FailedJob1"),
				Spec:       spec,
				Status: batchv1.JobStatus{
					Failed:         1,
					StartTime:      rfc3339Time(t, "2017-05-26T14:00:07Z"),
					CompletionTime: rfc3339Time(t, "2017-05-26T15:00:07Z"),
					Conditions:     []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: v1.ConditionTrue, Reason: "BackoffLimitExceeded"}},
				},
			},
			want: `
				kube_job_owner{job_name="FailedJob1",namespace="ns1"} 1
				kube_job_failed{condition="false",job_name="FailedJob1",namespace="ns1"} 0
				kube_job_failed{condition="true",job_name="FailedJob1",namespace="ns1"} 1
				kube_job_failed{condition="unknown",job_name="FailedJob1",namespace="ns1"} 0
				kube_job_info{job_name="FailedJob1",namespace="ns1"} 1
				kube_job_spec_active_deadline_seconds{job_name="FailedJob1",namespace="ns1"} 900
				kube_job_spec_completions{job_name="FailedJob1",namespace="ns1"} 1
				kube_job_spec_parallelism{job_name="FailedJob1",namespace="ns1"} 1
				kube_job_status_active{job_name="FailedJob1",namespace="ns1"} 0
				kube_job_status_completion_time{job_name="FailedJob1",namespace="ns1"} 1.495810807e+09
				kube_job_status_failed{job_name="FailedJob1",namespace="ns1",reason="BackoffLimitExceeded"} 1
				kube_job_status_failed{job_name="FailedJob1",namespace="ns1",reason="DeadlineExceeded"} 0
				kube_job_status_failed{job_name="FailedJob1",namespace="ns1",reason="Evicted"} 0
				kube_job_status_ready{job_name="FailedJob1",namespace="ns1"} 0
				kube_job_status_start_time{job_name="FailedJob1",namespace="ns1"} 1.495807207e+09
				kube_job_status_succeeded{job_name="FailedJob1",namespace="ns1"} 0`,
		},
		{
			// Without a known reason the count itself comes with an empty
			// reason (dropped), after the 0-valued known reasons of each
			// Failed condition.
			name: "failed with an unknown reason",
			job: &batchv1.Job{
				ObjectMeta: meta("FailedOther"),
				Status: batchv1.JobStatus{
					Failed:     3,
					Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: v1.ConditionTrue, Reason: "PodFailurePolicy"}},
				},
			},
			names: []string{"kube_job_status_failed"},
			want: `
				kube_job_status_failed{job_name="FailedOther",namespace="ns1",reason="BackoffLimitExceeded"} 0
				kube_job_status_failed{job_name="FailedOther",namespace="ns1",reason="DeadlineExceeded"} 0
				kube_job_status_failed{job_name="FailedOther",namespace="ns1",reason="Evicted"} 0
				kube_job_status_failed{job_name="FailedOther",namespace="ns1"} 3`,
		},
		{
			name: "failed without conditions",
			job: &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "FailedJobWithNoConditions", Namespace: "ns1", UID: "u5"},
				Spec:       batchv1.JobSpec{ActiveDeadlineSeconds: ptr.To[int64](900)},
				Status:     batchv1.JobStatus{Failed: 1},
			},
			want: `
				kube_job_owner{job_name="FailedJobWithNoConditions",namespace="ns1"} 1
				kube_job_info{job_name="FailedJobWithNoConditions",namespace="ns1"} 1
				kube_job_spec_active_deadline_seconds{job_name="FailedJobWithNoConditions",namespace="ns1"} 900
				kube_job_status_active{job_name="FailedJobWithNoConditions",namespace="ns1"} 0
				kube_job_status_failed{job_name="FailedJobWithNoConditions",namespace="ns1"} 1
				kube_job_status_ready{job_name="FailedJobWithNoConditions",namespace="ns1"} 0
				kube_job_status_succeeded{job_name="FailedJobWithNoConditions",namespace="ns1"} 0`,
		},
		{
			name: "suspended",
			job: &batchv1.Job{
				ObjectMeta: meta("SuspendedNoActiveDeadlineSeconds"),
				Spec:       batchv1.JobSpec{Suspend: ptr.To(true), Parallelism: ptr.To[int32](1), Completions: ptr.To[int32](1)},
				Status: batchv1.JobStatus{
					StartTime:  rfc3339Time(t, "2017-05-26T12:10:07Z"),
					Conditions: []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: v1.ConditionTrue}},
				},
			},
			want: `
				kube_job_owner{job_name="SuspendedNoActiveDeadlineSeconds",namespace="ns1"} 1
				kube_job_info{job_name="SuspendedNoActiveDeadlineSeconds",namespace="ns1"} 1
				kube_job_spec_completions{job_name="SuspendedNoActiveDeadlineSeconds",namespace="ns1"} 1
				kube_job_spec_parallelism{job_name="SuspendedNoActiveDeadlineSeconds",namespace="ns1"} 1
				kube_job_status_active{job_name="SuspendedNoActiveDeadlineSeconds",namespace="ns1"} 0
				kube_job_status_failed{job_name="SuspendedNoActiveDeadlineSeconds",namespace="ns1"} 0
				kube_job_status_ready{job_name="SuspendedNoActiveDeadlineSeconds",namespace="ns1"} 0
				kube_job_status_start_time{job_name="SuspendedNoActiveDeadlineSeconds",namespace="ns1"} 1.495800607e+09
				kube_job_status_succeeded{job_name="SuspendedNoActiveDeadlineSeconds",namespace="ns1"} 0
				kube_job_status_suspended{job_name="SuspendedNoActiveDeadlineSeconds",namespace="ns1"} 1`,
		},
		{
			name: "unsuspended",
			job: &batchv1.Job{
				ObjectMeta: meta("UnsuspendedNoActiveDeadlineSeconds"),
				Spec:       batchv1.JobSpec{Suspend: ptr.To(false), Parallelism: ptr.To[int32](1), Completions: ptr.To[int32](1)},
				Status: batchv1.JobStatus{
					StartTime:  rfc3339Time(t, "2017-05-26T12:10:07Z"),
					Conditions: []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: v1.ConditionFalse}},
				},
			},
			want: `
				kube_job_owner{job_name="UnsuspendedNoActiveDeadlineSeconds",namespace="ns1"} 1
				kube_job_info{job_name="UnsuspendedNoActiveDeadlineSeconds",namespace="ns1"} 1
				kube_job_spec_completions{job_name="UnsuspendedNoActiveDeadlineSeconds",namespace="ns1"} 1
				kube_job_spec_parallelism{job_name="UnsuspendedNoActiveDeadlineSeconds",namespace="ns1"} 1
				kube_job_status_active{job_name="UnsuspendedNoActiveDeadlineSeconds",namespace="ns1"} 0
				kube_job_status_failed{job_name="UnsuspendedNoActiveDeadlineSeconds",namespace="ns1"} 0
				kube_job_status_start_time{job_name="UnsuspendedNoActiveDeadlineSeconds",namespace="ns1"} 1.495800607e+09
				kube_job_status_succeeded{job_name="UnsuspendedNoActiveDeadlineSeconds",namespace="ns1"} 0
				kube_job_status_suspended{job_name="UnsuspendedNoActiveDeadlineSeconds",namespace="ns1"} 0
				kube_job_status_ready{job_name="UnsuspendedNoActiveDeadlineSeconds",namespace="ns1"} 0`,
		},
		{
			name: "ready pods",
			job: &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "job-with-ready-pods", Namespace: "ns1", UID: "job-123"},
				Status:     batchv1.JobStatus{Active: 2, Ready: ptr.To[int32](1)},
			},
			want: `
				kube_job_owner{job_name="job-with-ready-pods",namespace="ns1"} 1
				kube_job_info{job_name="job-with-ready-pods",namespace="ns1"} 1
				kube_job_status_active{job_name="job-with-ready-pods",namespace="ns1"} 2
				kube_job_status_failed{job_name="job-with-ready-pods",namespace="ns1"} 0
				kube_job_status_succeeded{job_name="job-with-ready-pods",namespace="ns1"} 0
				kube_job_status_ready{job_name="job-with-ready-pods",namespace="ns1"} 1`,
		},
		{
			name: "allowlists",
			opts: FamilyOptions{LabelsAllowlist: []string{"app"}, AnnotationsAllowlist: []string{"team"}},
			job: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
				Name: "j", Namespace: "ns1", UID: "u9",
				Labels: map[string]string{"app": "a", "other": "o"}, Annotations: map[string]string{"team": "t"},
			}},
			want: `
				kube_job_annotations{annotation_team="t",job_name="j",namespace="ns1"} 1
				kube_job_labels{job_name="j",label_app="a",namespace="ns1"} 1
				kube_job_info{job_name="j",namespace="ns1"} 1
				kube_job_owner{job_name="j",namespace="ns1"} 1
				kube_job_status_active{job_name="j",namespace="ns1"} 0
				kube_job_status_failed{job_name="j",namespace="ns1"} 0
				kube_job_status_ready{job_name="j",namespace="ns1"} 0
				kube_job_status_succeeded{job_name="j",namespace="ns1"} 0`,
		},
		{
			// Empty names, zero times set, conditions without types or
			// statuses: nothing panics, zero times render as they are.
			name: "malformed",
			job: &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{UID: "u0", OwnerReferences: []metav1.OwnerReference{{}}},
				Status: batchv1.JobStatus{
					Failed: 1, StartTime: &metav1.Time{}, CompletionTime: &metav1.Time{},
					Conditions: []batchv1.JobCondition{{}, {Type: batchv1.JobFailed}, {Type: batchv1.JobComplete}, {Type: batchv1.JobSuspended}},
				},
			},
			want: `
				kube_job_complete{condition="false"} 0
				kube_job_complete{condition="true"} 0
				kube_job_complete{condition="unknown"} 0
				kube_job_failed{condition="false"} 0
				kube_job_failed{condition="true"} 0
				kube_job_failed{condition="unknown"} 0
				kube_job_info{} 1
				kube_job_owner{owner_is_controller="false"} 1
				kube_job_status_active{} 0
				kube_job_status_completion_time{} -6.21355968e+10
				kube_job_status_failed{reason="BackoffLimitExceeded"} 0
				kube_job_status_failed{reason="DeadlineExceeded"} 0
				kube_job_status_failed{reason="Evicted"} 0
				kube_job_status_failed{} 1
				kube_job_status_ready{} 0
				kube_job_status_start_time{} -6.21355968e+10
				kube_job_status_succeeded{} 0
				kube_job_status_suspended{} 0`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, jobResource(), c.opts, c.job, c.names...))
		})
	}
}
