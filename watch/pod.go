package watch

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// podResource describes pods: kube-state-metrics' internal/store/pod.go.
func podResource() *Resource {
	return newResource("pods", true, &v1.Pod{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CoreV1().Pods(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CoreV1().Pods(ns).Watch(ctx, o)
		},
		func(p *v1.Pod, e *Emitter) {
			e.Identity("namespace", p.Namespace, "pod", p.Name, "uid", string(p.UID))
		},
		podFamilies,
	)
}

// podFamilies lists the pod families: the pod-level ones of
// podStatusFamilies, then the v1 families the options name.
func podFamilies(o FamilyOptions) []Family[*v1.Pod] {
	fs := append(podContainerFamilies(o), podStatusFamilies(o)...)
	return append(fs, legacyV1(o, podLegacyV1Families)...)
}

// podStatusFamilies lists the pod families that are not about containers:
// kube-state-metrics' podMetricFamilies from kube_pod_created on, without
// kube_pod_completion_time and the container and init-container families.
func podStatusFamilies(o FamilyOptions) []Family[*v1.Pod] {
	return []Family[*v1.Pod]{
		{
			Name: "kube_pod_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[*v1.Pod],
		},
		{
			Name: "kube_pod_deletion_timestamp", Help: "Unix deletion timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitDeletionTimestamp[*v1.Pod],
		},
		{
			Name: "kube_pod_info", Help: "Information about pod.",
			Type: Gauge, Stability: Stable, Generate: podInfo,
		},
		{
			Name: "kube_pod_ips", Help: "Pod IP addresses",
			Type: Gauge, Stability: Alpha, Generate: podIPs,
		},
		{
			Name: "kube_pod_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[*v1.Pod], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_pod_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[*v1.Pod], o.LabelsAllowlist),
		},
		{
			Name: "kube_pod_overhead_cpu_cores", Help: "The pod overhead in regards to cpu cores associated with running a pod.",
			Type: Gauge, Stability: Alpha, Generate: podOverhead(v1.ResourceCPU, quantityFloat),
		},
		{
			// Memory overhead is whole bytes (Value rounds up), not the
			// milli-unit conversion of quantityFloat.
			Name: "kube_pod_overhead_memory_bytes", Help: "The pod overhead in regards to memory associated with running a pod.",
			Type: Gauge, Stability: Alpha,
			Generate: podOverhead(v1.ResourceMemory, func(q *resource.Quantity) float64 { return float64(q.Value()) }),
		},
		{
			Name: "kube_pod_owner", Help: "Information about the Pod's owner.",
			Type: Gauge, Stability: Stable, Generate: emitOwners[*v1.Pod],
		},
		{
			Name: "kube_pod_resourceclaim_info", Help: "Information about a DRA ResourceClaim referenced by a pod, one series per pod.spec.resourceClaims entry; claim_name is the pod-local reference and resourceclaim_name is the resolved ResourceClaim object name.",
			Type: Gauge, Stability: Alpha, Generate: podResourceClaims,
		},
		{
			Name: "kube_pod_restart_policy", Help: "Describes the restart policy in use by this pod.",
			Type: Gauge, Stability: Stable,
			Generate: func(p *v1.Pod, e *Emitter) { e.Emit(1, "type", string(p.Spec.RestartPolicy)) },
		},
		{
			Name: "kube_pod_runtimeclass_name_info", Help: "The runtimeclass associated with the pod.",
			Type: Gauge, Stability: Alpha, Generate: podRuntimeClass,
		},
		{
			Name: "kube_pod_spec_volumes_persistentvolumeclaims_info", Help: "Information about persistentvolumeclaim and ephemeral volumes in a pod.",
			Type: Gauge, Stability: Stable,
			Generate: podVolumeClaims(func(bool) float64 { return 1 }),
		},
		{
			Name: "kube_pod_spec_volumes_persistentvolumeclaims_readonly", Help: "Describes whether a persistentvolumeclaim is mounted read only. Ephemeral volumes always report 0 since the ephemeral volume source does not support a read-only flag.",
			Type: Gauge, Stability: Stable, Generate: podVolumeClaims(boolFloat64),
		},
		{
			Name: "kube_pod_start_time", Help: "Start time in unix timestamp for a pod.",
			Type: Gauge, Stability: Stable, Generate: podStartTime,
		},
		{
			Name: "kube_pod_status_phase", Help: "The pods current phase.",
			Type: Gauge, Stability: Stable,
			Generate: func(p *v1.Pod, e *Emitter) { emitOneOf(e, "phase", p.Status.Phase, podPhases) },
		},
		{
			Name: "kube_pod_status_qos_class", Help: "The pods current qosClass.",
			Type: Gauge, Stability: Alpha,
			Generate: func(p *v1.Pod, e *Emitter) { emitOneOf(e, "qos_class", p.Status.QOSClass, podQOSClasses) },
		},
		{
			Name: "kube_pod_status_ready", Help: "Describes whether the pod is ready to serve requests.",
			Type: Gauge, Stability: Stable, Generate: podConditionStatus(v1.PodReady),
		},
		{
			Name: "kube_pod_status_ready_time", Help: "Readiness achieved time in unix timestamp for a pod.",
			Type: Gauge, Stability: Alpha, Generate: podConditionTime(v1.PodReady, v1.ConditionTrue),
		},
		{
			Name: "kube_pod_status_initialized_time", Help: "Initialized time in unix timestamp for a pod.",
			Type: Gauge, Stability: Alpha, Generate: podConditionTime(v1.PodInitialized, v1.ConditionTrue),
		},
		{
			Name: "kube_pod_status_container_ready_time", Help: "Readiness achieved time in unix timestamp for a pod containers.",
			Type: Gauge, Stability: Alpha, Generate: podConditionTime(v1.ContainersReady, v1.ConditionTrue),
		},
		{
			Name: "kube_pod_status_reason", Help: "The pod status reasons",
			Type: Gauge, Stability: Alpha, Generate: podStatusReason,
		},
		{
			Name: "kube_pod_status_disruption_reason", Help: "The pod disruption condition reason",
			Type: Gauge, Stability: Alpha, Generate: podDisruptionReason,
		},
		{
			Name: "kube_pod_status_scheduled", Help: "Describes the status of the scheduling process for the pod.",
			Type: Gauge, Stability: Stable, Generate: podConditionStatus(v1.PodScheduled),
		},
		{
			Name: "kube_pod_status_scheduled_time", Help: "Unix timestamp when pod moved into scheduled status",
			Type: Gauge, Stability: Stable, Generate: podConditionTime(v1.PodScheduled, v1.ConditionTrue),
		},
		{
			Name: "kube_pod_status_unschedulable", Help: "Describes the unschedulable status for the pod.",
			Type: Gauge, Stability: Stable,
			Generate: podConditionSeries(v1.PodScheduled, v1.ConditionFalse, func(*v1.PodCondition) float64 { return 1 }),
		},
		{
			Name: "kube_pod_status_unscheduled_time", Help: "Unix timestamp when pod moved into unscheduled status",
			Type: Gauge, Stability: Alpha, Generate: podConditionTime(v1.PodScheduled, v1.ConditionFalse),
		},
		{
			Name: "kube_pod_tolerations", Help: "Information about the pod tolerations",
			Type: Gauge, Stability: Alpha, Generate: podTolerations,
		},
		{
			Name: "kube_pod_nodeselectors", Help: "Describes the Pod nodeSelectors.",
			Type: Gauge, Stability: Alpha, OptIn: true, Generate: podNodeSelectors,
		},
		{
			Name: "kube_pod_service_account", Help: "The service account for a pod.",
			Type: Gauge, Stability: Alpha,
			Generate: func(p *v1.Pod, e *Emitter) { e.Emit(1, "service_account", p.Spec.ServiceAccountName) },
		},
		{
			Name: "kube_pod_scheduler", Help: "The scheduler for a pod.",
			Type: Gauge, Stability: Alpha,
			Generate: func(p *v1.Pod, e *Emitter) { e.Emit(1, "name", p.Spec.SchedulerName) },
		},
	}
}

var (
	// podPhases and podQOSClasses are the states of kube_pod_status_phase
	// and kube_pod_status_qos_class, in kube-state-metrics' order.
	podPhases     = []v1.PodPhase{v1.PodPending, v1.PodSucceeded, v1.PodFailed, v1.PodUnknown, v1.PodRunning}
	podQOSClasses = []v1.PodQOSClass{v1.PodQOSBestEffort, v1.PodQOSBurstable, v1.PodQOSGuaranteed}
	// podStatusReasons are the reasons kube_pod_status_reason reports by
	// name; any other pod status reason is reported as "Other".
	podStatusReasons = []string{
		"Evicted", "NodeAffinity", "NodeLost", v1.PodReasonPreemptionByScheduler, v1.PodReasonSchedulingGated,
		"Shutdown", v1.PodReasonTerminationByKubelet, "UnexpectedAdmissionError",
	}
	// podDisruptionReasons are the DisruptionTarget condition reasons
	// kube_pod_status_disruption_reason reports by name; others are "Other".
	podDisruptionReasons = []string{
		v1.PodReasonPreemptionByScheduler, "DeletionByTaintManager", "EvictionByEvictionAPI",
		"DeletionByPodGC", v1.PodReasonTerminationByKubelet,
	}
)

// podOtherReason stands for reasons outside podStatusReasons and
// podDisruptionReasons.
const podOtherReason = "Other"

// podStartTime renders the start time whenever it is set, even to the zero
// time, as kube-state-metrics does.
func podStartTime(p *v1.Pod, e *Emitter) {
	if t := p.Status.StartTime; t != nil {
		e.Emit(timestampSeconds(*t))
	}
}

func podInfo(p *v1.Pod, e *Emitter) {
	var kind, name string
	if c := metav1.GetControllerOf(p); c != nil {
		kind, name = c.Kind, c.Name
	}
	e.Emit(1,
		"host_ip", p.Status.HostIP,
		"pod_ip", p.Status.PodIP,
		"node", p.Spec.NodeName,
		"created_by_kind", kind,
		"created_by_name", name,
		"priority_class", p.Spec.PriorityClassName,
		"host_network", strconv.FormatBool(p.Spec.HostNetwork),
	)
}

// podIPs renders one series per parseable pod IP with its family; an
// IPv4-mapped IPv6 address counts as IPv4.
func podIPs(p *v1.Pod, e *Emitter) {
	for _, ip := range p.Status.PodIPs {
		addr, err := netip.ParseAddr(ip.IP)
		if err != nil {
			continue
		}
		family := "6"
		if addr.Unmap().Is4() {
			family = "4"
		}
		e.Emit(1, "ip", ip.IP, "ip_family", family)
	}
}

// podOverhead renders the pod overhead of one resource, converted by value.
func podOverhead(name v1.ResourceName, value func(*resource.Quantity) float64) func(*v1.Pod, *Emitter) {
	return func(p *v1.Pod, e *Emitter) {
		if q, ok := p.Spec.Overhead[name]; ok {
			e.Emit(value(&q))
		}
	}
}

// podResourceClaims renders one series per spec.resourceClaims entry that
// names a claim or a claim template. A template-backed claim takes its
// object name from status, and has none while the claim is being created.
func podResourceClaims(p *v1.Pod, e *Emitter) {
	for _, rc := range p.Spec.ResourceClaims {
		var claim, template string
		switch {
		case rc.ResourceClaimName != nil:
			claim = *rc.ResourceClaimName
		case rc.ResourceClaimTemplateName == nil:
			continue
		default:
			claim = podResolvedClaimName(p, rc.Name)
		}
		if rc.ResourceClaimTemplateName != nil {
			template = *rc.ResourceClaimTemplateName
		}
		e.Emit(1, "claim_name", rc.Name, "resourceclaim_name", claim, "resourceclaim_template_name", template)
	}
}

// podResolvedClaimName returns the ResourceClaim name that status gives the
// pod's claim reference, or "" if it has none yet.
func podResolvedClaimName(p *v1.Pod, ref string) string {
	name := ""
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.Name == ref && s.ResourceClaimName != nil {
			name = *s.ResourceClaimName
		}
	}
	return name
}

func podRuntimeClass(p *v1.Pod, e *Emitter) {
	if rc := p.Spec.RuntimeClassName; rc != nil {
		e.Emit(1, "runtimeclass_name", *rc)
	}
}

// podVolumeClaims renders one series per persistentvolumeclaim or ephemeral
// volume, valued by value(readOnly). Ephemeral volumes name the claim the
// ephemeral volume controller creates (<pod>-<volume>) and are never
// read-only.
func podVolumeClaims(value func(readOnly bool) float64) func(*v1.Pod, *Emitter) {
	return func(p *v1.Pod, e *Emitter) {
		for _, v := range p.Spec.Volumes {
			switch {
			case v.PersistentVolumeClaim != nil:
				e.Emit(value(v.PersistentVolumeClaim.ReadOnly),
					"volume", v.Name, "persistentvolumeclaim", v.PersistentVolumeClaim.ClaimName, "ephemeral", "false")
			case v.Ephemeral != nil:
				e.Emit(value(false), "volume", v.Name, "persistentvolumeclaim", p.Name+"-"+v.Name, "ephemeral", "true")
			}
		}
	}
}

// podConditionStatus renders every condition of type t as a state set over
// the condition statuses, in the `condition` label.
func podConditionStatus(t v1.PodConditionType) func(*v1.Pod, *Emitter) {
	return func(p *v1.Pod, e *Emitter) {
		for _, c := range p.Status.Conditions {
			if c.Type != t {
				continue
			}
			for _, s := range conditionStatuses {
				e.Emit(boolFloat64(c.Status == s), "condition", strings.ToLower(string(s)))
			}
		}
	}
}

// podConditionSeries renders one series, valued by value, per condition of
// type t with status s.
func podConditionSeries(t v1.PodConditionType, s v1.ConditionStatus, value func(*v1.PodCondition) float64) func(*v1.Pod, *Emitter) {
	return func(p *v1.Pod, e *Emitter) {
		for i := range p.Status.Conditions {
			if c := &p.Status.Conditions[i]; c.Type == t && c.Status == s {
				e.Emit(value(c))
			}
		}
	}
}

// podConditionTime renders the last transition time of every condition of
// type t with status s.
func podConditionTime(t v1.PodConditionType, s v1.ConditionStatus) func(*v1.Pod, *Emitter) {
	return podConditionSeries(t, s, func(c *v1.PodCondition) float64 { return timestampSeconds(c.LastTransitionTime) })
}

// podStatusReason renders each known reason the pod shows (in its status, a
// condition or a terminated container) and "Other" for an unknown status
// reason. Unknown condition and container reasons are not reported.
func podStatusReason(p *v1.Pod, e *Emitter) {
	for _, r := range podStatusReasons {
		if podHasReason(p, r) {
			e.Emit(1, "reason", r)
		}
	}
	if r := p.Status.Reason; r != "" && !slices.Contains(podStatusReasons, r) {
		e.Emit(1, "reason", podOtherReason)
	}
}

// podHasReason reports whether the pod's status, one of its conditions or
// one of its terminated containers gives reason.
func podHasReason(p *v1.Pod, reason string) bool {
	if p.Status.Reason == reason {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Reason == reason {
			return true
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.Reason == reason {
			return true
		}
	}
	return false
}

// podDisruptionReason renders the reason of every DisruptionTarget
// condition, "Other" for reasons it does not know.
func podDisruptionReason(p *v1.Pod, e *Emitter) {
	for _, c := range p.Status.Conditions {
		if c.Type != v1.DisruptionTarget {
			continue
		}
		r := c.Reason
		if !slices.Contains(podDisruptionReasons, r) {
			r = podOtherReason
		}
		e.Emit(1, "reason", r)
	}
}

// podToleration is a toleration's labels, which also identify it: repeated
// tolerations render once.
type podToleration struct {
	key, operator, value, effect, seconds string
}

func podTolerations(p *v1.Pod, e *Emitter) {
	seen := make(map[podToleration]struct{}, len(p.Spec.Tolerations))
	for _, t := range p.Spec.Tolerations {
		l := podToleration{key: t.Key, operator: string(t.Operator), value: t.Value, effect: string(t.Effect)}
		if t.TolerationSeconds != nil {
			l.seconds = strconv.FormatInt(*t.TolerationSeconds, 10)
		}
		if _, dup := seen[l]; dup {
			continue
		}
		seen[l] = struct{}{}
		e.Emit(1, "key", l.key, "operator", l.operator, "value", l.value, "effect", l.effect, "toleration_seconds", l.seconds)
	}
}

// podNodeSelectors renders one series carrying every node selector, even
// when there is none.
func podNodeSelectors(p *v1.Pod, e *Emitter) {
	keys, values := mapToPrometheusLabels("nodeselector", p.Spec.NodeSelector)
	e.EmitKV(1, keys, values)
}
