package watch

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// nodeResource describes nodes: kube-state-metrics' internal/store/node.go.
func nodeResource() *Resource {
	return newResource("nodes", false, &v1.Node{},
		func(ctx context.Context, c kubernetes.Interface, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Nodes().List(ctx, o)
		},
		func(ctx context.Context, c kubernetes.Interface, _ string, o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Nodes().Watch(ctx, o)
		},
		func(n *v1.Node, e *Emitter) {
			e.Identity("node", n.Name)
		},
		nodeFamilies,
	)
}

// nodeFamilies lists the node families, in kube-state-metrics' order.
func nodeFamilies(o FamilyOptions) []Family[*v1.Node] {
	return nil
}
