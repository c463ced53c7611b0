package testenv

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The objects the micro-benchmarks render: realistic enough that a series
// map of them has the sizes and label sharing of a real cluster.

// BenchPod is a realistic Deployment pod: two containers with requests and
// limits, running and ready, with conditions, an owner and IPs. Names and
// UIDs are unique per i, spread over 100 namespaces and 1,000 nodes.
func BenchPod(i int) *v1.Pod {
	ns := fmt.Sprintf("team-%02d", i%100)
	app := fmt.Sprintf("service-%03d", i/100%1000)
	hash := fmt.Sprintf("%010x", uint64(i)*2654435761%(1<<40))
	name := fmt.Sprintf("%s-%s-%05x", app, hash[:10], i)
	uid := fmt.Sprintf("3f2b8c1e-%04x-4e7b-8c6a-%012x", i%0xffff, i)
	created := metav1.NewTime(time.Unix(1_699_000_000+int64(i), 0))
	started := metav1.NewTime(created.Add(3 * time.Second))
	ip := fmt.Sprintf("10.%d.%d.%d", 64+i/65536%64, i/256%256, i%256)
	node := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i%1000/250, i%1000)
	ctr := func(name, image, cpu, mem, cpuLim, memLim string) v1.Container {
		return v1.Container{
			Name:  name,
			Image: image,
			Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
			Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuLim), v1.ResourceMemory: resource.MustParse(memLim)},
			},
		}
	}
	status := func(name, image, id string, restarts int32) v1.ContainerStatus {
		return v1.ContainerStatus{
			Name:         name,
			Image:        image,
			ImageID:      image + "@sha256:" + fmt.Sprintf("%064x", len(name)),
			ContainerID:  "containerd://" + fmt.Sprintf("%064x", id),
			Ready:        true,
			Started:      new(true),
			RestartCount: restarts,
			State:        v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}},
		}
	}
	appImage := "123456789012.dkr.ecr.eu-west-1.amazonaws.com/" + app + ":v1.42.7"
	proxyImage := "docker.io/istio/proxyv2:1.22.3"
	cond := func(t v1.PodConditionType) v1.PodCondition {
		return v1.PodCondition{Type: t, Status: v1.ConditionTrue, LastTransitionTime: started}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              name,
			UID:               types.UID(uid),
			CreationTimestamp: created,
			Labels:            map[string]string{"app": app, "pod-template-hash": hash[:10], "team": ns},
			Annotations:       map[string]string{"prometheus.io/scrape": "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + hash[:10],
				UID: types.UID("rs-" + uid), Controller: new(true),
			}},
		},
		Spec: v1.PodSpec{
			NodeName:           node,
			ServiceAccountName: app,
			SchedulerName:      "default-scheduler",
			RestartPolicy:      v1.RestartPolicyAlways,
			PriorityClassName:  "standard",
			Containers: []v1.Container{
				ctr(app, appImage, "250m", "256Mi", "1", "512Mi"),
				ctr("istio-proxy", proxyImage, "100m", "128Mi", "500m", "256Mi"),
			},
			Tolerations: []v1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
			},
		},
		Status: v1.PodStatus{
			Phase:     v1.PodRunning,
			QOSClass:  v1.PodQOSBurstable,
			HostIP:    fmt.Sprintf("10.0.%d.%d", i%1000/250, i%250+1),
			PodIP:     ip,
			PodIPs:    []v1.PodIP{{IP: ip}},
			StartTime: &created,
			Conditions: []v1.PodCondition{
				cond(v1.PodScheduled), cond(v1.PodInitialized), cond(v1.ContainersReady), cond(v1.PodReady),
			},
			ContainerStatuses: []v1.ContainerStatus{
				status(app, appImage, uid+"a", int32(i%3)),
				status("istio-proxy", proxyImage, uid+"b", 0),
			},
		},
	}
}

// BenchNode is a realistic, ready cloud node.
func BenchNode(i int) *v1.Node {
	name := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i/250, i)
	res := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("8"),
		v1.ResourceMemory:           resource.MustParse("32Gi"),
		v1.ResourcePods:             resource.MustParse("110"),
		v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	cond := func(t v1.NodeConditionType, s v1.ConditionStatus) v1.NodeCondition {
		return v1.NodeCondition{Type: t, Status: s}
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			UID:               types.UID(fmt.Sprintf("9a1c0d2e-0000-4000-8000-%012x", i)),
			CreationTimestamp: metav1.NewTime(time.Unix(1_690_000_000+int64(i), 0)),
			Labels: map[string]string{
				"kubernetes.io/hostname":           name,
				"node.kubernetes.io/instance-type": "m6i.2xlarge",
				"topology.kubernetes.io/zone":      fmt.Sprintf("eu-west-1%c", 'a'+i%3),
			},
		},
		Spec: v1.NodeSpec{
			PodCIDR:    fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256),
			PodCIDRs:   []string{fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256)},
			ProviderID: fmt.Sprintf("aws:///eu-west-1a/i-%017x", i),
		},
		Status: v1.NodeStatus{
			Capacity:    res,
			Allocatable: res,
			Conditions: []v1.NodeCondition{
				cond(v1.NodeReady, v1.ConditionTrue),
				cond(v1.NodeMemoryPressure, v1.ConditionFalse),
				cond(v1.NodeDiskPressure, v1.ConditionFalse),
				cond(v1.NodePIDPressure, v1.ConditionFalse),
			},
			Addresses: []v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)},
				{Type: v1.NodeHostName, Address: name},
			},
			NodeInfo: v1.NodeSystemInfo{
				KernelVersion:           "6.1.109-118.189.amzn2023.x86_64",
				OSImage:                 "Amazon Linux 2023.5.20240916",
				ContainerRuntimeVersion: "containerd://1.7.20",
				KubeletVersion:          "v1.31.0-eks-a737599",
				SystemUUID:              fmt.Sprintf("ec2%05x-0000-0000-0000-000000000000", i),
			},
		},
	}
}
