package watch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testPodContainerResource is a pod resource with only the container
// families, so they can be tested before podFamilies includes them.
func testPodContainerResource() *Resource {
	return newResource("pods", true, &v1.Pod{}, nil, nil,
		func(p *v1.Pod, e *Emitter) {
			e.Identity("namespace", p.Namespace, "pod", p.Name, "uid", string(p.UID))
		},
		podContainerFamilies,
	)
}

// containerTestPod builds a pod with the given identity, spec and status.
func containerTestPod(ns, name, uid string, spec v1.PodSpec, status v1.PodStatus) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec:       spec,
		Status:     status,
	}
}

func ctrTime(sec int64) metav1.Time { return metav1.Time{Time: time.Unix(sec, 0)} }

// containerGoldenCase is one pod rendered with some families.
type containerGoldenCase struct {
	name     string
	pod      *v1.Pod
	families []string
	want     string
}

func runContainerGolden(t *testing.T, cases []containerGoldenCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := renderText(t, testPodContainerResource(), FamilyOptions{}, c.pod, c.families...)
			requireGolden(t, c.want, got)
		})
	}
}

func TestPodContainerFamiliesMetadata(t *testing.T) {
	// kube-state-metrics v2.20.0 internal/store/pod.go, in its order.
	want := []FamilyInfo{
		{"kube_pod_completion_time", "Completion time in unix timestamp for a pod.", Gauge, Stable, false},
		{"kube_pod_container_info", "Information about a container in a pod.", Gauge, Stable, false},
		{"kube_pod_container_resource_limits", "The number of requested limit resource by a container. It is recommended to use the kube_pod_resource_limits metric exposed by kube-scheduler instead, as it is more precise.", Gauge, Stable, false},
		{"kube_pod_container_resource_requests", "The number of requested request resource by a container. It is recommended to use the kube_pod_resource_requests metric exposed by kube-scheduler instead, as it is more precise.", Gauge, Stable, false},
		{"kube_pod_container_state_started", "Start time in unix timestamp for a pod container.", Gauge, Stable, false},
		{"kube_pod_container_status_last_terminated_reason", "Describes the last reason the container was in terminated state.", Gauge, Alpha, false},
		{"kube_pod_container_status_last_terminated_exitcode", "Describes the exit code for the last container in terminated state.", Gauge, Alpha, false},
		{"kube_pod_container_status_last_terminated_timestamp", "Last terminated time for a pod container in unix timestamp.", Gauge, Alpha, false},
		{"kube_pod_container_status_ready", "Describes whether the containers readiness check succeeded.", Gauge, Stable, false},
		{"kube_pod_container_status_restarts_total", "The number of container restarts per container.", Counter, Stable, false},
		{"kube_pod_container_status_running", "Describes whether the container is currently in running state.", Gauge, Stable, false},
		{"kube_pod_container_status_terminated", "Describes whether the container is currently in terminated state.", Gauge, Stable, false},
		{"kube_pod_container_status_terminated_reason", "Describes the reason the container is currently in terminated state.", Gauge, Alpha, false},
		{"kube_pod_container_status_waiting", "Describes whether the container is currently in waiting state.", Gauge, Stable, false},
		{"kube_pod_container_status_waiting_reason", "Describes the reason the container is currently in waiting state.", Gauge, Stable, false},
		{"kube_pod_init_container_info", "Information about an init container in a pod.", Gauge, Stable, false},
		{"kube_pod_init_container_resource_limits", "The number of requested limit resource by an init container.", Gauge, Alpha, false},
		{"kube_pod_init_container_resource_requests", "The number of requested request resource by an init container.", Gauge, Alpha, false},
		{"kube_pod_init_container_state_started", "Start time in unix timestamp for a pod init container.", Gauge, Alpha, false},
		{"kube_pod_init_container_status_last_terminated_reason", "Describes the last reason the init container was in terminated state.", Gauge, Alpha, false},
		{"kube_pod_init_container_status_last_terminated_exitcode", "Describes the exit code for the last init container in terminated state.", Gauge, Alpha, false},
		{"kube_pod_init_container_status_last_terminated_timestamp", "Last terminated time for a pod init container in unix timestamp.", Gauge, Alpha, false},
		{"kube_pod_init_container_status_ready", "Describes whether the init containers readiness check succeeded.", Gauge, Stable, false},
		{"kube_pod_init_container_status_restarts_total", "The number of restarts for the init container.", Counter, Stable, false},
		{"kube_pod_init_container_status_running", "Describes whether the init container is currently in running state.", Gauge, Stable, false},
		{"kube_pod_init_container_status_terminated", "Describes whether the init container is currently in terminated state.", Gauge, Stable, false},
		{"kube_pod_init_container_status_terminated_reason", "Describes the reason the init container is currently in terminated state.", Gauge, Alpha, false},
		{"kube_pod_init_container_status_waiting", "Describes whether the init container is currently in waiting state.", Gauge, Stable, false},
		{"kube_pod_init_container_status_waiting_reason", "Describes the reason the init container is currently in waiting state.", Gauge, Alpha, false},
	}
	require.Equal(t, want, testPodContainerResource().Families(FamilyOptions{}))
}

func TestPodContainerInfo(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	runContainerGolden(t, []containerGoldenCase{
		{
			name: "one container",
			pod: containerTestPod("ns1", "pod1", "uid1",
				v1.PodSpec{Containers: []v1.Container{{Name: "container1", Image: "k8s.gcr.io/hyperkube1_spec"}}},
				v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
					Name: "container1", Image: "k8s.gcr.io/hyperkube1", ImageID: "docker://sha256:aaa", ContainerID: "docker://ab123",
				}}}),
			families: []string{"kube_pod_container_info"},
			want:     `kube_pod_container_info{container="container1",container_id="docker://ab123",image="k8s.gcr.io/hyperkube1",image_id="docker://sha256:aaa",image_spec="k8s.gcr.io/hyperkube1_spec",namespace="ns1",pod="pod1",uid="uid1"} 1`,
		},
		{
			name: "containers and a sidecar init container",
			pod: containerTestPod("ns2", "pod2", "uid2",
				v1.PodSpec{
					Containers: []v1.Container{
						{Name: "container2", Image: "k8s.gcr.io/hyperkube2_spec"},
						{Name: "container3", Image: "k8s.gcr.io/hyperkube3_spec"},
					},
					InitContainers: []v1.Container{{Name: "initContainer", Image: "k8s.gcr.io/initfoo_spec", RestartPolicy: &always}},
				},
				v1.PodStatus{
					ContainerStatuses: []v1.ContainerStatus{
						{Name: "container2", Image: "k8s.gcr.io/hyperkube2", ImageID: "docker://sha256:bbb", ContainerID: "docker://cd456"},
						{Name: "container3", Image: "k8s.gcr.io/hyperkube3", ImageID: "docker://sha256:ccc", ContainerID: "docker://ef789"},
					},
					InitContainerStatuses: []v1.ContainerStatus{
						{Name: "initContainer", Image: "k8s.gcr.io/initfoo", ImageID: "docker://sha256:wxyz", ContainerID: "docker://ef123"},
					},
				}),
			families: []string{"kube_pod_container_info", "kube_pod_init_container_info"},
			want: `
				kube_pod_container_info{container="container2",container_id="docker://cd456",image="k8s.gcr.io/hyperkube2",image_id="docker://sha256:bbb",image_spec="k8s.gcr.io/hyperkube2_spec",namespace="ns2",pod="pod2",uid="uid2"} 1
				kube_pod_container_info{container="container3",container_id="docker://ef789",image="k8s.gcr.io/hyperkube3",image_id="docker://sha256:ccc",image_spec="k8s.gcr.io/hyperkube3_spec",namespace="ns2",pod="pod2",uid="uid2"} 1
				kube_pod_init_container_info{container="initContainer",container_id="docker://ef123",image="k8s.gcr.io/initfoo",image_id="docker://sha256:wxyz",image_spec="k8s.gcr.io/initfoo_spec",namespace="ns2",pod="pod2",restart_policy="Always",uid="uid2"} 1`,
		},
		{
			// Only spec containers that have a status of the same name
			// are rendered; restart_policy is an init-container label only
			// and is left out when unset.
			name: "spec and status matched by name",
			pod: containerTestPod("ns", "p", "u",
				v1.PodSpec{
					Containers: []v1.Container{
						{Name: "no-status", Image: "a"},
						{Name: "main", Image: "b", RestartPolicy: &always},
					},
					InitContainers: []v1.Container{{Name: "init", Image: "c"}},
				},
				v1.PodStatus{
					ContainerStatuses:     []v1.ContainerStatus{{Name: "main", Image: "b:1"}, {Name: "no-spec", Image: "d"}},
					InitContainerStatuses: []v1.ContainerStatus{{Name: "init", Image: "c:1"}},
				}),
			families: []string{"kube_pod_container_info", "kube_pod_init_container_info"},
			want: `
				kube_pod_container_info{container="main",image="b:1",image_spec="b",namespace="ns",pod="p",uid="u"} 1
				kube_pod_init_container_info{container="init",image="c:1",image_spec="c",namespace="ns",pod="p",uid="u"} 1`,
		},
	})
}

func TestPodContainerStatusReadyAndRestarts(t *testing.T) {
	runContainerGolden(t, []containerGoldenCase{
		{
			name: "ready",
			pod: containerTestPod("ns1", "pod1", "uid1",
				v1.PodSpec{Containers: []v1.Container{{Name: "container1"}}},
				v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "container1", Ready: true}}}),
			families: []string{"kube_pod_container_status_ready"},
			want:     `kube_pod_container_status_ready{container="container1",namespace="ns1",pod="pod1",uid="uid1"} 1`,
		},
		{
			name: "ready and not ready",
			pod: containerTestPod("ns2", "pod2", "uid2",
				v1.PodSpec{Containers: []v1.Container{{Name: "container2"}, {Name: "container3"}}},
				v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "container2", Ready: true}, {Name: "container3"}}}),
			families: []string{"kube_pod_container_status_ready"},
			want: `
				kube_pod_container_status_ready{container="container2",namespace="ns2",pod="pod2",uid="uid2"} 1
				kube_pod_container_status_ready{container="container3",namespace="ns2",pod="pod2",uid="uid2"} 0`,
		},
		{
			name: "init containers ready",
			pod: containerTestPod("ns3", "pod3", "uid3",
				v1.PodSpec{
					Containers:     []v1.Container{{Name: "container2"}, {Name: "container3"}},
					InitContainers: []v1.Container{{Name: "initcontainer1"}, {Name: "initcontainer2"}},
				},
				v1.PodStatus{
					ContainerStatuses:     []v1.ContainerStatus{{Name: "container2", Ready: true}, {Name: "container3"}},
					InitContainerStatuses: []v1.ContainerStatus{{Name: "initcontainer1", Ready: true}, {Name: "initcontainer2"}},
				}),
			families: []string{"kube_pod_init_container_status_ready"},
			want: `
				kube_pod_init_container_status_ready{container="initcontainer1",namespace="ns3",pod="pod3",uid="uid3"} 1
				kube_pod_init_container_status_ready{container="initcontainer2",namespace="ns3",pod="pod3",uid="uid3"} 0`,
		},
		{
			name: "no restarts",
			pod: containerTestPod("ns1", "pod1", "uid1",
				v1.PodSpec{Containers: []v1.Container{{Name: "container1"}}},
				v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "container1"}}}),
			families: []string{"kube_pod_container_status_restarts_total"},
			want:     `kube_pod_container_status_restarts_total{container="container1",namespace="ns1",pod="pod1",uid="uid1"} 0`,
		},
		{
			name: "init container restarts",
			pod: containerTestPod("ns2", "pod2", "uid2",
				v1.PodSpec{InitContainers: []v1.Container{{Name: "initcontainer1"}}},
				v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{{Name: "initcontainer1", RestartCount: 1}}}),
			families: []string{"kube_pod_init_container_status_restarts_total"},
			want:     `kube_pod_init_container_status_restarts_total{container="initcontainer1",namespace="ns2",pod="pod2",uid="uid2"} 1`,
		},
		{
			name: "restarts per container",
			pod: containerTestPod("ns2", "pod2", "uid2",
				v1.PodSpec{Containers: []v1.Container{{Name: "container2"}, {Name: "container3"}}},
				v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "container2"}, {Name: "container3", RestartCount: 1}}}),
			families: []string{"kube_pod_container_status_restarts_total"},
			want: `
				kube_pod_container_status_restarts_total{container="container2",namespace="ns2",pod="pod2",uid="uid2"} 0
				kube_pod_container_status_restarts_total{container="container3",namespace="ns2",pod="pod2",uid="uid2"} 1`,
		},
		{
			name: "restarts per init container",
			pod: containerTestPod("ns2", "pod2", "uid2",
				v1.PodSpec{InitContainers: []v1.Container{{Name: "initcontainer2"}, {Name: "initcontainer3"}}},
				v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{{Name: "initcontainer2"}, {Name: "initcontainer3", RestartCount: 1}}}),
			families: []string{"kube_pod_init_container_status_restarts_total"},
			want: `
				kube_pod_init_container_status_restarts_total{container="initcontainer2",namespace="ns2",pod="pod2",uid="uid2"} 0
				kube_pod_init_container_status_restarts_total{container="initcontainer3",namespace="ns2",pod="pod2",uid="uid2"} 1`,
		},
	})
}

// containerStateFamilies are the families KSM's state test cases select.
var containerStateFamilies = []string{
	"kube_pod_container_state_started",
	"kube_pod_container_status_running",
	"kube_pod_container_status_terminated",
	"kube_pod_container_status_terminated_reason",
	"kube_pod_container_status_waiting",
	"kube_pod_container_status_waiting_reason",
	"kube_pod_container_status_last_terminated_reason",
	"kube_pod_container_status_last_terminated_exitcode",
	"kube_pod_container_status_last_terminated_timestamp",
	"kube_pod_init_container_state_started",
	"kube_pod_init_container_status_running",
	"kube_pod_init_container_status_terminated",
	"kube_pod_init_container_status_terminated_reason",
	"kube_pod_init_container_status_waiting",
	"kube_pod_init_container_status_waiting_reason",
	"kube_pod_init_container_status_last_terminated_reason",
	"kube_pod_init_container_status_last_terminated_exitcode",
	"kube_pod_init_container_status_last_terminated_timestamp",
}

func waitingPod(ns, name, uid, container, reason string) *v1.Pod {
	return containerTestPod(ns, name, uid,
		v1.PodSpec{Containers: []v1.Container{{Name: container}}},
		v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
			Name:  container,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}},
		}}})
}

func TestPodContainerStatusStates(t *testing.T) {
	runContainerGolden(t, []containerGoldenCase{
		{
			name: "running container and init container",
			pod: containerTestPod("ns1", "pod1", "uid1",
				v1.PodSpec{
					Containers:     []v1.Container{{Name: "container1"}},
					InitContainers: []v1.Container{{Name: "initcontainer1"}},
				},
				v1.PodStatus{
					ContainerStatuses: []v1.ContainerStatus{{
						Name:  "container1",
						State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ctrTime(1501777018)}},
					}},
					InitContainerStatuses: []v1.ContainerStatus{{
						Name:  "initcontainer1",
						State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
					}},
				}),
			families: []string{
				"kube_pod_container_status_running",
				"kube_pod_container_state_started",
				"kube_pod_container_status_waiting",
				"kube_pod_container_status_terminated",
				"kube_pod_container_status_terminated_reason",
				"kube_pod_init_container_status_running",
				"kube_pod_init_container_status_waiting",
				"kube_pod_init_container_status_waiting_reason",
				"kube_pod_init_container_status_terminated",
				"kube_pod_init_container_status_terminated_reason",
			},
			want: `
				kube_pod_container_state_started{container="container1",namespace="ns1",pod="pod1",uid="uid1"} 1.501777018e+09
				kube_pod_container_status_running{container="container1",namespace="ns1",pod="pod1",uid="uid1"} 1
				kube_pod_container_status_terminated{container="container1",namespace="ns1",pod="pod1",uid="uid1"} 0
				kube_pod_container_status_waiting{container="container1",namespace="ns1",pod="pod1",uid="uid1"} 0
				kube_pod_init_container_status_running{container="initcontainer1",namespace="ns1",pod="pod1",uid="uid1"} 1
				kube_pod_init_container_status_terminated{container="initcontainer1",namespace="ns1",pod="pod1",uid="uid1"} 0
				kube_pod_init_container_status_waiting{container="initcontainer1",namespace="ns1",pod="pod1",uid="uid1"} 0`,
		},
		{
			name: "terminated completed",
			pod: containerTestPod("ns1", "pod1", "uid1",
				v1.PodSpec{Containers: []v1.Container{{Name: "container1"}}},
				v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
					Name: "container1",
					State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
						StartedAt: ctrTime(1501777018), Reason: "Completed",
					}},
				}}}),
			families: containerStateFamilies,
			want: `
				kube_pod_container_state_started{container="container1",namespace="ns1",pod="pod1",uid="uid1"} 1.501777018e+09
				kube_pod_container_status_running{container="container1",namespace="ns1",pod="pod1",uid="uid1"} 0
				kube_pod_container_status_terminated_reason{container="container1",namespace="ns1",pod="pod1",reason="Completed",uid="uid1"} 1
				kube_pod_container_status_terminated{container="container1",namespace="ns1",pod="pod1",uid="uid1"} 1
				kube_pod_container_status_waiting{container="container1",namespace="ns1",pod="pod1",uid="uid1"} 0`,
		},
		{
			name: "terminated OOMKilled and waiting",
			pod: containerTestPod("ns2", "pod2", "uid2",
				v1.PodSpec{Containers: []v1.Container{{Name: "container2"}, {Name: "container3"}}},
				v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
					{
						Name: "container2",
						State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
							StartedAt: ctrTime(1501777018), Reason: "OOMKilled", ExitCode: 137,
						}},
					},
					{
						Name:  "container3",
						State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}},
					},
				}}),
			families: containerStateFamilies,
			want: `
				kube_pod_container_state_started{container="container2",namespace="ns2",pod="pod2",uid="uid2"} 1.501777018e+09
				kube_pod_container_status_running{container="container2",namespace="ns2",pod="pod2",uid="uid2"} 0
				kube_pod_container_status_running{container="container3",namespace="ns2",pod="pod2",uid="uid2"} 0
				kube_pod_container_status_terminated_reason{container="container2",namespace="ns2",pod="pod2",reason="OOMKilled",uid="uid2"} 1
				kube_pod_container_status_terminated{container="container2",namespace="ns2",pod="pod2",uid="uid2"} 1
				kube_pod_container_status_terminated{container="container3",namespace="ns2",pod="pod2",uid="uid2"} 0
				kube_pod_container_status_waiting_reason{container="container3",namespace="ns2",pod="pod2",reason="ContainerCreating",uid="uid2"} 1
				kube_pod_container_status_waiting{container="container2",namespace="ns2",pod="pod2",uid="uid2"} 0
				kube_pod_container_status_waiting{container="container3",namespace="ns2",pod="pod2",uid="uid2"} 1`,
		},
		{
			name:     "waiting CrashLoopBackOff without last termination",
			pod:      waitingPod("ns3", "pod3", "uid3", "container4", "CrashLoopBackOff"),
			families: containerStateFamilies,
			want: `
				kube_pod_container_status_running{container="container4",namespace="ns3",pod="pod3",uid="uid3"} 0
				kube_pod_container_status_terminated{container="container4",namespace="ns3",pod="pod3",uid="uid3"} 0
				kube_pod_container_status_waiting_reason{container="container4",namespace="ns3",pod="pod3",reason="CrashLoopBackOff",uid="uid3"} 1
				kube_pod_container_status_waiting{container="container4",namespace="ns3",pod="pod3",uid="uid3"} 1`,
		},
		{
			name:     "waiting ImagePullBackOff",
			pod:      waitingPod("ns4", "pod4", "uid4", "container5", "ImagePullBackOff"),
			families: containerStateFamilies,
			want: `
				kube_pod_container_status_running{container="container5",namespace="ns4",pod="pod4",uid="uid4"} 0
				kube_pod_container_status_terminated{container="container5",namespace="ns4",pod="pod4",uid="uid4"} 0
				kube_pod_container_status_waiting_reason{container="container5",namespace="ns4",pod="pod4",reason="ImagePullBackOff",uid="uid4"} 1
				kube_pod_container_status_waiting{container="container5",namespace="ns4",pod="pod4",uid="uid4"} 1`,
		},
		{
			name:     "waiting ErrImagePull",
			pod:      waitingPod("ns5", "pod5", "uid5", "container6", "ErrImagePull"),
			families: containerStateFamilies,
			want: `
				kube_pod_container_status_running{container="container6",namespace="ns5",pod="pod5",uid="uid5"} 0
				kube_pod_container_status_terminated{container="container6",namespace="ns5",pod="pod5",uid="uid5"} 0
				kube_pod_container_status_waiting_reason{container="container6",namespace="ns5",pod="pod5",reason="ErrImagePull",uid="uid5"} 1
				kube_pod_container_status_waiting{container="container6",namespace="ns5",pod="pod5",uid="uid5"} 1`,
		},
		{
			name:     "waiting CreateContainerConfigError",
			pod:      waitingPod("ns7", "pod7", "uid7", "container8", "CreateContainerConfigError"),
			families: containerStateFamilies,
			want: `
				kube_pod_container_status_running{container="container8",namespace="ns7",pod="pod7",uid="uid7"} 0
				kube_pod_container_status_terminated{container="container8",namespace="ns7",pod="pod7",uid="uid7"} 0
				kube_pod_container_status_waiting_reason{container="container8",namespace="ns7",pod="pod7",reason="CreateContainerConfigError",uid="uid7"} 1
				kube_pod_container_status_waiting{container="container8",namespace="ns7",pod="pod7",uid="uid7"} 1`,
		},
		{
			// A waiting state without a reason still has a series; the empty
			// reason label is dropped.
			name:     "waiting without reason",
			pod:      waitingPod("ns", "p", "u", "c", ""),
			families: []string{"kube_pod_container_status_waiting_reason"},
			want:     `kube_pod_container_status_waiting_reason{container="c",namespace="ns",pod="p",uid="u"} 1`,
		},
		{
			name: "running after OOMKilled",
			pod: containerTestPod("ns6", "pod6", "uid6",
				v1.PodSpec{Containers: []v1.Container{{Name: "container7"}}},
				v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
					Name:  "container7",
					State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ctrTime(1501777018)}},
					LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
						Reason: "OOMKilled", ExitCode: 137, FinishedAt: ctrTime(1501779547),
					}},
				}}}),
			families: containerStateFamilies,
			want: `
				kube_pod_container_state_started{container="container7",namespace="ns6",pod="pod6",uid="uid6"} 1.501777018e+09
				kube_pod_container_status_last_terminated_exitcode{container="container7",namespace="ns6",pod="pod6",uid="uid6"} 137
				kube_pod_container_status_last_terminated_reason{container="container7",namespace="ns6",pod="pod6",reason="OOMKilled",uid="uid6"} 1
				kube_pod_container_status_last_terminated_timestamp{container="container7",namespace="ns6",pod="pod6",uid="uid6"} 1.501779547e+09
				kube_pod_container_status_running{container="container7",namespace="ns6",pod="pod6",uid="uid6"} 1
				kube_pod_container_status_terminated{container="container7",namespace="ns6",pod="pod6",uid="uid6"} 0
				kube_pod_container_status_waiting{container="container7",namespace="ns6",pod="pod6",uid="uid6"} 0`,
		},
		{
			name: "running after DeadlineExceeded",
			pod: containerTestPod("ns7", "pod7", "uid7",
				v1.PodSpec{Containers: []v1.Container{{Name: "container7"}}},
				v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
					Name:  "container7",
					State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ctrTime(1501777018)}},
					LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
						Reason: "DeadlineExceeded", ExitCode: 143, FinishedAt: ctrTime(1501779547),
					}},
				}}}),
			families: containerStateFamilies,
			want: `
				kube_pod_container_state_started{container="container7",namespace="ns7",pod="pod7",uid="uid7"} 1.501777018e+09
				kube_pod_container_status_last_terminated_exitcode{container="container7",namespace="ns7",pod="pod7",uid="uid7"} 143
				kube_pod_container_status_last_terminated_reason{container="container7",namespace="ns7",pod="pod7",reason="DeadlineExceeded",uid="uid7"} 1
				kube_pod_container_status_last_terminated_timestamp{container="container7",namespace="ns7",pod="pod7",uid="uid7"} 1.501779547e+09
				kube_pod_container_status_running{container="container7",namespace="ns7",pod="pod7",uid="uid7"} 1
				kube_pod_container_status_terminated{container="container7",namespace="ns7",pod="pod7",uid="uid7"} 0
				kube_pod_container_status_waiting{container="container7",namespace="ns7",pod="pod7",uid="uid7"} 0`,
		},
	})
}

func TestPodInitContainerStatusStates(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	runContainerGolden(t, []containerGoldenCase{
		{
			name: "started running and terminated",
			pod: containerTestPod("ns8", "pod8", "uid8",
				v1.PodSpec{InitContainers: []v1.Container{{Name: "initcontainer1"}, {Name: "initcontainer2"}}},
				v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{
					{
						Name:  "initcontainer1",
						State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ctrTime(1501777018)}},
					},
					{
						Name:  "initcontainer2",
						State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{StartedAt: ctrTime(1501777018)}},
					},
				}}),
			families: []string{"kube_pod_init_container_state_started"},
			want: `
				kube_pod_init_container_state_started{container="initcontainer1",namespace="ns8",pod="pod8",uid="uid8"} 1.501777018e+09
				kube_pod_init_container_state_started{container="initcontainer2",namespace="ns8",pod="pod8",uid="uid8"} 1.501777018e+09`,
		},
		{
			name: "last terminated",
			pod: containerTestPod("ns9", "pod9", "uid9",
				v1.PodSpec{InitContainers: []v1.Container{{Name: "initcontainer1"}}},
				v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{{
					Name:  "initcontainer1",
					State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ctrTime(1501777018)}},
					LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
						Reason: "OOMKilled", ExitCode: 137, FinishedAt: ctrTime(1501779547),
					}},
				}}}),
			families: []string{
				"kube_pod_init_container_state_started",
				"kube_pod_init_container_status_last_terminated_exitcode",
				"kube_pod_init_container_status_last_terminated_timestamp",
				"kube_pod_init_container_status_last_terminated_reason",
			},
			want: `
				kube_pod_init_container_state_started{container="initcontainer1",namespace="ns9",pod="pod9",uid="uid9"} 1.501777018e+09
				kube_pod_init_container_status_last_terminated_exitcode{container="initcontainer1",namespace="ns9",pod="pod9",uid="uid9"} 137
				kube_pod_init_container_status_last_terminated_reason{container="initcontainer1",namespace="ns9",pod="pod9",reason="OOMKilled",uid="uid9"} 1
				kube_pod_init_container_status_last_terminated_timestamp{container="initcontainer1",namespace="ns9",pod="pod9",uid="uid9"} 1.501779547e+09`,
		},
		{
			// A completed init container, a restartable sidecar that is
			// running after a restart and one waiting to start: all are
			// init containers for these families, and none of them counts
			// for the regular container families.
			name: "completed, sidecar and waiting init containers",
			pod: containerTestPod("ns", "p", "u",
				v1.PodSpec{
					InitContainers: []v1.Container{
						{Name: "setup", Image: "setup:1"},
						{Name: "proxy", Image: "proxy:1", RestartPolicy: &always},
						{Name: "migrate", Image: "migrate:1"},
					},
					Containers: []v1.Container{{Name: "app", Image: "app:1"}},
				},
				v1.PodStatus{
					InitContainerStatuses: []v1.ContainerStatus{
						{
							Name: "setup", Image: "setup:1", ContainerID: "containerd://1",
							State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
								Reason: "Completed", StartedAt: ctrTime(1700000000), FinishedAt: ctrTime(1700000010),
							}},
						},
						{
							Name: "proxy", Image: "proxy:1", ContainerID: "containerd://2", Ready: true, RestartCount: 2,
							State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ctrTime(1700000020)}},
							LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
								Reason: "Error", ExitCode: 1, FinishedAt: ctrTime(1700000015),
							}},
						},
						{
							Name: "migrate", Image: "migrate:1",
							State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}},
						},
					},
					ContainerStatuses: []v1.ContainerStatus{{
						Name: "app", Image: "app:1",
						State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}},
					}},
				}),
			families: append([]string{
				"kube_pod_completion_time",
				"kube_pod_init_container_info",
				"kube_pod_init_container_status_ready",
				"kube_pod_init_container_status_restarts_total",
			}, containerStateFamilies[9:]...),
			want: `
				kube_pod_init_container_info{container="migrate",image="migrate:1",image_spec="migrate:1",namespace="ns",pod="p",uid="u"} 1
				kube_pod_init_container_info{container="proxy",container_id="containerd://2",image="proxy:1",image_spec="proxy:1",namespace="ns",pod="p",restart_policy="Always",uid="u"} 1
				kube_pod_init_container_info{container="setup",container_id="containerd://1",image="setup:1",image_spec="setup:1",namespace="ns",pod="p",uid="u"} 1
				kube_pod_init_container_state_started{container="proxy",namespace="ns",pod="p",uid="u"} 1.70000002e+09
				kube_pod_init_container_state_started{container="setup",namespace="ns",pod="p",uid="u"} 1.7e+09
				kube_pod_init_container_status_last_terminated_exitcode{container="proxy",namespace="ns",pod="p",uid="u"} 1
				kube_pod_init_container_status_last_terminated_reason{container="proxy",namespace="ns",pod="p",reason="Error",uid="u"} 1
				kube_pod_init_container_status_last_terminated_timestamp{container="proxy",namespace="ns",pod="p",uid="u"} 1.700000015e+09
				kube_pod_init_container_status_ready{container="migrate",namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_ready{container="proxy",namespace="ns",pod="p",uid="u"} 1
				kube_pod_init_container_status_ready{container="setup",namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_restarts_total{container="migrate",namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_restarts_total{container="proxy",namespace="ns",pod="p",uid="u"} 2
				kube_pod_init_container_status_restarts_total{container="setup",namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_running{container="migrate",namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_running{container="proxy",namespace="ns",pod="p",uid="u"} 1
				kube_pod_init_container_status_running{container="setup",namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_terminated_reason{container="setup",namespace="ns",pod="p",reason="Completed",uid="u"} 1
				kube_pod_init_container_status_terminated{container="migrate",namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_terminated{container="proxy",namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_terminated{container="setup",namespace="ns",pod="p",uid="u"} 1
				kube_pod_init_container_status_waiting_reason{container="migrate",namespace="ns",pod="p",reason="PodInitializing",uid="u"} 1
				kube_pod_init_container_status_waiting{container="migrate",namespace="ns",pod="p",uid="u"} 1
				kube_pod_init_container_status_waiting{container="proxy",namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_waiting{container="setup",namespace="ns",pod="p",uid="u"} 0`,
		},
	})
}

func TestPodContainerCompletionTime(t *testing.T) {
	terminated := func(name string, finished int64) v1.ContainerStatus {
		return v1.ContainerStatus{
			Name:  name,
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{FinishedAt: ctrTime(finished)}},
		}
	}
	runContainerGolden(t, []containerGoldenCase{
		{
			name: "latest finish of terminated containers",
			pod: containerTestPod("ns2", "pod2", "abc-456-xxx",
				v1.PodSpec{Containers: []v1.Container{{Name: "container2_1"}, {Name: "container2_2"}, {Name: "container2_3"}}},
				v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
					terminated("container2_1", 1501777018),
					terminated("container2_2", 1501888018),
					terminated("container2_3", 1501666018),
				}}),
			families: []string{"kube_pod_completion_time"},
			want:     `kube_pod_completion_time{namespace="ns2",pod="pod2",uid="abc-456-xxx"} 1.501888018e+09`,
		},
		{
			name: "no terminated container",
			pod: containerTestPod("ns1", "pod1", "abc-123-xxx",
				v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Image: "k8s.gcr.io/hyperkube2_spec"}}},
				v1.PodStatus{HostIP: "1.1.1.1", PodIP: "1.2.3.4"}),
			families: []string{"kube_pod_completion_time"},
		},
		{
			// Init containers do not count, and neither does a finish
			// time at or before the epoch.
			name: "only init containers and zero times",
			pod: containerTestPod("ns", "p", "u",
				v1.PodSpec{},
				v1.PodStatus{
					ContainerStatuses: []v1.ContainerStatus{
						{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}},
						terminated("b", 0),
						{Name: "c", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ctrTime(1700000000)}}},
					},
					InitContainerStatuses: []v1.ContainerStatus{terminated("init", 1700000000)},
				}),
			families: []string{"kube_pod_completion_time"},
		},
		{
			name: "running and terminated containers",
			pod: containerTestPod("ns", "p", "u",
				v1.PodSpec{},
				v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
					{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}},
					terminated("b", 1700000000),
					{Name: "c", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ctrTime(1800000000)}}},
				}}),
			families: []string{"kube_pod_completion_time"},
			want:     `kube_pod_completion_time{namespace="ns",pod="p",uid="u"} 1.7e+09`,
		},
	})
}

func TestPodContainerResources(t *testing.T) {
	full := v1.ResourceList{
		v1.ResourceCPU:                    resource.MustParse("200m"),
		v1.ResourceMemory:                 resource.MustParse("100M"),
		v1.ResourceEphemeralStorage:       resource.MustParse("300M"),
		v1.ResourceStorage:                resource.MustParse("400M"),
		v1.ResourceName("nvidia.com/gpu"): resource.MustParse("1"),
	}
	small := func(cpu, mem string) v1.ResourceRequirements {
		l := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
		return v1.ResourceRequirements{Requests: l, Limits: l}
	}
	runContainerGolden(t, []containerGoldenCase{
		{
			name: "cpu, memory, storage and extended",
			pod: containerTestPod("ns1", "pod1", "uid1",
				v1.PodSpec{
					Containers: []v1.Container{
						{Name: "pod1_con1", Resources: v1.ResourceRequirements{Requests: full, Limits: full}},
						{Name: "pod1_con2", Resources: small("300m", "200M")},
					},
					InitContainers: []v1.Container{
						{Name: "pod1_initcon1", Resources: v1.ResourceRequirements{Requests: full, Limits: full}},
					},
				},
				v1.PodStatus{}),
			families: []string{
				"kube_pod_container_resource_requests",
				"kube_pod_container_resource_limits",
				"kube_pod_init_container_resource_limits",
				"kube_pod_init_container_resource_requests",
				"kube_pod_init_container_status_last_terminated_reason",
			},
			want: `
				kube_pod_container_resource_limits{container="pod1_con1",namespace="ns1",pod="pod1",resource="cpu",uid="uid1",unit="core"} 0.2
				kube_pod_container_resource_limits{container="pod1_con1",namespace="ns1",pod="pod1",resource="ephemeral_storage",uid="uid1",unit="byte"} 3e+08
				kube_pod_container_resource_limits{container="pod1_con1",namespace="ns1",pod="pod1",resource="memory",uid="uid1",unit="byte"} 1e+08
				kube_pod_container_resource_limits{container="pod1_con1",namespace="ns1",pod="pod1",resource="nvidia_com_gpu",uid="uid1",unit="integer"} 1
				kube_pod_container_resource_limits{container="pod1_con1",namespace="ns1",pod="pod1",resource="storage",uid="uid1",unit="byte"} 4e+08
				kube_pod_container_resource_limits{container="pod1_con2",namespace="ns1",pod="pod1",resource="cpu",uid="uid1",unit="core"} 0.3
				kube_pod_container_resource_limits{container="pod1_con2",namespace="ns1",pod="pod1",resource="memory",uid="uid1",unit="byte"} 2e+08
				kube_pod_container_resource_requests{container="pod1_con1",namespace="ns1",pod="pod1",resource="cpu",uid="uid1",unit="core"} 0.2
				kube_pod_container_resource_requests{container="pod1_con1",namespace="ns1",pod="pod1",resource="ephemeral_storage",uid="uid1",unit="byte"} 3e+08
				kube_pod_container_resource_requests{container="pod1_con1",namespace="ns1",pod="pod1",resource="memory",uid="uid1",unit="byte"} 1e+08
				kube_pod_container_resource_requests{container="pod1_con1",namespace="ns1",pod="pod1",resource="nvidia_com_gpu",uid="uid1",unit="integer"} 1
				kube_pod_container_resource_requests{container="pod1_con1",namespace="ns1",pod="pod1",resource="storage",uid="uid1",unit="byte"} 4e+08
				kube_pod_container_resource_requests{container="pod1_con2",namespace="ns1",pod="pod1",resource="cpu",uid="uid1",unit="core"} 0.3
				kube_pod_container_resource_requests{container="pod1_con2",namespace="ns1",pod="pod1",resource="memory",uid="uid1",unit="byte"} 2e+08
				kube_pod_init_container_resource_limits{container="pod1_initcon1",namespace="ns1",pod="pod1",resource="cpu",uid="uid1",unit="core"} 0.2
				kube_pod_init_container_resource_limits{container="pod1_initcon1",namespace="ns1",pod="pod1",resource="ephemeral_storage",uid="uid1",unit="byte"} 3e+08
				kube_pod_init_container_resource_limits{container="pod1_initcon1",namespace="ns1",pod="pod1",resource="memory",uid="uid1",unit="byte"} 1e+08
				kube_pod_init_container_resource_limits{container="pod1_initcon1",namespace="ns1",pod="pod1",resource="nvidia_com_gpu",uid="uid1",unit="integer"} 1
				kube_pod_init_container_resource_limits{container="pod1_initcon1",namespace="ns1",pod="pod1",resource="storage",uid="uid1",unit="byte"} 4e+08
				kube_pod_init_container_resource_requests{container="pod1_initcon1",namespace="ns1",pod="pod1",resource="cpu",uid="uid1",unit="core"} 0.2
				kube_pod_init_container_resource_requests{container="pod1_initcon1",namespace="ns1",pod="pod1",resource="ephemeral_storage",uid="uid1",unit="byte"} 3e+08
				kube_pod_init_container_resource_requests{container="pod1_initcon1",namespace="ns1",pod="pod1",resource="memory",uid="uid1",unit="byte"} 1e+08
				kube_pod_init_container_resource_requests{container="pod1_initcon1",namespace="ns1",pod="pod1",resource="nvidia_com_gpu",uid="uid1",unit="integer"} 1
				kube_pod_init_container_resource_requests{container="pod1_initcon1",namespace="ns1",pod="pod1",resource="storage",uid="uid1",unit="byte"} 4e+08`,
		},
		{
			name: "container without resources",
			pod: containerTestPod("ns2", "pod2", "uid2",
				v1.PodSpec{
					Containers: []v1.Container{
						{Name: "pod2_con1", Resources: small("400m", "300M")},
						{Name: "pod2_con2", Resources: small("500m", "400M")},
						{Name: "pod2_con3"},
					},
					InitContainers: []v1.Container{{Name: "pod2_initcon1", Resources: small("400m", "300M")}},
				},
				v1.PodStatus{}),
			families: []string{"kube_pod_init_container_resource_limits", "kube_pod_init_container_resource_requests"},
			want: `
				kube_pod_init_container_resource_limits{container="pod2_initcon1",namespace="ns2",pod="pod2",resource="cpu",uid="uid2",unit="core"} 0.4
				kube_pod_init_container_resource_limits{container="pod2_initcon1",namespace="ns2",pod="pod2",resource="memory",uid="uid2",unit="byte"} 3e+08
				kube_pod_init_container_resource_requests{container="pod2_initcon1",namespace="ns2",pod="pod2",resource="cpu",uid="uid2",unit="core"} 0.4
				kube_pod_init_container_resource_requests{container="pod2_initcon1",namespace="ns2",pod="pod2",resource="memory",uid="uid2",unit="byte"} 3e+08`,
		},
		{
			// Hugepages and attachable volumes are bytes, extended
			// resources integers; a name that is both an attachable volume
			// and an extended resource gets both series. Non-cpu values are
			// rounded up to whole units. pods, kubernetes.io/ names and
			// requests.* names are not exported.
			name: "hugepages, attachable volumes, rounding and unexported names",
			pod: containerTestPod("ns", "p", "u",
				v1.PodSpec{
					NodeName: "node1",
					Containers: []v1.Container{{
						Name: "c",
						Resources: v1.ResourceRequirements{
							Requests: v1.ResourceList{
								v1.ResourceCPU:                            resource.MustParse("1500m"),
								v1.ResourceMemory:                         resource.MustParse("1500m"),
								v1.ResourceEphemeralStorage:               resource.MustParse("2Gi"),
								"hugepages-2Mi":                           resource.MustParse("4Mi"),
								"hugepages-1Gi":                           resource.MustParse("2Gi"),
								"attachable-volumes-aws-ebs":              resource.MustParse("39"),
								"attachable-volumes-csi.example.com/disk": resource.MustParse("2"),
								"example.com/foo":                         resource.MustParse("500m"),
								v1.ResourcePods:                           resource.MustParse("1"),
								"kubernetes.io/something":                 resource.MustParse("1"),
								"requests.example.com/foo":                resource.MustParse("1"),
							},
						},
					}},
				},
				v1.PodStatus{}),
			families: []string{"kube_pod_container_resource_requests", "kube_pod_container_resource_limits"},
			want: `
				kube_pod_container_resource_requests{container="c",namespace="ns",node="node1",pod="p",resource="attachable_volumes_aws_ebs",uid="u",unit="byte"} 39
				kube_pod_container_resource_requests{container="c",namespace="ns",node="node1",pod="p",resource="attachable_volumes_csi_example_com_disk",uid="u",unit="byte"} 2
				kube_pod_container_resource_requests{container="c",namespace="ns",node="node1",pod="p",resource="attachable_volumes_csi_example_com_disk",uid="u",unit="integer"} 2
				kube_pod_container_resource_requests{container="c",namespace="ns",node="node1",pod="p",resource="cpu",uid="u",unit="core"} 1.5
				kube_pod_container_resource_requests{container="c",namespace="ns",node="node1",pod="p",resource="ephemeral_storage",uid="u",unit="byte"} 2.147483648e+09
				kube_pod_container_resource_requests{container="c",namespace="ns",node="node1",pod="p",resource="example_com_foo",uid="u",unit="integer"} 1
				kube_pod_container_resource_requests{container="c",namespace="ns",node="node1",pod="p",resource="hugepages_1Gi",uid="u",unit="byte"} 2.147483648e+09
				kube_pod_container_resource_requests{container="c",namespace="ns",node="node1",pod="p",resource="hugepages_2Mi",uid="u",unit="byte"} 4.194304e+06
				kube_pod_container_resource_requests{container="c",namespace="ns",node="node1",pod="p",resource="memory",uid="u",unit="byte"} 2`,
		},
	})
}

// TestPodContainerMalformed renders pods with missing or inconsistent
// container data through every family.
func TestPodContainerMalformed(t *testing.T) {
	runContainerGolden(t, []containerGoldenCase{
		{
			name: "no spec and no status",
			pod:  &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
		},
		{
			// More statuses than spec containers, init statuses without
			// init containers, a status without a name and states with
			// zero times: the status families follow the statuses, info
			// only the statuses that match a spec container.
			name: "statuses without spec containers",
			pod: containerTestPod("ns", "p", "u",
				v1.PodSpec{Containers: []v1.Container{{Name: "a", Image: "a:1"}, {Name: "no-status"}}},
				v1.PodStatus{
					ContainerStatuses: []v1.ContainerStatus{
						{Name: "a"},
						{Name: "ghost", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}},
					},
					InitContainerStatuses: []v1.ContainerStatus{
						{LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}},
					},
				}),
			want: `
				kube_pod_container_info{container="a",image_spec="a:1",namespace="ns",pod="p",uid="u"} 1
				kube_pod_container_state_started{container="ghost",namespace="ns",pod="p",uid="u"} -6.21355968e+10
				kube_pod_container_status_ready{container="a",namespace="ns",pod="p",uid="u"} 0
				kube_pod_container_status_ready{container="ghost",namespace="ns",pod="p",uid="u"} 0
				kube_pod_container_status_restarts_total{container="a",namespace="ns",pod="p",uid="u"} 0
				kube_pod_container_status_restarts_total{container="ghost",namespace="ns",pod="p",uid="u"} 0
				kube_pod_container_status_running{container="a",namespace="ns",pod="p",uid="u"} 0
				kube_pod_container_status_running{container="ghost",namespace="ns",pod="p",uid="u"} 0
				kube_pod_container_status_terminated_reason{container="ghost",namespace="ns",pod="p",uid="u"} 1
				kube_pod_container_status_terminated{container="a",namespace="ns",pod="p",uid="u"} 0
				kube_pod_container_status_terminated{container="ghost",namespace="ns",pod="p",uid="u"} 1
				kube_pod_container_status_waiting{container="a",namespace="ns",pod="p",uid="u"} 0
				kube_pod_container_status_waiting{container="ghost",namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_last_terminated_exitcode{namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_last_terminated_reason{namespace="ns",pod="p",uid="u"} 1
				kube_pod_init_container_status_last_terminated_timestamp{namespace="ns",pod="p",uid="u"} -6.21355968e+10
				kube_pod_init_container_status_ready{namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_restarts_total{namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_running{namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_terminated{namespace="ns",pod="p",uid="u"} 0
				kube_pod_init_container_status_waiting{namespace="ns",pod="p",uid="u"} 0`,
		},
		{
			name: "nil resource lists and restart policy",
			pod: containerTestPod("ns", "p", "u",
				v1.PodSpec{
					Containers:     []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{}}}},
					InitContainers: []v1.Container{{Name: "i"}},
				},
				v1.PodStatus{}),
		},
	})
}
