package main

import (
	"context"
	"strings"
	"sync"
	"time"

	cadvisorapi "github.com/google/cadvisor/lib/model"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cadvisor"
)

// syntheticCadvisor is a cadvisor.Interface with a "/" root container and,
// for each pod bound to the node, a pod cgroup and one cgroup per container,
// labelled as the CRI runtimes label them, with figures that rise with time.
// The kubelet's own collector (cadvisor's metrics.PrometheusCollector) turns
// them into /metrics/cadvisor.
type syntheticCadvisor struct {
	// start is when the figures began rising.
	start time.Time
	// cores is the machine's core count.
	cores int
	// node is the node name, the machine's instance ID.
	node string
	// pods lists the pods bound to the node.
	pods func() []*v1.Pod
}

var _ cadvisor.Interface = (*syntheticCadvisor)(nil)

const (
	gib        = 1 << 30
	rootDevice = "/dev/vda1"
)

func newSyntheticCadvisor(ctx context.Context, client clientset.Interface, node string, cores int) *syntheticCadvisor {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
	}))
	lister := f.Core().V1().Pods().Lister()
	f.Start(ctx.Done())
	var once sync.Once
	return &syntheticCadvisor{
		start: time.Now(),
		cores: cores,
		node:  node,
		pods: func() []*v1.Pod {
			once.Do(func() { f.WaitForCacheSync(ctx.Done()) })
			pods, err := lister.List(labels.Everything())
			if err != nil {
				klog.ErrorS(err, "listing pods")
			}
			return pods
		},
	}
}

// stats gives one sample: CPU at share cores, working set and disk usage
// growing from base by rate bytes per second.
func (c *syntheticCadvisor) stats(now time.Time, share float64, base, rate uint64, fsLimit uint64) *cadvisorapi.ContainerStats {
	el := now.Sub(c.start).Seconds() + 1
	usage := uint64(el * share * 1e9)
	return &cadvisorapi.ContainerStats{
		Timestamp: now,
		Cpu: &cadvisorapi.CpuStats{Usage: cadvisorapi.CpuUsage{
			Total: usage, User: usage / 2, System: usage / 2, PerCpu: []uint64{usage},
		}},
		Memory: &cadvisorapi.MemoryStats{
			Usage: base + uint64(el)*rate + 1<<20, WorkingSet: base + uint64(el)*rate, RSS: base,
		},
		Filesystem: []cadvisorapi.FsStats{{
			Device: rootDevice, Type: "vfs", Limit: fsLimit, Usage: base*2 + uint64(el)*rate,
		}},
	}
}

func (c *syntheticCadvisor) info(name string, lbls map[string]string, image string, st []*cadvisorapi.ContainerStats) *cadvisorapi.ContainerInfo {
	return &cadvisorapi.ContainerInfo{
		ContainerReference: cadvisorapi.ContainerReference{Name: name},
		Spec: cadvisorapi.ContainerSpec{
			CreationTime: c.start, Labels: lbls, Image: image,
			HasCpu: true, HasMemory: true, HasFilesystem: true,
		},
		Stats: st,
	}
}

// containers returns the synthetic containers with their stats at each of
// the times given, by cgroup name.
func (c *syntheticCadvisor) containers(at ...time.Time) map[string]*cadvisorapi.ContainerInfo {
	series := func(share float64, base, rate uint64) []*cadvisorapi.ContainerStats {
		out := make([]*cadvisorapi.ContainerStats, len(at))
		for i, t := range at {
			out[i] = c.stats(t, share, base, rate, 100*gib)
		}
		return out
	}
	out := map[string]*cadvisorapi.ContainerInfo{
		"/": c.info("/", nil, "", series(0.5, 2*gib, 1<<20)),
	}
	for _, p := range c.pods() {
		if p.DeletionTimestamp != nil || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		pod := "/kubepods/pod" + string(p.UID)
		podLabels := map[string]string{
			"io.kubernetes.pod.name": p.Name, "io.kubernetes.pod.namespace": p.Namespace, "io.kubernetes.pod.uid": string(p.UID),
		}
		out[pod] = c.info(pod, podLabels, "", series(0.02*float64(len(p.Spec.Containers)), 32<<20, 4096))
		for _, ctr := range p.Spec.Containers {
			name := pod + "/" + ctr.Name
			l := map[string]string{"io.kubernetes.container.name": ctr.Name}
			for k, v := range podLabels {
				l[k] = v
			}
			out[name] = c.info(name, l, ctr.Image, series(0.02, 16<<20, 4096))
		}
	}
	return out
}

// GetRequestedContainersInfo answers the collector's recursive request for
// "/" (/metrics/cadvisor): one sample of each container, taken now.
func (c *syntheticCadvisor) GetRequestedContainersInfo(string, cadvisorapi.RequestOptions) (map[string]*cadvisorapi.ContainerInfo, error) {
	return c.containers(time.Now()), nil
}

// ContainerInfoV2 answers the summary API's requests (/metrics/resource,
// /stats/summary): the named container, and with Recursive those below
// it, with two samples a second apart, from which rates are derived.
func (c *syntheticCadvisor) ContainerInfoV2(name string, o cadvisorapi.RequestOptions) (map[string]cadvisorapi.ContainerInfo, error) {
	now := time.Now()
	out := map[string]cadvisorapi.ContainerInfo{}
	for n, info := range c.containers(now.Add(-time.Second), now) {
		if n == name || o.Recursive && (name == "/" || strings.HasPrefix(n, name+"/")) {
			out[n] = *info
		}
	}
	return out, nil
}

// Start does nothing: there is nothing to watch.
func (c *syntheticCadvisor) Start() error { return nil }

// MachineInfo describes the synthetic machine.
func (c *syntheticCadvisor) MachineInfo(klog.Logger) (*cadvisorapi.MachineInfo, error) {
	return &cadvisorapi.MachineInfo{
		NumCores: c.cores, NumPhysicalCores: c.cores, NumSockets: 1,
		InstanceID: cadvisorapi.InstanceID(c.node), MemoryCapacity: 16 * gib,
		Filesystems: []cadvisorapi.FilesystemInfo{{Device: rootDevice, Capacity: 100 * gib, Type: "vfs"}},
	}, nil
}

// VersionInfo names the synthetic versions.
func (c *syntheticCadvisor) VersionInfo() (*cadvisorapi.VersionInfo, error) {
	return &cadvisorapi.VersionInfo{KernelVersion: "6.1.0-synthetic", ContainerOsVersion: "hollow"}, nil
}

func (c *syntheticCadvisor) fs() cadvisorapi.FsInfo {
	return cadvisorapi.FsInfo{Timestamp: time.Now(), Device: rootDevice, Mountpoint: "/", Capacity: 100 * gib, Available: 80 * gib, Usage: 20 * gib}
}

// ImagesFsInfo reports the root filesystem.
func (c *syntheticCadvisor) ImagesFsInfo(context.Context) (cadvisorapi.FsInfo, error) {
	return c.fs(), nil
}

// RootFsInfo reports the root filesystem.
func (c *syntheticCadvisor) RootFsInfo() (cadvisorapi.FsInfo, error) { return c.fs(), nil }

// ContainerFsInfo reports the root filesystem.
func (c *syntheticCadvisor) ContainerFsInfo(context.Context) (cadvisorapi.FsInfo, error) {
	return c.fs(), nil
}

// GetDirFsInfo reports the root filesystem.
func (c *syntheticCadvisor) GetDirFsInfo(string) (cadvisorapi.FsInfo, error) { return c.fs(), nil }
