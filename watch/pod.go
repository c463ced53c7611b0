package watch

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// podResource describes pods: kube-state-metrics' internal/store/pod.go.
func podResource() *Resource {
	return newResource("pods", true, &v1.Pod{},
		func(ctx context.Context, c kubernetes.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Pods(ns).List(ctx, o)
		},
		func(ctx context.Context, c kubernetes.Interface, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Pods(ns).Watch(ctx, o)
		},
		func(p *v1.Pod, e *Emitter) {
			e.Identity("namespace", p.Namespace, "pod", p.Name, "uid", string(p.UID))
		},
		podFamilies,
	)
}

// podFamilies lists the pod families, in kube-state-metrics' order.
func podFamilies(o FamilyOptions) []Family[*v1.Pod] {
	return nil
}
