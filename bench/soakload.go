package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// The soak's custom resource: a namespaced Gear in soak.example.com,
// whose objects live in gearNamespace (never deleted, so that no gear
// outlives its namespace in etcd: there is no namespace controller).
const (
	gearGroup     = "soak.example.com"
	gearCRD       = "gears." + gearGroup
	gearNamespace = "soak-gears"
	// gears is the number of gears created each time the CRD is.
	gears = 50
)

var (
	crdGVR  = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gearGVR = schema.GroupVersionResource{Group: gearGroup, Version: "v1", Resource: "gears"}
)

// gearDocument is the custom_resource_state document covering Gear.
const gearDocument = `
    spec:
      resources:
        - groupVersionKind: {group: soak.example.com, version: v1, kind: Gear}
          labelsFromPath: {name: [metadata, name], namespace: [metadata, namespace]}
          metrics:
            - {name: teeth, help: Teeth of the gear., each: {type: Gauge, gauge: {path: [spec, teeth]}}}
`

// soakCluster holds the soak's objects and changes them: pod creates,
// deletes and label updates at a steady rate, namespaces deleted and
// created again, the Gear CRD created and deleted. Every write goes out
// one at a time, so the load is bounded by the rate asked for.
type soakCluster struct {
	c  kubernetes.Interface
	dc dynamic.Interface
	// spec gives nodes and containers per pod.
	spec clusterSpec
	now  metav1.Time

	// mu guards everything below.
	mu  sync.Mutex
	rng *rand.Rand
	// pods lists the live pods of each namespace that is not being
	// deleted.
	pods map[string][]string
	// seq numbers pods; rev numbers label revisions. Apart, so that new
	// pods take every shape buildPod gives in turn, as the loaded ones do.
	seq, rev int
	// counts of writes done and failed, and of cycles.
	creates, deletes, updates, failures, namespaceCycles, crdCycles int
}

// soakNamespace names namespace i.
func soakNamespace(i int) string { return fmt.Sprintf("soak-%02d", i) }

// newSoakCluster returns an empty soak cluster.
func newSoakCluster(c kubernetes.Interface, dc dynamic.Interface, spec clusterSpec) *soakCluster {
	return &soakCluster{
		c: c, dc: dc, spec: spec, now: metav1.Now(),
		rng:  rand.New(rand.NewPCG(1, 2)),
		pods: map[string][]string{},
	}
}

// load creates the nodes, the namespaces and spec.pods pods spread evenly
// over them.
func (sc *soakCluster) load(ctx context.Context, workers int) error {
	l := &loader{c: sc.c, spec: sc.spec, now: sc.now, objects: map[string]int{}}
	if err := parallel(ctx, workers, sc.spec.nodes, l.createNode); err != nil {
		return err
	}
	if err := sc.createNamespace(ctx, gearNamespace); err != nil {
		return err
	}
	for _, ns := range namespaces(sc.spec.namespaces) {
		if err := sc.createNamespace(ctx, ns); err != nil {
			return err
		}
		sc.mu.Lock()
		sc.pods[ns] = []string{}
		sc.mu.Unlock()
	}
	err := parallel(ctx, workers, sc.spec.pods, func(ctx context.Context, i int) error {
		return sc.createPod(ctx, soakNamespace(i%sc.spec.namespaces))
	})
	sc.mu.Lock()
	sc.creates = 0 // the churn's count
	sc.mu.Unlock()
	return err
}

// namespaces names the first n soak namespaces.
func namespaces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = soakNamespace(i)
	}
	return out
}

func (sc *soakCluster) createNamespace(ctx context.Context, ns string) error {
	_, err := sc.c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

// createPod creates a new pod in ns, with its status, and lists it.
func (sc *soakCluster) createPod(ctx context.Context, ns string) error {
	sc.mu.Lock()
	sc.seq++
	i := sc.seq
	sc.mu.Unlock()
	labels := map[string]string{"app": fmt.Sprintf("app-%d", i%40), "tier": []string{"web", "api", "batch"}[i%3], "rev": "0"}
	ref := owner("apps/v1", "ReplicaSet", "soak-"+ns, types.UID("soak-rs-"+ns))
	p := buildPod(ns, i, sc.spec, labels, ref, sc.now)
	p.Name = fmt.Sprintf("soak-%07d", i)
	status := p.Status
	pods := sc.c.CoreV1().Pods(ns)
	got, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating pod %s/%s: %w", ns, p.Name, err)
	}
	got.Status = status
	if _, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of pod %s/%s: %w", ns, p.Name, err)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	// A namespace being deleted is not listed: its pods go with it.
	if ps, ok := sc.pods[ns]; ok {
		sc.pods[ns] = append(ps, p.Name)
	}
	sc.creates++
	return nil
}

// pick returns a random namespace among those not being deleted and, when
// take is true, removes a random pod of it from the list and returns its
// name; else a pod stays listed.
func (sc *soakCluster) pick(take bool) (ns, pod string, ok bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	var names []string
	for n, ps := range sc.pods {
		if len(ps) > 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "", "", false
	}
	ns = names[sc.rng.IntN(len(names))]
	ps := sc.pods[ns]
	k := sc.rng.IntN(len(ps))
	pod = ps[k]
	if take {
		ps[k] = ps[len(ps)-1]
		sc.pods[ns] = ps[:len(ps)-1]
	}
	return ns, pod, true
}

// churn runs one write every 1/rate seconds until ctx ends, in turn a
// label update, a delete and a create, so that the number of pods stays
// where it is.
func (sc *soakCluster) churn(ctx context.Context, rate float64) {
	if rate <= 0 {
		return
	}
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A write under way when the run ends completes: a pod created
		// gets its status.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		var err error
		switch n % 3 {
		case 0:
			err = sc.updateLabels(wctx)
		case 1:
			err = sc.deletePod(wctx)
		case 2:
			ns, _, ok := sc.pick(false)
			if ok {
				err = sc.createPod(wctx, ns)
			}
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			sc.mu.Lock()
			sc.failures++
			sc.mu.Unlock()
		}
	}
}

// updateLabels gives a random pod a new rev label.
func (sc *soakCluster) updateLabels(ctx context.Context) error {
	ns, pod, ok := sc.pick(false)
	if !ok {
		return nil
	}
	sc.mu.Lock()
	sc.rev++
	rev := strconv.Itoa(sc.rev)
	sc.mu.Unlock()
	patch := []byte(`{"metadata":{"labels":{"rev":"` + rev + `"}}}`)
	if _, err := sc.c.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("relabelling pod %s/%s: %w", ns, pod, err)
	}
	sc.mu.Lock()
	sc.updates++
	sc.mu.Unlock()
	return nil
}

// deletePod deletes a random pod at once (no kubelet would confirm it).
func (sc *soakCluster) deletePod(ctx context.Context) error {
	ns, pod, ok := sc.pick(true)
	if !ok {
		return nil
	}
	if err := sc.c.CoreV1().Pods(ns).Delete(ctx, pod, *metav1.NewDeleteOptions(0)); err != nil {
		return fmt.Errorf("deleting pod %s/%s: %w", ns, pod, err)
	}
	sc.mu.Lock()
	sc.deletes++
	sc.mu.Unlock()
	return nil
}

// cycleNamespace deletes a namespace with its pods, as the namespace
// controller would (the control plane runs none), waits until it is gone,
// and creates it again with as many new pods.
func (sc *soakCluster) cycleNamespace(ctx context.Context, ns string) error {
	sc.mu.Lock()
	n := len(sc.pods[ns])
	delete(sc.pods, ns)
	sc.mu.Unlock()
	zero := int64(0)
	if err := sc.c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("deleting the pods of %s: %w", ns, err)
	}
	if err := sc.c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting namespace %s: %w", ns, err)
	}
	// The namespace controller's last step: drop the kubernetes finalizer.
	err := retry(ctx, time.Minute, func() error {
		got, err := sc.c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		got.Spec.Finalizers = nil
		if _, err := sc.c.CoreV1().Namespaces().Finalize(ctx, got, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return errors.New("still there")
	})
	if err != nil {
		return fmt.Errorf("waiting for namespace %s to go: %w", ns, err)
	}
	if err := sc.createNamespace(ctx, ns); err != nil {
		return err
	}
	sc.mu.Lock()
	sc.pods[ns] = []string{}
	sc.mu.Unlock()
	for range n {
		if err := sc.createPod(ctx, ns); err != nil {
			return err
		}
	}
	sc.mu.Lock()
	sc.namespaceCycles++
	sc.mu.Unlock()
	return nil
}

// crdUp creates the Gear CRD, waits until it is established, and creates
// the gears.
func (sc *soakCluster) crdUp(ctx context.Context) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": gearCRD},
		"spec": map[string]any{
			"group": gearGroup, "scope": "Namespaced",
			"names": map[string]any{"kind": "Gear", "plural": "gears", "singular": "gear", "listKind": "GearList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
	if _, err := sc.dc.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CRD %s: %w", gearCRD, err)
	}
	err := retry(ctx, time.Minute, func() error {
		u, err := sc.dc.Resource(crdGVR).Get(ctx, gearCRD, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
		return errors.New("not established")
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s: %w", gearCRD, err)
	}
	for i := range gears {
		g := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gearGroup + "/v1", "kind": "Gear",
			"metadata": map[string]any{"name": fmt.Sprintf("gear-%02d", i), "namespace": gearNamespace},
			"spec":     map[string]any{"teeth": int64(8 + i)},
		}}
		// The API server may not serve the new kind for a moment.
		err := retry(ctx, 30*time.Second, func() error {
			_, err := sc.dc.Resource(gearGVR).Namespace(gearNamespace).Create(ctx, g, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("creating gear %s: %w", g.GetName(), err)
		}
	}
	return nil
}

// crdDown deletes the Gear CRD (and so every gear) and waits until it is
// gone.
func (sc *soakCluster) crdDown(ctx context.Context) error {
	if err := sc.dc.Resource(crdGVR).Delete(ctx, gearCRD, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting CRD %s: %w", gearCRD, err)
	}
	err := retry(ctx, 2*time.Minute, func() error {
		_, err := sc.dc.Resource(crdGVR).Get(ctx, gearCRD, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errors.New("still there")
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to go: %w", gearCRD, err)
	}
	sc.mu.Lock()
	sc.crdCycles++
	sc.mu.Unlock()
	return nil
}

// retry calls f every 200 ms until it succeeds or limit passes.
func retry(ctx context.Context, limit time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// soakCounts are the writes and cycles done.
type soakCounts struct {
	creates, deletes, updates, failures, namespaceCycles, crdCycles int
}

func (sc *soakCluster) counts() soakCounts {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return soakCounts{sc.creates, sc.deletes, sc.updates, sc.failures, sc.namespaceCycles, sc.crdCycles}
}
