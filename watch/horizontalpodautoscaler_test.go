package watch

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// hpaQuantity parses a quantity for a metric target or status.
func hpaQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// The cases of kube-state-metrics' horizontalpodautoscaler_test.go, plus a
// malformed autoscaler.
func TestHPAFamilies(t *testing.T) {
	created := metav1.NewTime(time.Unix(1500000000, 0))
	deleted := metav1.NewTime(time.Unix(1800000000, 0))
	object := func(name, v, avg string) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: name},
			Target: autoscalingv2.MetricTarget{Value: hpaQuantity(v), AverageValue: hpaQuantity(avg)},
		}}
	}
	res := func(name v1.ResourceName, t autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: name, Target: t}}
	}
	containerRes := func(name v1.ResourceName, container string, utilization int32) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
			Name: name, Container: container, Target: autoscalingv2.MetricTarget{AverageUtilization: ptr.To(utilization)},
		}}
	}
	external := func(name string, t autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: name}, Target: t,
		}}
	}
	resStatus := func(name v1.ResourceName, avg string, utilization int32) autoscalingv2.MetricStatus {
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: name, Current: autoscalingv2.MetricValueStatus{AverageValue: hpaQuantity(avg), AverageUtilization: ptr.To(utilization)},
		}}
	}
	containerStatus := func(name v1.ResourceName, container, avg string, utilization int32) autoscalingv2.MetricStatus {
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
			Name: name, Container: container, Current: autoscalingv2.MetricValueStatus{AverageValue: hpaQuantity(avg), AverageUtilization: ptr.To(utilization)},
		}}
	}
	externalStatus := func(name string, cur autoscalingv2.MetricValueStatus) autoscalingv2.MetricStatus {
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
			Metric: autoscalingv2.MetricIdentifier{Name: name}, Current: cur,
		}}
	}
	ableToScale := []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: v1.ConditionTrue, Reason: "reason"}}
	cases := []struct {
		name  string
		opts  FamilyOptions
		hpa   *autoscalingv2.HorizontalPodAutoscaler
		names []string
		want  string
	}{
		{
			name: "every metric source",
			hpa: &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{
					Name: "hpa1", Namespace: "ns1", UID: "u1", Generation: 2,
					CreationTimestamp: created, DeletionTimestamp: &deleted, Labels: map[string]string{"app": "foobar"},
				},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
					MaxReplicas: 4, MinReplicas: ptr.To[int32](2),
					Metrics: []autoscalingv2.MetricSpec{
						object("hits", "10", "12"),
						object("connections", "0.5", "0.7"),
						{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
							Metric: autoscalingv2.MetricIdentifier{Name: "transactions_processed"},
							Target: autoscalingv2.MetricTarget{AverageValue: hpaQuantity("33")},
						}},
						res("cpu", autoscalingv2.MetricTarget{AverageUtilization: ptr.To[int32](80)}),
						res("memory", autoscalingv2.MetricTarget{AverageValue: hpaQuantity("800Ki"), AverageUtilization: ptr.To[int32](80)}),
						containerRes("cpu", "container1", 80),
						res("disk", autoscalingv2.MetricTarget{}), // no target: no series
						external("sqs_jobs", autoscalingv2.MetricTarget{Value: hpaQuantity("30")}),
						external("events", autoscalingv2.MetricTarget{AverageValue: hpaQuantity("30")}),
					},
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "deployment1"},
				},
				Status: autoscalingv2.HorizontalPodAutoscalerStatus{
					CurrentReplicas: 2, DesiredReplicas: 2, Conditions: ableToScale,
					CurrentMetrics: []autoscalingv2.MetricStatus{resStatus("cpu", "7m", 80), resStatus("memory", "26335914666m", 80)},
				},
			},
			want: `
				kube_horizontalpodautoscaler_info{horizontalpodautoscaler="hpa1",namespace="ns1",scaletargetref_api_version="apps/v1",scaletargetref_kind="Deployment",scaletargetref_name="deployment1"} 1
				kube_horizontalpodautoscaler_metadata_generation{horizontalpodautoscaler="hpa1",namespace="ns1"} 2
				kube_horizontalpodautoscaler_spec_max_replicas{horizontalpodautoscaler="hpa1",namespace="ns1"} 4
				kube_horizontalpodautoscaler_spec_min_replicas{horizontalpodautoscaler="hpa1",namespace="ns1"} 2
				kube_horizontalpodautoscaler_spec_target_metric{container="container1",horizontalpodautoscaler="hpa1",metric_name="cpu",metric_target_type="utilization",namespace="ns1"} 80
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa1",metric_name="events",metric_target_type="average",namespace="ns1"} 30
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa1",metric_name="hits",metric_target_type="average",namespace="ns1"} 12
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa1",metric_name="hits",metric_target_type="value",namespace="ns1"} 10
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa1",metric_name="connections",metric_target_type="average",namespace="ns1"} 0.7
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa1",metric_name="connections",metric_target_type="value",namespace="ns1"} 0.5
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa1",metric_name="cpu",metric_target_type="utilization",namespace="ns1"} 80
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa1",metric_name="memory",metric_target_type="average",namespace="ns1"} 819200
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa1",metric_name="memory",metric_target_type="utilization",namespace="ns1"} 80
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa1",metric_name="sqs_jobs",metric_target_type="value",namespace="ns1"} 30
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa1",metric_name="transactions_processed",metric_target_type="average",namespace="ns1"} 33
				kube_horizontalpodautoscaler_status_target_metric{horizontalpodautoscaler="hpa1",metric_name="cpu",metric_target_type="average",namespace="ns1"} 0.007
				kube_horizontalpodautoscaler_status_target_metric{horizontalpodautoscaler="hpa1",metric_name="cpu",metric_target_type="utilization",namespace="ns1"} 80
				kube_horizontalpodautoscaler_status_target_metric{horizontalpodautoscaler="hpa1",metric_name="memory",metric_target_type="average",namespace="ns1"} 2.6335914666e+07
				kube_horizontalpodautoscaler_status_target_metric{horizontalpodautoscaler="hpa1",metric_name="memory",metric_target_type="utilization",namespace="ns1"} 80
				kube_horizontalpodautoscaler_status_condition{condition="AbleToScale",horizontalpodautoscaler="hpa1",namespace="ns1",status="false"} 0
				kube_horizontalpodautoscaler_status_condition{condition="AbleToScale",horizontalpodautoscaler="hpa1",namespace="ns1",status="true"} 1
				kube_horizontalpodautoscaler_status_condition{condition="AbleToScale",horizontalpodautoscaler="hpa1",namespace="ns1",status="unknown"} 0
				kube_horizontalpodautoscaler_status_current_replicas{horizontalpodautoscaler="hpa1",namespace="ns1"} 2
				kube_horizontalpodautoscaler_status_desired_replicas{horizontalpodautoscaler="hpa1",namespace="ns1"} 2
				kube_horizontalpodautoscaler_created{horizontalpodautoscaler="hpa1",namespace="ns1"} 1.5e+09
				kube_horizontalpodautoscaler_deletion_timestamp{horizontalpodautoscaler="hpa1",namespace="ns1"} 1.8e+09`,
		},
		{
			name: "default min replicas",
			hpa: &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Name: "hpa-default-min-replicas", Namespace: "ns1", UID: "u2"},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
					MaxReplicas:    3,
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "deployment-default-min"},
				},
			},
			names: []string{"kube_horizontalpodautoscaler_spec_min_replicas"},
			want:  `kube_horizontalpodautoscaler_spec_min_replicas{horizontalpodautoscaler="hpa-default-min-replicas",namespace="ns1"} 1`,
		},
		{
			name: "status of every source, annotations",
			opts: FamilyOptions{AnnotationsAllowlist: []string{"app.k8s.io/owner"}},
			hpa: &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{
					Name: "hpa2", Namespace: "ns1", UID: "u3", Generation: 2,
					CreationTimestamp: created, DeletionTimestamp: &deleted,
					Labels:      map[string]string{"app": "foobar"},
					Annotations: map[string]string{"app": "mysql-server", "app.k8s.io/owner": "@foo"},
				},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
					MaxReplicas: 4, MinReplicas: ptr.To[int32](2),
					Metrics: []autoscalingv2.MetricSpec{
						res("memory", autoscalingv2.MetricTarget{AverageUtilization: ptr.To[int32](75)}),
						res("cpu", autoscalingv2.MetricTarget{AverageUtilization: ptr.To[int32](80)}),
						external("traefik_backend_requests_per_second", autoscalingv2.MetricTarget{Value: hpaQuantity("100")}),
						external("traefik_backend_errors_per_second", autoscalingv2.MetricTarget{Value: hpaQuantity("100")}),
					},
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "deployment1"},
				},
				Status: autoscalingv2.HorizontalPodAutoscalerStatus{
					CurrentReplicas: 2, DesiredReplicas: 2, Conditions: ableToScale,
					CurrentMetrics: []autoscalingv2.MetricStatus{
						resStatus("memory", "847775744", 28),
						resStatus("cpu", "62m", 6),
						containerStatus("cpu", "container1", "80m", 10),
						externalStatus("traefik_backend_requests_per_second", autoscalingv2.MetricValueStatus{Value: hpaQuantity("0"), AverageValue: hpaQuantity("2900m")}),
						externalStatus("traefik_backend_errors_per_second", autoscalingv2.MetricValueStatus{Value: hpaQuantity("0")}),
					},
				},
			},
			want: `
				kube_horizontalpodautoscaler_info{horizontalpodautoscaler="hpa2",namespace="ns1",scaletargetref_kind="Deployment",scaletargetref_name="deployment1"} 1
				kube_horizontalpodautoscaler_annotations{annotation_app_k8s_io_owner="@foo",horizontalpodautoscaler="hpa2",namespace="ns1"} 1
				kube_horizontalpodautoscaler_metadata_generation{horizontalpodautoscaler="hpa2",namespace="ns1"} 2
				kube_horizontalpodautoscaler_spec_max_replicas{horizontalpodautoscaler="hpa2",namespace="ns1"} 4
				kube_horizontalpodautoscaler_spec_min_replicas{horizontalpodautoscaler="hpa2",namespace="ns1"} 2
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa2",metric_name="cpu",metric_target_type="utilization",namespace="ns1"} 80
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa2",metric_name="memory",metric_target_type="utilization",namespace="ns1"} 75
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa2",metric_name="traefik_backend_errors_per_second",metric_target_type="value",namespace="ns1"} 100
				kube_horizontalpodautoscaler_spec_target_metric{horizontalpodautoscaler="hpa2",metric_name="traefik_backend_requests_per_second",metric_target_type="value",namespace="ns1"} 100
				kube_horizontalpodautoscaler_status_target_metric{horizontalpodautoscaler="hpa2",metric_name="memory",metric_target_type="average",namespace="ns1"} 8.47775744e+08
				kube_horizontalpodautoscaler_status_target_metric{horizontalpodautoscaler="hpa2",metric_name="memory",metric_target_type="utilization",namespace="ns1"} 28
				kube_horizontalpodautoscaler_status_target_metric{horizontalpodautoscaler="hpa2",metric_name="cpu",metric_target_type="average",namespace="ns1"} 0.062
				kube_horizontalpodautoscaler_status_target_metric{horizontalpodautoscaler="hpa2",metric_name="cpu",metric_target_type="utilization",namespace="ns1"} 6
				kube_horizontalpodautoscaler_status_target_metric{container="container1",horizontalpodautoscaler="hpa2",metric_name="cpu",metric_target_type="average",namespace="ns1"} 0.08
				kube_horizontalpodautoscaler_status_target_metric{container="container1",horizontalpodautoscaler="hpa2",metric_name="cpu",metric_target_type="utilization",namespace="ns1"} 10
				kube_horizontalpodautoscaler_status_target_metric{horizontalpodautoscaler="hpa2",metric_name="traefik_backend_requests_per_second",metric_target_type="value",namespace="ns1"} 0
				kube_horizontalpodautoscaler_status_target_metric{horizontalpodautoscaler="hpa2",metric_name="traefik_backend_requests_per_second",metric_target_type="average",namespace="ns1"} 2.9
				kube_horizontalpodautoscaler_status_target_metric{horizontalpodautoscaler="hpa2",metric_name="traefik_backend_errors_per_second",metric_target_type="value",namespace="ns1"} 0
				kube_horizontalpodautoscaler_status_condition{condition="AbleToScale",horizontalpodautoscaler="hpa2",namespace="ns1",status="false"} 0
				kube_horizontalpodautoscaler_status_condition{condition="AbleToScale",horizontalpodautoscaler="hpa2",namespace="ns1",status="true"} 1
				kube_horizontalpodautoscaler_status_condition{condition="AbleToScale",horizontalpodautoscaler="hpa2",namespace="ns1",status="unknown"} 0
				kube_horizontalpodautoscaler_status_current_replicas{horizontalpodautoscaler="hpa2",namespace="ns1"} 2
				kube_horizontalpodautoscaler_status_desired_replicas{horizontalpodautoscaler="hpa2",namespace="ns1"} 2
				kube_horizontalpodautoscaler_created{horizontalpodautoscaler="hpa2",namespace="ns1"} 1.5e+09
				kube_horizontalpodautoscaler_deletion_timestamp{horizontalpodautoscaler="hpa2",namespace="ns1"} 1.8e+09`,
		},
		{
			name: "container resources of one name",
			hpa: &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Name: "hpa-container-resource", Namespace: "default", UID: "u4", Generation: 1, CreationTimestamp: created},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
					MaxReplicas: 10, MinReplicas: ptr.To[int32](1),
					Metrics:        []autoscalingv2.MetricSpec{containerRes("cpu", "main", 40), containerRes("cpu", "sidecar", 90), containerRes("memory", "main", 70)},
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "test-app"},
				},
				Status: autoscalingv2.HorizontalPodAutoscalerStatus{
					CurrentReplicas: 2, DesiredReplicas: 3,
					Conditions:     []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: v1.ConditionTrue}},
					CurrentMetrics: []autoscalingv2.MetricStatus{containerStatus("cpu", "main", "1442m", 24), containerStatus("cpu", "sidecar", "836m", 69)},
				},
			},
			want: `
				kube_horizontalpodautoscaler_info{horizontalpodautoscaler="hpa-container-resource",namespace="default",scaletargetref_api_version="apps/v1",scaletargetref_kind="Deployment",scaletargetref_name="test-app"} 1
				kube_horizontalpodautoscaler_metadata_generation{horizontalpodautoscaler="hpa-container-resource",namespace="default"} 1
				kube_horizontalpodautoscaler_spec_max_replicas{horizontalpodautoscaler="hpa-container-resource",namespace="default"} 10
				kube_horizontalpodautoscaler_spec_min_replicas{horizontalpodautoscaler="hpa-container-resource",namespace="default"} 1
				kube_horizontalpodautoscaler_spec_target_metric{container="main",horizontalpodautoscaler="hpa-container-resource",metric_name="cpu",metric_target_type="utilization",namespace="default"} 40
				kube_horizontalpodautoscaler_spec_target_metric{container="main",horizontalpodautoscaler="hpa-container-resource",metric_name="memory",metric_target_type="utilization",namespace="default"} 70
				kube_horizontalpodautoscaler_spec_target_metric{container="sidecar",horizontalpodautoscaler="hpa-container-resource",metric_name="cpu",metric_target_type="utilization",namespace="default"} 90
				kube_horizontalpodautoscaler_status_target_metric{container="main",horizontalpodautoscaler="hpa-container-resource",metric_name="cpu",metric_target_type="average",namespace="default"} 1.442
				kube_horizontalpodautoscaler_status_target_metric{container="main",horizontalpodautoscaler="hpa-container-resource",metric_name="cpu",metric_target_type="utilization",namespace="default"} 24
				kube_horizontalpodautoscaler_status_target_metric{container="sidecar",horizontalpodautoscaler="hpa-container-resource",metric_name="cpu",metric_target_type="average",namespace="default"} 0.836
				kube_horizontalpodautoscaler_status_target_metric{container="sidecar",horizontalpodautoscaler="hpa-container-resource",metric_name="cpu",metric_target_type="utilization",namespace="default"} 69
				kube_horizontalpodautoscaler_status_condition{condition="AbleToScale",horizontalpodautoscaler="hpa-container-resource",namespace="default",status="false"} 0
				kube_horizontalpodautoscaler_status_condition{condition="AbleToScale",horizontalpodautoscaler="hpa-container-resource",namespace="default",status="true"} 1
				kube_horizontalpodautoscaler_status_condition{condition="AbleToScale",horizontalpodautoscaler="hpa-container-resource",namespace="default",status="unknown"} 0
				kube_horizontalpodautoscaler_status_current_replicas{horizontalpodautoscaler="hpa-container-resource",namespace="default"} 2
				kube_horizontalpodautoscaler_status_desired_replicas{horizontalpodautoscaler="hpa-container-resource",namespace="default"} 3
				kube_horizontalpodautoscaler_created{horizontalpodautoscaler="hpa-container-resource",namespace="default"} 1.5e+09`,
		},
		{
			name: "behavior tolerances",
			hpa: &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Name: "hpa1", Namespace: "ns1", UID: "u5"},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
					MaxReplicas: 4,
					Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
						ScaleUp:   &autoscalingv2.HPAScalingRules{Tolerance: hpaQuantity("0.5")},
						ScaleDown: &autoscalingv2.HPAScalingRules{Tolerance: hpaQuantity("0.25")},
					},
				},
			},
			names: []string{"kube_horizontalpodautoscaler_spec_behavior_scale_up_tolerance", "kube_horizontalpodautoscaler_spec_behavior_scale_down_tolerance"},
			want: `
				kube_horizontalpodautoscaler_spec_behavior_scale_down_tolerance{horizontalpodautoscaler="hpa1",namespace="ns1"} 0.25
				kube_horizontalpodautoscaler_spec_behavior_scale_up_tolerance{horizontalpodautoscaler="hpa1",namespace="ns1"} 0.5`,
		},
		{
			// Metric types without their source (status is not validated),
			// unknown types, behavior without rules, conditions without
			// anything: skipped or rendered, never a panic.
			name: "malformed",
			opts: FamilyOptions{LabelsAllowlist: []string{"*"}},
			hpa: &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{UID: "u0", DeletionTimestamp: &metav1.Time{}},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
					Metrics: []autoscalingv2.MetricSpec{
						{Type: autoscalingv2.ObjectMetricSourceType}, {Type: autoscalingv2.PodsMetricSourceType},
						{Type: autoscalingv2.ResourceMetricSourceType}, {Type: autoscalingv2.ContainerResourceMetricSourceType},
						{Type: autoscalingv2.ExternalMetricSourceType}, {Type: "Other"}, {},
					},
					Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{}},
				},
				Status: autoscalingv2.HorizontalPodAutoscalerStatus{
					Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{}},
					CurrentMetrics: []autoscalingv2.MetricStatus{
						{Type: autoscalingv2.ObjectMetricSourceType}, {Type: autoscalingv2.PodsMetricSourceType},
						{Type: autoscalingv2.ResourceMetricSourceType}, {Type: autoscalingv2.ContainerResourceMetricSourceType},
						{Type: autoscalingv2.ExternalMetricSourceType}, {Type: "Other", Resource: &autoscalingv2.ResourceMetricStatus{Name: "cpu"}}, {},
					},
				},
			},
			want: `
				kube_horizontalpodautoscaler_info{} 1
				kube_horizontalpodautoscaler_labels{} 1
				kube_horizontalpodautoscaler_metadata_generation{} 0
				kube_horizontalpodautoscaler_spec_max_replicas{} 0
				kube_horizontalpodautoscaler_spec_min_replicas{} 1
				kube_horizontalpodautoscaler_status_condition{status="false"} 0
				kube_horizontalpodautoscaler_status_condition{status="true"} 0
				kube_horizontalpodautoscaler_status_condition{status="unknown"} 0
				kube_horizontalpodautoscaler_status_current_replicas{} 0
				kube_horizontalpodautoscaler_status_desired_replicas{} 0`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, hpaResource(), c.opts, c.hpa, c.names...))
		})
	}
}
