package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// podsPerDeployment is how many pods each synthetic deployment owns
// (through its one replica set) unless the spec says otherwise; each
// deployment also has a service, config maps and a secret.
const podsPerDeployment = 10

// clusterSpec sizes the synthetic cluster.
type clusterSpec struct {
	// pods is the number of pods; deployments = ceil(pods / 10).
	pods int
	// nodes is the number of nodes the pods are spread over.
	nodes int
	// containers is the number of regular containers per pod; every fourth
	// pod has one more, and every second pod an init container.
	containers int
	// namespaces is the number of namespaces the deployments are spread
	// over.
	namespaces int
	// podsPerDeployment is the pods each deployment owns; 0 means
	// podsPerDeployment.
	podsPerDeployment int
	// configMaps is the config maps each deployment has; 0 means one.
	configMaps int
	// spreadStates spreads the pod states over each hundred pods instead of
	// giving the first 13 the states other than running: a cluster of a
	// few dozen pods then has mostly running pods, as a real one does.
	spreadStates bool
}

// edgeSpec is the edge profile, the size most edge clusters have: about
// 100 objects (3 namespaces, 3 nodes, 6 deployments of 2 pods, each with
// 10 config maps) and some 1,150 kube-state-metrics series.
var edgeSpec = clusterSpec{pods: 12, nodes: 3, containers: 2, namespaces: 3, podsPerDeployment: 2, configMaps: 10, spreadStates: true}

// perDeployment is the pods each deployment owns.
func (s clusterSpec) perDeployment() int {
	if s.podsPerDeployment > 0 {
		return s.podsPerDeployment
	}
	return podsPerDeployment
}

// deployments is the number of deployments the spec makes.
func (s clusterSpec) deployments() int {
	return (s.pods + s.perDeployment() - 1) / s.perDeployment()
}

// stateOf gives pod i its state. Spread, 37 walks each hundred in a
// different order (it shares no factor with 100), so the proportions of
// every full hundred stay those of podStateOf.
func (s clusterSpec) stateOf(i int) podState {
	if s.spreadStates {
		return podStateOf(i/100*100 + i%100*37%100)
	}
	return podStateOf(i)
}

// podState is the state a synthetic pod is put in.
type podState int

// The pod states, in the proportions podStateOf gives them.
const (
	// stateRunning: running, every container running and ready (87%).
	stateRunning podState = iota
	// statePending: scheduled, containers waiting in ContainerCreating (3%).
	statePending
	// stateCrashLoop: app container waiting in CrashLoopBackOff after
	// restarts (3%).
	stateCrashLoop
	// stateOOMKilled: app container running again after being OOMKilled (2%).
	stateOOMKilled
	// stateCompleted: phase Succeeded, every container terminated (2%).
	stateCompleted
	// stateNotReady: running, app container not ready (2%).
	stateNotReady
	// stateEvicted: phase Failed, reason Evicted (1%).
	stateEvicted
)

// String names the state, for the report.
func (s podState) String() string {
	return [...]string{"running", "pending", "crashloop", "oomkilled", "completed", "notready", "evicted"}[s]
}

// podStateOf gives pod i its state: a fixed pattern over i mod 100.
func podStateOf(i int) podState {
	switch m := i % 100; {
	case m < 3:
		return statePending
	case m < 6:
		return stateCrashLoop
	case m < 8:
		return stateOOMKilled
	case m < 10:
		return stateCompleted
	case m < 12:
		return stateNotReady
	case m < 13:
		return stateEvicted
	default:
		return stateRunning
	}
}

// cluster is the loaded synthetic cluster.
type cluster struct {
	spec clusterSpec
	// churnable are the running, ready pods, as the API server returned them
	// after their status was written; the churn rewrites their status.
	churnable []*v1.Pod
	// objects counts the objects created, by kind.
	objects map[string]int
	// took is how long loading took.
	took time.Duration
}

// loader creates the synthetic cluster's objects.
type loader struct {
	// c is a client with no rate limit.
	c kubernetes.Interface
	// spec sizes the cluster.
	spec clusterSpec
	// now is the creation time written into statuses.
	now metav1.Time
	// created counts objects created, for progress.
	created atomic.Int64
	// mu guards churnable and objects.
	mu        sync.Mutex
	churnable []*v1.Pod
	objects   map[string]int
}

// loadCluster creates namespaces, nodes, deployments with their replica
// sets, services, config maps and secrets, and pods with their status, with
// workers requests in flight. It prints progress to logf.
func loadCluster(ctx context.Context, c kubernetes.Interface, spec clusterSpec, workers int, logf func(string, ...any)) (*cluster, error) {
	if spec.pods < 1 || spec.nodes < 1 || spec.containers < 1 || spec.namespaces < 1 {
		return nil, fmt.Errorf("cluster: pods (%d), nodes (%d), containers (%d) and namespaces (%d) must each be at least 1",
			spec.pods, spec.nodes, spec.containers, spec.namespaces)
	}
	start := time.Now()
	l := &loader{c: c, spec: spec, now: metav1.NewTime(start.Add(-24 * time.Hour).Truncate(time.Second)), objects: map[string]int{}}

	stopProgress := l.progress(logf)
	defer stopProgress()
	for i := range spec.namespaces {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceName(i), Labels: map[string]string{"team": fmt.Sprintf("team-%d", i%5)}}}
		if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
		l.count("namespaces")
	}
	if err := parallel(ctx, workers, spec.nodes, l.createNode); err != nil {
		return nil, err
	}
	if err := parallel(ctx, workers, spec.deployments(), l.createDeployment); err != nil {
		return nil, err
	}
	return &cluster{spec: spec, churnable: l.churnable, objects: l.objects, took: time.Since(start)}, nil
}

// progress logs the number of objects created every 10 seconds until the
// returned function is called.
func (l *loader) progress(logf func(string, ...any)) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				logf("loading: %d objects created", l.created.Load())
			}
		}
	}()
	return func() { close(done) }
}

// count adds one created object of a kind.
func (l *loader) count(kind string) {
	l.created.Add(1)
	l.mu.Lock()
	l.objects[kind]++
	l.mu.Unlock()
}

// parallel runs f(0..n-1) on workers goroutines and returns the first
// error, after which no new calls start.
func parallel(ctx context.Context, workers, n int, f func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := f(ctx, i); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// namespaceName names namespace i.
func namespaceName(i int) string { return fmt.Sprintf("bench-%03d", i) }

// nodeName names node i.
func nodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// createNode creates node i and writes its status as a kubelet would.
func (l *loader) createNode(ctx context.Context, i int) error {
	n := buildNode(i, l.now)
	status := n.Status
	got, err := l.c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", n.Name, err)
	}
	got.Status = status
	if _, err := l.c.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of node %s: %w", n.Name, err)
	}
	l.count("nodes")
	return nil
}

// buildNode returns node i with its status: 16 cores, 64 GiB, 110 pods;
// every 10th tainted, every 50th not ready.
func buildNode(i int, now metav1.Time) *v1.Node {
	name := nodeName(i)
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname":           name,
			"kubernetes.io/os":                 "linux",
			"topology.kubernetes.io/zone":      fmt.Sprintf("zone-%c", 'a'+i%3),
			"node.kubernetes.io/instance-type": "m6.4xlarge",
		}},
		Spec: v1.NodeSpec{
			PodCIDR:    fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256),
			ProviderID: "bench://" + name,
		},
	}
	if i%10 == 0 {
		n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "batch", Effect: v1.TaintEffectNoSchedule}}
	}
	ready := v1.ConditionTrue
	if i%50 == 49 {
		ready = v1.ConditionFalse
	}
	cond := func(t v1.NodeConditionType, s v1.ConditionStatus) v1.NodeCondition {
		return v1.NodeCondition{Type: t, Status: s, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "Bench"}
	}
	n.Status = v1.NodeStatus{
		Capacity: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("16"), v1.ResourceMemory: resource.MustParse("64Gi"),
			v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("200Gi"),
		},
		Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("15800m"), v1.ResourceMemory: resource.MustParse("62Gi"),
			v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("180Gi"),
		},
		Conditions: []v1.NodeCondition{
			cond(v1.NodeReady, ready),
			cond(v1.NodeMemoryPressure, v1.ConditionFalse),
			cond(v1.NodeDiskPressure, v1.ConditionFalse),
			cond(v1.NodePIDPressure, v1.ConditionFalse),
		},
		Addresses: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: fmt.Sprintf("172.16.%d.%d", i/250, 1+i%250)},
			{Type: v1.NodeHostName, Address: name},
		},
		NodeInfo: v1.NodeSystemInfo{
			MachineID: fmt.Sprintf("%032x", i), SystemUUID: fmt.Sprintf("%032x", i+1), BootID: fmt.Sprintf("%032x", i+2),
			KernelVersion: "6.8.0-45-generic", OSImage: "Ubuntu 24.04.1 LTS", OperatingSystem: "linux", Architecture: "amd64",
			ContainerRuntimeVersion: "containerd://2.0.0", KubeletVersion: "v1.37.2", KubeProxyVersion: "v1.37.2", //nolint:staticcheck // filled in as on a real node
		},
	}
	return n
}

// deploymentName names deployment d.
func deploymentName(d int) string { return fmt.Sprintf("app-%05d", d) }

// templateHash is the pod-template-hash of every replica set.
const templateHash = "7d9f8b6c5"

// createDeployment creates deployment d in its namespace with its replica
// set, service, config map and secret, and its pods with their status.
func (l *loader) createDeployment(ctx context.Context, d int) error {
	ns := namespaceName(d % l.spec.namespaces)
	name := deploymentName(d)
	first := d * l.spec.perDeployment()
	replicas := min(l.spec.perDeployment(), l.spec.pods-first)
	labels := map[string]string{"app": name, "tier": []string{"web", "api", "worker"}[d%3]}
	template := v1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: markerContainer, Image: image(d)}}},
	}
	r := int32(replicas)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &r, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: template,
		},
	}
	apps := l.c.AppsV1()
	gotDep, err := apps.Deployments(ns).Create(ctx, dep, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating deployment %s/%s: %w", ns, name, err)
	}
	gotDep.Status = appsv1.DeploymentStatus{
		ObservedGeneration: gotDep.Generation, Replicas: r, UpdatedReplicas: r, ReadyReplicas: r, AvailableReplicas: r,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: v1.ConditionTrue, Reason: "MinimumReplicasAvailable"}},
	}
	if _, err := apps.Deployments(ns).UpdateStatus(ctx, gotDep, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of deployment %s/%s: %w", ns, name, err)
	}
	l.count("deployments")

	rsLabels := map[string]string{"app": name, "tier": labels["tier"], "pod-template-hash": templateHash}
	rsTemplate := template
	rsTemplate.Labels = rsLabels
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name + "-" + templateHash, Namespace: ns, Labels: rsLabels,
			OwnerReferences: []metav1.OwnerReference{owner("apps/v1", "Deployment", name, gotDep.UID)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &r, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name, "pod-template-hash": templateHash}}, Template: rsTemplate,
		},
	}
	gotRS, err := apps.ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating replica set %s/%s: %w", ns, rs.Name, err)
	}
	gotRS.Status = appsv1.ReplicaSetStatus{Replicas: r, FullyLabeledReplicas: r, ReadyReplicas: r, AvailableReplicas: r, ObservedGeneration: gotRS.Generation}
	if _, err := apps.ReplicaSets(ns).UpdateStatus(ctx, gotRS, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of replica set %s/%s: %w", ns, rs.Name, err)
	}
	l.count("replicasets")

	core := l.c.CoreV1()
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: v1.ServiceSpec{
			// Headless: the API server's service range has room for only 254
			// cluster IPs.
			ClusterIP: v1.ClusterIPNone, Selector: map[string]string{"app": name},
			Ports: []v1.ServicePort{{Name: "http", Port: 80}},
		},
	}
	if _, err := core.Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating service %s/%s: %w", ns, name, err)
	}
	l.count("services")
	for k := range max(l.spec.configMaps, 1) {
		cm := &v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-config", Namespace: ns, Labels: labels},
			Data:       map[string]string{"app.yaml": "replicas: 10\nlog_level: info\n", "feature_flags": "a,b,c"},
		}
		if k > 0 {
			cm.Name += fmt.Sprintf("-%d", k)
		}
		if _, err := core.ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating config map %s/%s: %w", ns, cm.Name, err)
		}
		l.count("configmaps")
	}
	sec := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-credentials", Namespace: ns, Labels: labels},
		Type:       v1.SecretTypeOpaque,
		Data:       map[string][]byte{"username": []byte("app"), "password": []byte(fmt.Sprintf("bench-%d", d))},
	}
	if _, err := core.Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating secret %s/%s: %w", ns, sec.Name, err)
	}
	l.count("secrets")

	ref := owner("apps/v1", "ReplicaSet", rs.Name, gotRS.UID)
	for k := range replicas {
		if err := l.createPod(ctx, ns, first+k, rsLabels, ref); err != nil {
			return err
		}
	}
	return nil
}

// owner returns a controller owner reference.
func owner(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes}
}

// image is deployment d's app image.
func image(d int) string {
	return fmt.Sprintf("registry.example/team-%d/app-%d:1.%d.0", d%5, d%50, d%7)
}

// createPod creates pod i and writes its status.
func (l *loader) createPod(ctx context.Context, ns string, i int, labels map[string]string, ref metav1.OwnerReference) error {
	p := buildPod(ns, i, l.spec, labels, ref, l.now)
	status := p.Status
	pods := l.c.CoreV1().Pods(ns)
	got, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating pod %s/%s: %w", ns, p.Name, err)
	}
	got.Status = status
	got, err = pods.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("writing the status of pod %s/%s: %w", ns, p.Name, err)
	}
	l.count("pods")
	if l.spec.stateOf(i) == stateRunning {
		l.mu.Lock()
		l.churnable = append(l.churnable, got)
		l.mu.Unlock()
	}
	return nil
}

// podName names pod i of a deployment.
func podName(i int) string {
	return fmt.Sprintf("%s-%s-%05x", deploymentName(i/podsPerDeployment), templateHash, i)
}

// buildPod returns pod i, bound to a node, with requests and limits, and
// the status its state calls for.
func buildPod(ns string, i int, spec clusterSpec, labels map[string]string, ref metav1.OwnerReference, now metav1.Time) *v1.Pod {
	d := i / spec.perDeployment()
	state := spec.stateOf(i)
	n := spec.containers
	if i%4 == 3 {
		n++
	}
	names := make([]string, n)
	for k := range names {
		switch k {
		case 0:
			names[k] = markerContainer
		case 1:
			names[k] = "sidecar"
		default:
			names[k] = fmt.Sprintf("helper-%d", k-1)
		}
	}
	cpu := func(m int) resource.Quantity { return *resource.NewMilliQuantity(int64(m), resource.DecimalSI) }
	mem := func(mi int) resource.Quantity { return *resource.NewQuantity(int64(mi)<<20, resource.BinarySI) }
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: podName(i), Namespace: ns, Labels: labels, OwnerReferences: []metav1.OwnerReference{ref},
		},
		Spec: v1.PodSpec{NodeName: nodeName(i % spec.nodes), RestartPolicy: v1.RestartPolicyAlways},
	}
	for k, name := range names {
		c := v1.Container{Name: name, Image: image(d)}
		if k > 0 {
			c.Image = fmt.Sprintf("registry.example/sidecars/%s:2.%d", name, k)
		}
		c.Resources.Requests = v1.ResourceList{v1.ResourceCPU: cpu(100 * (1 + i%4) / (k + 1)), v1.ResourceMemory: mem(128 * (1 + i%3) / (k + 1))}
		if k == 0 {
			c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: cpu(200 * (1 + i%4)), v1.ResourceMemory: mem(256 * (1 + i%3))}
		}
		c.Ports = []v1.ContainerPort{{Name: fmt.Sprintf("p%d", k), ContainerPort: int32(8080 + k)}}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	if i%2 == 0 {
		p.Spec.InitContainers = []v1.Container{{
			Name: "init", Image: "registry.example/tools/migrate:1.0",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: cpu(50), v1.ResourceMemory: mem(64)}},
		}}
	}
	p.Status = buildPodStatus(i, state, p.Spec, now)
	return p
}

// buildPodStatus returns the status a kubelet would write for pod i in the
// given state.
func buildPodStatus(i int, state podState, spec v1.PodSpec, now metav1.Time) v1.PodStatus {
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}
	yes := true
	st := v1.PodStatus{
		Phase: v1.PodRunning, QOSClass: v1.PodQOSBurstable, StartTime: &now,
		HostIP: fmt.Sprintf("172.16.%d.%d", (i%1000)/250, 1+(i%1000)%250),
		PodIP:  fmt.Sprintf("10.%d.%d.%d", 128+i/65536, (i/256)%256, i%256),
	}
	st.HostIPs = []v1.HostIP{{IP: st.HostIP}}
	st.PodIPs = []v1.PodIP{{IP: st.PodIP}}
	ready := v1.ConditionTrue
	for k, c := range spec.Containers {
		cs := v1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: fmt.Sprintf("%s@sha256:%064x", c.Image, i%97+k),
			ContainerID: fmt.Sprintf("containerd://%032x%032x", i, k), Ready: true, Started: &yes, State: running,
		}
		if k == 0 {
			switch state {
			case statePending:
				cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
				cs.Ready, cs.ContainerID = false, ""
			case stateCrashLoop:
				cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting failed container"}}
				cs.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, StartedAt: now, FinishedAt: now}}
				cs.RestartCount, cs.Ready = int32(5+i%7), false
			case stateOOMKilled:
				cs.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, StartedAt: now, FinishedAt: now}}
				cs.RestartCount = int32(1 + i%3)
			case stateNotReady:
				cs.Ready = false
			}
		}
		if state == statePending {
			cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			cs.Ready, cs.ContainerID, cs.Started = false, "", nil
		}
		if state == stateCompleted || state == stateEvicted {
			reason, code := "Completed", int32(0)
			if state == stateEvicted {
				reason, code = "Error", 137
			}
			cs.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: reason, ExitCode: code, StartedAt: now, FinishedAt: now}}
			cs.Ready, cs.Started = false, nil
		}
		if !cs.Ready {
			ready = v1.ConditionFalse
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	for _, c := range spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, v1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image + "@sha256:" + fmt.Sprintf("%064x", 1),
			ContainerID: fmt.Sprintf("containerd://%032xff", i),
			State:       v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed", StartedAt: now, FinishedAt: now}},
		})
	}
	switch state {
	case statePending:
		st.Phase = v1.PodPending
	case stateCompleted:
		st.Phase = v1.PodSucceeded
	case stateEvicted:
		st.Phase, st.Reason, st.Message = v1.PodFailed, "Evicted", "The node was low on resource: memory."
	}
	cond := func(t v1.PodConditionType, s v1.ConditionStatus) v1.PodCondition {
		return v1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
	}
	st.Conditions = []v1.PodCondition{
		cond(v1.PodScheduled, v1.ConditionTrue),
		cond(v1.PodInitialized, v1.ConditionTrue),
		cond(v1.ContainersReady, ready),
		cond(v1.PodReady, ready),
	}
	return st
}
