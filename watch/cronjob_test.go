package watch

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Times of kube-state-metrics' cronjob_test.go, in UTC so that schedules
// without a time zone give the same result on every machine.
var (
	// cronLastSchedule is 2018-03-11 04:34:56 UTC (12:34:56 in Shanghai), a
	// Sunday.
	cronLastSchedule = metav1.NewTime(time.Unix(1520742896, 0).UTC())
	// cronCreated is 6.5 hours later.
	cronCreated = metav1.NewTime(time.Unix(1520742896+6.5*3600, 0).UTC())
)

// The cases of kube-state-metrics' cronjob_test.go, plus allowlists and a
// malformed cron job.
func TestCronJobFamilies(t *testing.T) {
	spec := func(schedule string, suspend *bool, tz *string) batchv1.CronJobSpec {
		return batchv1.CronJobSpec{
			Schedule: schedule, TimeZone: tz, ConcurrencyPolicy: batchv1.ForbidConcurrent, Suspend: suspend,
			StartingDeadlineSeconds: ptr.To[int64](300), SuccessfulJobsHistoryLimit: ptr.To[int32](3), FailedJobsHistoryLimit: ptr.To[int32](1),
		}
	}
	meta := func(name, rv string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: name, Namespace: "ns1", UID: "u1", Generation: 1, ResourceVersion: rv,
			Labels:      map[string]string{"app": "example"},
			Annotations: map[string]string{"app": "mysql-server", "app.k8s.io/owner": "@foo"},
		}
	}
	cases := []struct {
		name string
		opts FamilyOptions
		cj   *batchv1.CronJob
		want string
	}{
		{
			name: "active with time zone",
			opts: FamilyOptions{AnnotationsAllowlist: []string{"app.k8s.io/owner"}},
			cj: &batchv1.CronJob{
				ObjectMeta: meta("ActiveRunningCronJobWithTZ1", "11111"),
				Spec:       spec("0 */6 * * *", ptr.To(false), ptr.To("Asia/Shanghai")),
				Status: batchv1.CronJobStatus{
					Active:           []v1.ObjectReference{{Name: "FakeJob1"}, {Name: "FakeJob2"}},
					LastScheduleTime: &cronLastSchedule,
				},
			},
			// 18:00 in Shanghai.
			want: `
				kube_cronjob_info{concurrency_policy="Forbid",cronjob="ActiveRunningCronJobWithTZ1",namespace="ns1",schedule="0 */6 * * *",timezone="Asia/Shanghai"} 1
				kube_cronjob_annotations{annotation_app_k8s_io_owner="@foo",cronjob="ActiveRunningCronJobWithTZ1",namespace="ns1"} 1
				kube_cronjob_spec_failed_job_history_limit{cronjob="ActiveRunningCronJobWithTZ1",namespace="ns1"} 1
				kube_cronjob_spec_starting_deadline_seconds{cronjob="ActiveRunningCronJobWithTZ1",namespace="ns1"} 300
				kube_cronjob_spec_successful_job_history_limit{cronjob="ActiveRunningCronJobWithTZ1",namespace="ns1"} 3
				kube_cronjob_spec_suspend{cronjob="ActiveRunningCronJobWithTZ1",namespace="ns1"} 0
				kube_cronjob_status_active{cronjob="ActiveRunningCronJobWithTZ1",namespace="ns1"} 2
				kube_cronjob_metadata_resource_version{cronjob="ActiveRunningCronJobWithTZ1",namespace="ns1"} 11111
				kube_cronjob_status_last_schedule_time{cronjob="ActiveRunningCronJobWithTZ1",namespace="ns1"} 1.520742896e+09
				kube_cronjob_next_schedule_time{cronjob="ActiveRunningCronJobWithTZ1",namespace="ns1"} 1.5207624e+09`,
		},
		{
			name: "active without time zone",
			cj: &batchv1.CronJob{
				ObjectMeta: meta("ActiveRunningCronJob1", "11111"),
				Spec:       spec("0 */6 * * *", ptr.To(false), nil),
				Status: batchv1.CronJobStatus{
					Active:           []v1.ObjectReference{{Name: "FakeJob1"}, {Name: "FakeJob2"}},
					LastScheduleTime: &cronLastSchedule,
				},
			},
			// 06:00 in the zone of the last schedule time.
			want: `
				kube_cronjob_info{concurrency_policy="Forbid",cronjob="ActiveRunningCronJob1",namespace="ns1",schedule="0 */6 * * *",timezone="local"} 1
				kube_cronjob_spec_failed_job_history_limit{cronjob="ActiveRunningCronJob1",namespace="ns1"} 1
				kube_cronjob_spec_starting_deadline_seconds{cronjob="ActiveRunningCronJob1",namespace="ns1"} 300
				kube_cronjob_spec_successful_job_history_limit{cronjob="ActiveRunningCronJob1",namespace="ns1"} 3
				kube_cronjob_spec_suspend{cronjob="ActiveRunningCronJob1",namespace="ns1"} 0
				kube_cronjob_status_active{cronjob="ActiveRunningCronJob1",namespace="ns1"} 2
				kube_cronjob_metadata_resource_version{cronjob="ActiveRunningCronJob1",namespace="ns1"} 11111
				kube_cronjob_status_last_schedule_time{cronjob="ActiveRunningCronJob1",namespace="ns1"} 1.520742896e+09
				kube_cronjob_next_schedule_time{cronjob="ActiveRunningCronJob1",namespace="ns1"} 1.520748e+09`,
		},
		{
			name: "suspended",
			cj: &batchv1.CronJob{
				ObjectMeta: meta("SuspendedCronJob1", "22222"),
				Spec:       spec("0 */3 * * *", ptr.To(true), ptr.To("Asia/Shanghai")),
				Status: batchv1.CronJobStatus{
					Active:             []v1.ObjectReference{},
					LastScheduleTime:   &metav1.Time{Time: cronLastSchedule.Add(5*time.Hour + 30*time.Minute)},
					LastSuccessfulTime: &metav1.Time{Time: cronLastSchedule.Add(5*time.Hour + 30*time.Minute)},
				},
			},
			want: `
				kube_cronjob_info{concurrency_policy="Forbid",cronjob="SuspendedCronJob1",namespace="ns1",schedule="0 */3 * * *",timezone="Asia/Shanghai"} 1
				kube_cronjob_spec_failed_job_history_limit{cronjob="SuspendedCronJob1",namespace="ns1"} 1
				kube_cronjob_spec_starting_deadline_seconds{cronjob="SuspendedCronJob1",namespace="ns1"} 300
				kube_cronjob_spec_successful_job_history_limit{cronjob="SuspendedCronJob1",namespace="ns1"} 3
				kube_cronjob_spec_suspend{cronjob="SuspendedCronJob1",namespace="ns1"} 1
				kube_cronjob_status_active{cronjob="SuspendedCronJob1",namespace="ns1"} 0
				kube_cronjob_metadata_resource_version{cronjob="SuspendedCronJob1",namespace="ns1"} 22222
				kube_cronjob_status_last_schedule_time{cronjob="SuspendedCronJob1",namespace="ns1"} 1.520762696e+09
				kube_cronjob_status_last_successful_time{cronjob="SuspendedCronJob1",namespace="ns1"} 1.520762696e+09`,
		},
		{
			// Never scheduled: the next time follows the creation time. An
			// unset suspend is the API default, false.
			name: "never scheduled",
			cj: &batchv1.CronJob{
				ObjectMeta: func() metav1.ObjectMeta {
					m := meta("ActiveCronJobNilSuspend", "44444")
					m.CreationTimestamp = cronCreated
					return m
				}(),
				Spec: spec("25 * * * *", nil, nil),
			},
			want: `
				kube_cronjob_spec_starting_deadline_seconds{cronjob="ActiveCronJobNilSuspend",namespace="ns1"} 300
				kube_cronjob_status_active{cronjob="ActiveCronJobNilSuspend",namespace="ns1"} 0
				kube_cronjob_metadata_resource_version{cronjob="ActiveCronJobNilSuspend",namespace="ns1"} 44444
				kube_cronjob_spec_failed_job_history_limit{cronjob="ActiveCronJobNilSuspend",namespace="ns1"} 1
				kube_cronjob_spec_successful_job_history_limit{cronjob="ActiveCronJobNilSuspend",namespace="ns1"} 3
				kube_cronjob_spec_suspend{cronjob="ActiveCronJobNilSuspend",namespace="ns1"} 0
				kube_cronjob_info{concurrency_policy="Forbid",cronjob="ActiveCronJobNilSuspend",namespace="ns1",schedule="25 * * * *",timezone="local"} 1
				kube_cronjob_created{cronjob="ActiveCronJobNilSuspend",namespace="ns1"} 1.520766296e+09
				kube_cronjob_next_schedule_time{cronjob="ActiveCronJobNilSuspend",namespace="ns1"} 1.5207675e+09`,
		},
		{
			name: "labels allowlist",
			opts: FamilyOptions{LabelsAllowlist: []string{"*"}},
			cj:   &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns1", UID: "u2", Labels: map[string]string{"app": "x"}}},
			want: `
				kube_cronjob_info{cronjob="c",namespace="ns1",timezone="local"} 1
				kube_cronjob_labels{cronjob="c",label_app="x",namespace="ns1"} 1
				kube_cronjob_schedule_invalid{cronjob="c",namespace="ns1"} 1
				kube_cronjob_spec_suspend{cronjob="c",namespace="ns1"} 0
				kube_cronjob_status_active{cronjob="c",namespace="ns1"} 0`,
		},
		{
			// No spec, no status, no metadata but a UID; an empty time zone
			// is set, so the timezone label is empty and the schedule
			// invalid.
			name: "malformed",
			cj: &batchv1.CronJob{
				ObjectMeta: metav1.ObjectMeta{UID: "u0"},
				Spec:       batchv1.CronJobSpec{TimeZone: ptr.To("")},
				Status:     batchv1.CronJobStatus{LastScheduleTime: &metav1.Time{}},
			},
			want: `
				kube_cronjob_info{} 1
				kube_cronjob_schedule_invalid{} 1
				kube_cronjob_spec_suspend{} 0
				kube_cronjob_status_active{} 0
				kube_cronjob_status_last_schedule_time{} -6.21355968e+10`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, cronJobResource(), c.opts, c.cj))
		})
	}
}

// kube_cronjob_next_schedule_time and kube_cronjob_schedule_invalid for
// schedules go-cron (kube-state-metrics' parser) reads its own way. The
// expected times come from go-cron v0.15.1 itself.
func TestCronJobSchedule(t *testing.T) {
	const never = "-6.21355968e+10" // the zero time, exported as is
	cases := []struct {
		name, schedule string
		tz             *string
		last           *metav1.Time // the last schedule time; cronLastSchedule when nil
		created        metav1.Time
		want           string // the next time, or "invalid", or "" for no series
	}{
		{name: "every 6h", schedule: "0 */6 * * *", want: "1.520748e+09"},
		{name: "time zone", schedule: "0 */6 * * *", tz: ptr.To("Asia/Shanghai"), want: "1.5207624e+09"},
		{name: "named zone", schedule: "0 */6 * * *", tz: ptr.To("Asia/Singapore"), want: "1.5207624e+09"},
		{name: "zone prefix in the schedule", schedule: "TZ=Asia/Tokyo 0 9 * * *", want: "1.5208128e+09"},
		{name: "Local zone is the time's zone", schedule: "0 */6 * * *", tz: ptr.To("Local"), want: "1.520748e+09"},
		{name: "unparseable: step not below range", schedule: "*/120 4-22 * * *", want: "invalid"},
		{name: "unparseable: step in a list", schedule: "0 1 */32,1-7 * 3", want: "invalid"},
		{name: "unparseable: */60 the API server accepts", schedule: "*/60 * * * *", want: "invalid"},
		{name: "step just below range", schedule: "*/59 * * * *", want: "1.52074434e+09"},
		{name: "invalid zone", schedule: "0 */6 * * *", tz: ptr.To("Invalid/Zone"), want: "invalid"},
		{name: "empty zone", schedule: "0 */6 * * *", tz: ptr.To(""), want: "invalid"},
		{name: "six fields", schedule: "0 0 */6 * * *", want: "invalid"},
		{name: "extended syntax", schedule: "0 0 L * *", want: "invalid"},
		{name: "hash syntax", schedule: "H * * * *", want: "invalid"},
		// Day of month AND day of week: the first 1st that is a Monday.
		{name: "dom and dow", schedule: "0 0 1 * 1", want: "1.538352e+09"},
		{name: "sunday as 7", schedule: "0 0 * * 7", want: "1.5213312e+09"},
		{name: "wrapping range", schedule: "0 22-2 * * *", want: "1.5208056e+09"},
		{name: "no time in five years", schedule: "0 0 30 2 *", want: never},
		{name: "empty field", schedule: ", * * * *", want: never},
		{name: "weekly", schedule: "@weekly", want: "1.5213312e+09"},
		{name: "hourly in a zone", schedule: "@hourly", tz: ptr.To("UTC"), want: "1.5207444e+09"},
		{name: "every", schedule: "@every 90s", want: "1.520742986e+09"},
		{name: "every below a second", schedule: "@every 500ms", want: "invalid"},
		{name: "triggered", schedule: "@triggered", want: never},
		{name: "descriptors are case-sensitive", schedule: "@HOURLY", want: "invalid"},
		// 02:30 does not exist on 2018-03-11 in New York: 03:30 EDT.
		{name: "spring forward", schedule: "30 2 * * *", tz: ptr.To("America/New_York"),
			last: &metav1.Time{Time: time.Unix(1520683200, 0).UTC()}, want: "1.5207534e+09"},
		{name: "creation time", schedule: "25 * * * *", last: &metav1.Time{}, created: cronCreated, want: "1.5207675e+09"},
		{name: "neither time", schedule: "25 * * * *", last: &metav1.Time{}, want: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			last := c.last
			if last == nil {
				last = &cronLastSchedule
			}
			cj := &batchv1.CronJob{
				ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "n", UID: "u", CreationTimestamp: c.created},
				Spec:       batchv1.CronJobSpec{Schedule: c.schedule, TimeZone: c.tz},
				Status:     batchv1.CronJobStatus{LastScheduleTime: last},
			}
			var want string
			switch c.want {
			case "invalid":
				want = `kube_cronjob_schedule_invalid{cronjob="c",namespace="n"} 1`
			case "":
			default:
				want = `kube_cronjob_next_schedule_time{cronjob="c",namespace="n"} ` + c.want
			}
			got := renderText(t, cronJobResource(), FamilyOptions{}, cj, "kube_cronjob_next_schedule_time", "kube_cronjob_schedule_invalid")
			requireGolden(t, want, got)
		})
	}
}
