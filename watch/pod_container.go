package watch

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podContainerFamilies returns kube-state-metrics' pod families about
// containers (internal/store/pod.go): kube_pod_completion_time, the
// kube_pod_container_* families and the kube_pod_init_container_* families,
// each group in kube-state-metrics' order. (kube-state-metrics lists
// kube_pod_created, kube_pod_deletion_timestamp, kube_pod_info and
// kube_pod_ips between the last two groups; podFamilies owns those.)
func podContainerFamilies(FamilyOptions) []Family[*v1.Pod] {
	fs := make([]Family[*v1.Pod], 0, 29)
	fs = append(fs, Family[*v1.Pod]{
		Name:      "kube_pod_completion_time",
		Help:      "Completion time in unix timestamp for a pod.",
		Type:      Gauge,
		Stability: Stable,
		Generate:  generatePodCompletionTime,
	})
	fs = append(fs, podContainers.families()...)
	return append(fs, podInitContainers.families()...)
}

// generatePodCompletionTime renders the latest finish time of the pod's
// terminated regular containers (init containers do not count), if it is
// after the epoch; a pod with none has no series.
func generatePodCompletionTime(p *v1.Pod, e *Emitter) {
	var last float64
	for i := range p.Status.ContainerStatuses {
		if t := p.Status.ContainerStatuses[i].State.Terminated; t != nil {
			last = max(last, timestampSeconds(t.FinishedAt))
		}
	}
	if last > 0 {
		e.Emit(last)
	}
}

// containerKind is one of a pod's container lists (regular or init
// containers). kube-state-metrics renders the same fourteen families for
// each, differing in name prefix, help wording and some stability levels.
type containerKind struct {
	// prefix starts every family name, e.g. kube_pod_container.
	prefix string
	// noun names the container in help text ("container", "init
	// container"); article is "a" or "an" before it.
	noun, article string
	// restartsHelp is the help of the restarts counter, which does not follow
	// the common wording.
	restartsHelp string
	// schedulerHint adds kube-state-metrics' advice to prefer
	// kube-scheduler's kube_pod_resource_* metrics to the resource help.
	schedulerHint bool
	// restartPolicyLabel adds the container's restart_policy to the info
	// family (set on restartable init containers, i.e. sidecars).
	restartPolicyLabel bool
	// promoted is the stability of the families that are stable for regular
	// containers only: resource limits and requests, state_started and
	// status_waiting_reason.
	promoted Stability
	// specs and statuses select the container list and its statuses.
	specs    func(p *v1.Pod) []v1.Container
	statuses func(p *v1.Pod) []v1.ContainerStatus
}

var (
	podContainers = containerKind{
		prefix:        "kube_pod_container",
		noun:          "container",
		article:       "a",
		restartsHelp:  "The number of container restarts per container.",
		schedulerHint: true,
		promoted:      Stable,
		specs:         func(p *v1.Pod) []v1.Container { return p.Spec.Containers },
		statuses:      func(p *v1.Pod) []v1.ContainerStatus { return p.Status.ContainerStatuses },
	}
	podInitContainers = containerKind{
		prefix:             "kube_pod_init_container",
		noun:               "init container",
		article:            "an",
		restartsHelp:       "The number of restarts for the init container.",
		restartPolicyLabel: true,
		promoted:           Alpha,
		specs:              func(p *v1.Pod) []v1.Container { return p.Spec.InitContainers },
		statuses:           func(p *v1.Pod) []v1.ContainerStatus { return p.Status.InitContainerStatuses },
	}
)

// families returns the kind's families in kube-state-metrics' order.
func (k containerKind) families() []Family[*v1.Pod] {
	return []Family[*v1.Pod]{
		k.family("info", "Information about "+k.article+" "+k.noun+" in a pod.", Gauge, Stable, k.generateInfo),
		k.resourceFamily("limits", "limit", func(c *v1.Container) v1.ResourceList { return c.Resources.Limits }),
		k.resourceFamily("requests", "request", func(c *v1.Container) v1.ResourceList { return c.Resources.Requests }),
		k.family("state_started", "Start time in unix timestamp for a pod "+k.noun+".", Gauge, k.promoted,
			k.perStatus(func(cs *v1.ContainerStatus) (float64, bool) {
				switch {
				case cs.State.Running != nil:
					return timestampSeconds(cs.State.Running.StartedAt), true
				case cs.State.Terminated != nil:
					return timestampSeconds(cs.State.Terminated.StartedAt), true
				}
				return 0, false
			})),
		k.family("status_last_terminated_reason", "Describes the last reason the "+k.noun+" was in terminated state.", Gauge, Alpha,
			k.perStatusReason(func(cs *v1.ContainerStatus) (string, bool) {
				if t := cs.LastTerminationState.Terminated; t != nil {
					return t.Reason, true
				}
				return "", false
			})),
		k.family("status_last_terminated_exitcode", "Describes the exit code for the last "+k.noun+" in terminated state.", Gauge, Alpha,
			k.perStatus(func(cs *v1.ContainerStatus) (float64, bool) {
				if t := cs.LastTerminationState.Terminated; t != nil {
					return float64(t.ExitCode), true
				}
				return 0, false
			})),
		k.family("status_last_terminated_timestamp", "Last terminated time for a pod "+k.noun+" in unix timestamp.", Gauge, Alpha,
			k.perStatus(func(cs *v1.ContainerStatus) (float64, bool) {
				if t := cs.LastTerminationState.Terminated; t != nil {
					return timestampSeconds(t.FinishedAt), true
				}
				return 0, false
			})),
		k.family("status_ready", "Describes whether the "+k.noun+"s readiness check succeeded.", Gauge, Stable,
			k.perStatus(func(cs *v1.ContainerStatus) (float64, bool) { return boolFloat64(cs.Ready), true })),
		k.family("status_restarts_total", k.restartsHelp, Counter, Stable,
			k.perStatus(func(cs *v1.ContainerStatus) (float64, bool) { return float64(cs.RestartCount), true })),
		k.stateFamily("running", Stable, func(s *v1.ContainerState) bool { return s.Running != nil }),
		k.stateFamily("terminated", Stable, func(s *v1.ContainerState) bool { return s.Terminated != nil }),
		k.family("status_terminated_reason", k.reasonHelp("terminated"), Gauge, Alpha,
			k.perStatusReason(func(cs *v1.ContainerStatus) (string, bool) {
				if t := cs.State.Terminated; t != nil {
					return t.Reason, true
				}
				return "", false
			})),
		k.stateFamily("waiting", Stable, func(s *v1.ContainerState) bool { return s.Waiting != nil }),
		k.family("status_waiting_reason", k.reasonHelp("waiting"), Gauge, k.promoted,
			k.perStatusReason(func(cs *v1.ContainerStatus) (string, bool) {
				if w := cs.State.Waiting; w != nil {
					return w.Reason, true
				}
				return "", false
			})),
	}
}

func (k containerKind) family(suffix, help string, t MetricType, s Stability, gen func(*v1.Pod, *Emitter)) Family[*v1.Pod] {
	return Family[*v1.Pod]{Name: k.prefix + "_" + suffix, Help: help, Type: t, Stability: s, Generate: gen}
}

func (k containerKind) reasonHelp(state string) string {
	return "Describes the reason the " + k.noun + " is currently in " + state + " state."
}

// stateFamily is kube_pod_[init_]container_status_<state>: 1 or 0 per
// container status.
func (k containerKind) stateFamily(state string, s Stability, in func(*v1.ContainerState) bool) Family[*v1.Pod] {
	return k.family("status_"+state, "Describes whether the "+k.noun+" is currently in "+state+" state.", Gauge, s,
		k.perStatus(func(cs *v1.ContainerStatus) (float64, bool) { return boolFloat64(in(&cs.State)), true }))
}

// perStatus renders one series per container status for which value
// reports ok, labelled with the container's name.
func (k containerKind) perStatus(value func(*v1.ContainerStatus) (float64, bool)) func(*v1.Pod, *Emitter) {
	return func(p *v1.Pod, e *Emitter) {
		statuses := k.statuses(p)
		for i := range statuses {
			if v, ok := value(&statuses[i]); ok {
				e.Emit(v, "container", statuses[i].Name)
			}
		}
	}
}

// perStatusReason renders a series of value 1 per container status in the
// state reason looks at, labelled with the container's name and the reason.
func (k containerKind) perStatusReason(reason func(*v1.ContainerStatus) (string, bool)) func(*v1.Pod, *Emitter) {
	return func(p *v1.Pod, e *Emitter) {
		statuses := k.statuses(p)
		for i := range statuses {
			if r, ok := reason(&statuses[i]); ok {
				e.Emit(1, "container", statuses[i].Name, "reason", r)
			}
		}
	}
}

// generateInfo renders one series per container status whose name matches a
// container of the spec (so a container with no status has none, and a
// name repeated among the statuses has one per status).
func (k containerKind) generateInfo(p *v1.Pod, e *Emitter) {
	specs, statuses := k.specs(p), k.statuses(p)
	for i := range specs {
		c := &specs[i]
		policy := ""
		if k.restartPolicyLabel && c.RestartPolicy != nil {
			policy = string(*c.RestartPolicy)
		}
		for j := range statuses {
			cs := &statuses[j]
			if cs.Name != c.Name {
				continue
			}
			if !k.restartPolicyLabel {
				e.Emit(1, "container", cs.Name, "image_spec", c.Image, "image", cs.Image, "image_id", cs.ImageID, "container_id", cs.ContainerID)
				continue
			}
			e.Emit(1,
				"container", cs.Name,
				"image_spec", c.Image,
				"image", cs.Image,
				"image_id", cs.ImageID,
				"container_id", cs.ContainerID,
				"restart_policy", policy,
			)
		}
	}
}

// resourceFamily is kube_pod_[init_]container_resource_<plural>: the
// container's limits or requests.
func (k containerKind) resourceFamily(plural, singular string, list func(*v1.Container) v1.ResourceList) Family[*v1.Pod] {
	help := "The number of requested " + singular + " resource by " + k.article + " " + k.noun + "."
	if k.schedulerHint {
		help += " It is recommended to use the kube_pod_resource_" + plural +
			" metric exposed by kube-scheduler instead, as it is more precise."
	}
	return k.family("resource_"+plural, help, Gauge, k.promoted, func(p *v1.Pod, e *Emitter) {
		specs := k.specs(p)
		for i := range specs {
			for name, q := range list(&specs[i]) {
				emitContainerResource(e, name, q, "container", specs[i].Name, "node", p.Spec.NodeName)
			}
		}
	})
}

// emitContainerResource renders one entry of a container's resource list,
// with kube-state-metrics' container rules: cpu in cores; memory, storage
// and ephemeral-storage in bytes, rounded up to whole units; hugepages and
// attachable volumes in "byte" and extended resources in "integer", also
// rounded up (a name that is both, such as
// attachable-volumes-csi.example.com/disk, gets both series). Other
// resources (pods, kubernetes.io/..., requests.*) are left out. The resource
// label is the sanitised name; kv are the family's other labels.
func emitContainerResource(e *Emitter, name v1.ResourceName, q resource.Quantity, kv ...string) {
	n := len(kv)
	kv = append(kv, "resource", sanitizeLabelName(string(name)), "unit", "")
	emit := func(unit string, v float64) {
		kv[n+3] = unit
		e.Emit(v, kv...)
	}
	switch name {
	case v1.ResourceCPU:
		emit(unitCore, quantityFloat(&q))
		return
	case v1.ResourceStorage, v1.ResourceEphemeralStorage, v1.ResourceMemory:
		emit(unitByte, float64(q.Value()))
		return
	}
	if isHugePageResourceName(name) {
		emit(unitByte, float64(q.Value()))
	}
	if isAttachableVolumeResourceName(name) {
		emit(unitByte, float64(q.Value()))
	}
	if isExtendedResourceName(name) {
		emit(unitInteger, float64(q.Value()))
	}
}
