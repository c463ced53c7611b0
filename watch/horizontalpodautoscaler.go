package watch

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// hpaResource describes horizontal pod autoscalers (autoscaling/v2):
// kube-state-metrics' internal/store/horizontalpodautoscaler.go.
func hpaResource() *Resource {
	return newResource("horizontalpodautoscalers", true, &autoscalingv2.HorizontalPodAutoscaler{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Watch(ctx, o)
		},
		func(a *autoscalingv2.HorizontalPodAutoscaler, e *Emitter) {
			e.Identity("namespace", a.Namespace, "horizontalpodautoscaler", a.Name)
		},
		hpaFamilies,
	)
}

// hpaFamilies lists the autoscaler families, in kube-state-metrics' order,
// then the v1 families the options name.
func hpaFamilies(o FamilyOptions) []Family[*autoscalingv2.HorizontalPodAutoscaler] {
	type H = *autoscalingv2.HorizontalPodAutoscaler
	return append([]Family[H]{
		{
			Name: "kube_horizontalpodautoscaler_info", Help: "Information about this autoscaler.",
			Type: Gauge, Stability: Alpha,
			Generate: func(a H, e *Emitter) {
				ref := &a.Spec.ScaleTargetRef
				e.Emit(1, "scaletargetref_api_version", ref.APIVersion, "scaletargetref_kind", ref.Kind, "scaletargetref_name", ref.Name)
			},
		},
		{
			Name: "kube_horizontalpodautoscaler_metadata_generation", Help: "The generation observed by the HorizontalPodAutoscaler controller.",
			Type: Gauge, Stability: Stable,
			Generate: emitObjectGeneration[H],
		},
		{
			Name: "kube_horizontalpodautoscaler_spec_max_replicas", Help: "Upper limit for the number of pods that can be set by the autoscaler; cannot be smaller than MinReplicas.",
			Type: Gauge, Stability: Stable,
			Generate: func(a H, e *Emitter) { e.Emit(float64(a.Spec.MaxReplicas)) },
		},
		{
			Name: "kube_horizontalpodautoscaler_spec_min_replicas", Help: "Lower limit for the number of pods that can be set by the autoscaler, default 1.",
			Type: Gauge, Stability: Stable,
			Generate: func(a H, e *Emitter) {
				replicas := int32(1) // the API default
				if a.Spec.MinReplicas != nil {
					replicas = *a.Spec.MinReplicas
				}
				e.Emit(float64(replicas))
			},
		},
		{
			Name: "kube_horizontalpodautoscaler_spec_target_metric", Help: "The metric specifications used by this autoscaler when calculating the desired replica count.",
			Type: Gauge, Stability: Alpha, Generate: hpaSpecTargets,
		},
		{
			Name: "kube_horizontalpodautoscaler_spec_behavior_scale_down_tolerance", Help: "The tolerance on the ratio between the current and desired metric value below which no scale down occurs.",
			Type: Gauge, Stability: Alpha,
			Generate: func(a H, e *Emitter) {
				if b := a.Spec.Behavior; b != nil {
					emitHPATolerance(e, b.ScaleDown)
				}
			},
		},
		{
			Name: "kube_horizontalpodautoscaler_spec_behavior_scale_up_tolerance", Help: "The tolerance on the ratio between the current and desired metric value below which no scale up occurs.",
			Type: Gauge, Stability: Alpha,
			Generate: func(a H, e *Emitter) {
				if b := a.Spec.Behavior; b != nil {
					emitHPATolerance(e, b.ScaleUp)
				}
			},
		},
		{
			Name: "kube_horizontalpodautoscaler_status_target_metric", Help: "The current metric status used by this autoscaler when calculating the desired replica count.",
			Type: Gauge, Stability: Stable, Generate: hpaStatusTargets,
		},
		{
			Name: "kube_horizontalpodautoscaler_status_current_replicas", Help: "Current number of replicas of pods managed by this autoscaler.",
			Type: Gauge, Stability: Stable,
			Generate: func(a H, e *Emitter) { e.Emit(float64(a.Status.CurrentReplicas)) },
		},
		{
			Name: "kube_horizontalpodautoscaler_status_desired_replicas", Help: "Desired number of replicas of pods managed by this autoscaler.",
			Type: Gauge, Stability: Stable,
			Generate: func(a H, e *Emitter) { e.Emit(float64(a.Status.DesiredReplicas)) },
		},
		{
			Name: "kube_horizontalpodautoscaler_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[H], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_horizontalpodautoscaler_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[H], o.LabelsAllowlist),
		},
		{
			Name: "kube_horizontalpodautoscaler_status_condition", Help: "The condition of this autoscaler.",
			Type: Gauge, Stability: Stable,
			Generate: func(a H, e *Emitter) {
				for _, c := range a.Status.Conditions {
					emitConditionStatus(e, c.Status, "condition", string(c.Type))
				}
			},
		},
		{
			Name: "kube_horizontalpodautoscaler_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitCreated[H],
		},
		{
			Name: "kube_horizontalpodautoscaler_deletion_timestamp", Help: "Unix deletion timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitDeletionTimestamp[H],
		},
	}, legacyV1(o, hpaLegacyV1Families)...)
}

// emitHPATolerance renders the tolerance of scaling rules, when set.
func emitHPATolerance(e *Emitter, r *autoscalingv2.HPAScalingRules) {
	if r != nil && r.Tolerance != nil {
		e.Emit(r.Tolerance.AsApproximateFloat64())
	}
}

// hpaMetric is the part of a metric spec or status the target families
// render: which metric, and its value, average value and average
// utilization (each optional).
type hpaMetric struct {
	name, container string
	value, average  *resource.Quantity
	utilization     *int32
}

func hpaSpecTargets(a *autoscalingv2.HorizontalPodAutoscaler, e *Emitter) {
	for i := range a.Spec.Metrics {
		if m, ok := hpaSpecMetric(&a.Spec.Metrics[i]); ok {
			m.emit(e)
		}
	}
}

func hpaStatusTargets(a *autoscalingv2.HorizontalPodAutoscaler, e *Emitter) {
	for i := range a.Status.CurrentMetrics {
		if m, ok := hpaStatusMetric(&a.Status.CurrentMetrics[i]); ok {
			m.emit(e)
		}
	}
}

// hpaSpecMetric returns a spec.metrics entry's name and target, and false
// for an unknown type or a type whose source is missing (the API server
// rejects those; they are skipped rather than dereferenced).
func hpaSpecMetric(m *autoscalingv2.MetricSpec) (hpaMetric, bool) {
	switch {
	case m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil:
		return hpaTarget(m.Object.Metric.Name, "", &m.Object.Target), true
	case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
		return hpaTarget(m.Pods.Metric.Name, "", &m.Pods.Target), true
	case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil:
		return hpaTarget(string(m.Resource.Name), "", &m.Resource.Target), true
	case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
		return hpaTarget(string(m.ContainerResource.Name), m.ContainerResource.Container, &m.ContainerResource.Target), true
	case m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil:
		return hpaTarget(m.External.Metric.Name, "", &m.External.Target), true
	}
	return hpaMetric{}, false
}

// hpaStatusMetric is hpaSpecMetric for status.currentMetrics, which the API
// server does not validate: a type without its source does occur.
func hpaStatusMetric(m *autoscalingv2.MetricStatus) (hpaMetric, bool) {
	switch {
	case m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil:
		return hpaCurrent(m.Object.Metric.Name, "", &m.Object.Current), true
	case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
		return hpaCurrent(m.Pods.Metric.Name, "", &m.Pods.Current), true
	case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil:
		return hpaCurrent(string(m.Resource.Name), "", &m.Resource.Current), true
	case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
		return hpaCurrent(string(m.ContainerResource.Name), m.ContainerResource.Container, &m.ContainerResource.Current), true
	case m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil:
		return hpaCurrent(m.External.Metric.Name, "", &m.External.Current), true
	}
	return hpaMetric{}, false
}

func hpaTarget(name, container string, t *autoscalingv2.MetricTarget) hpaMetric {
	return hpaMetric{name: name, container: container, value: t.Value, average: t.AverageValue, utilization: t.AverageUtilization}
}

func hpaCurrent(name, container string, v *autoscalingv2.MetricValueStatus) hpaMetric {
	return hpaMetric{name: name, container: container, value: v.Value, average: v.AverageValue, utilization: v.AverageUtilization}
}

// emit renders one series per value set, in metric_target_type.
func (m hpaMetric) emit(e *Emitter) {
	series := func(v float64, kind string) {
		e.Emit(v, "metric_name", m.name, "metric_target_type", kind, "container", m.container)
	}
	if m.value != nil {
		series(quantityFloat(m.value), "value")
	}
	if m.utilization != nil {
		series(float64(*m.utilization), "utilization")
	}
	if m.average != nil {
		series(quantityFloat(m.average), "average")
	}
}
