package main

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// markerBase is the first restart count the churn writes; each update
// writes the next one, so every marker value is unique.
const markerBase = 1000

// churner rewrites the status of running pods at a steady rate: each update
// sets the app container's restart count to a new value, and tells the
// receiver when, so that it can time the value's arrival.
type churner struct {
	// c writes pod status.
	c kubernetes.Interface
	// r is told of every marker written.
	r *receiver
	// rate is updates per second.
	rate float64

	// mu guards everything below.
	mu sync.Mutex
	// pods are the pods updated round robin, as last written.
	pods []*v1.Pod
	// next is the index of the next pod to update.
	next int
	// seq is the number of markers written so far.
	seq int
	// updates and failures count status writes since the last stats call.
	updates, failures int
}

// newChurner returns a churner over pods (which it then owns).
func newChurner(c kubernetes.Interface, r *receiver, pods []*v1.Pod, rate float64) *churner {
	return &churner{c: c, r: r, pods: pods, rate: rate}
}

// run updates rate pods per second until ctx ends. Writes go out one at a
// time; when one takes longer than the period, ticks are skipped and stats
// shows the rate reached.
func (ch *churner) run(ctx context.Context) {
	if ch.rate <= 0 || len(ch.pods) == 0 {
		return
	}
	t := time.NewTicker(time.Duration(float64(time.Second) / ch.rate))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ch.update(ctx)
		}
	}
}

// update writes the next marker into the next pod.
func (ch *churner) update(ctx context.Context) {
	ch.mu.Lock()
	p := ch.pods[ch.next].DeepCopy()
	i := ch.next
	ch.next = (ch.next + 1) % len(ch.pods)
	value := markerBase + ch.seq
	ch.seq++
	ch.mu.Unlock()

	for k := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[k].Name == markerContainer {
			p.Status.ContainerStatuses[k].RestartCount = int32(value)
		}
	}
	// An unconditional update: the churn is the pods' only writer.
	p.ResourceVersion = ""
	written := time.Now()
	ch.r.expect(p.Namespace, p.Name, float64(value), written)
	got, err := ch.c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if err != nil {
		ch.r.cancel(p.Namespace, p.Name)
		if ctx.Err() == nil {
			ch.failures++
		}
		return
	}
	ch.pods[i] = got
	ch.updates++
}

// stats returns and resets the count of successful and failed writes.
func (ch *churner) stats() (updates, failures int) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	updates, failures = ch.updates, ch.failures
	ch.updates, ch.failures = 0, 0
	return updates, failures
}
