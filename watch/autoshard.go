package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ShardFromStatefulSet finds this instance's shard and the total number of
// shards as kube-state-metrics' auto-sharding does: the shard is the pod's
// ordinal (the number after the last '-' of its name) and the total is the
// replica count of its StatefulSet, named like the pod without the ordinal.
// It reads the StatefulSet once (RBAC: get on statefulsets in namespace);
// WatchReplicas follows its changes. A shard at or past the total is a pod
// the StatefulSet is removing: it owns nothing (Config.Owner).
func ShardFromStatefulSet(ctx context.Context, c kubernetes.Interface, namespace, pod string) (shard, total int, err error) {
	if namespace == "" || pod == "" {
		return 0, 0, fmt.Errorf("auto_sharding: the pod name and namespace are unknown: set POD_NAME and POD_NAMESPACE from the downward API")
	}
	set, shard, err := parseOrdinal(pod)
	if err != nil {
		return 0, 0, err
	}
	ss, err := c.AppsV1().StatefulSets(namespace).Get(ctx, set, metav1.GetOptions{})
	if err != nil {
		return 0, 0, fmt.Errorf("auto_sharding: reading StatefulSet %s/%s: %w", namespace, set, err)
	}
	return shard, replicas(ss), nil
}

// WatchReplicas calls changed with the replica count of the StatefulSet pod
// belongs to each time the API server tells it (the first time included),
// until ctx ends. It watches that one object (RBAC: list and watch on
// statefulsets, which resourceNames can restrict to it). failed is told
// why a list or watch failed (it is retried with backoff), so that a
// missing grant is not silent. changed and failed run on one goroutine, one
// call at a time.
func WatchReplicas(ctx context.Context, c kubernetes.Interface, namespace, pod string, changed func(total int), failed func(error)) error {
	set, _, err := parseOrdinal(pod)
	if err != nil {
		return err
	}
	sel := fields.OneTermEqualSelector("metadata.name", set).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return c.AppsV1().StatefulSets(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (apiwatch.Interface, error) {
			o.FieldSelector = sel
			return c.AppsV1().StatefulSets(namespace).Watch(ctx, o)
		},
	}
	tell := func(obj any) {
		if ss, ok := obj.(*appsv1.StatefulSet); ok {
			changed(replicas(ss))
		}
	}
	inf := cache.NewSharedIndexInformerWithOptions(plainListWatch{lw}, &appsv1.StatefulSet{}, cache.SharedIndexInformerOptions{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    tell,
		UpdateFunc: func(_, obj any) { tell(obj) },
	}); err != nil {
		return fmt.Errorf("auto_sharding: watching StatefulSet %s/%s: %w", namespace, set, err)
	}
	if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), apierrors.IsResourceExpired(err), apierrors.IsGone(err):
			// A watch that ends or expires is re-established as usual.
			cache.DefaultWatchErrorHandler(ctx, r, err)
		default:
			failed(fmt.Errorf("auto_sharding: watching StatefulSet %s/%s: %w", namespace, set, err))
		}
	}); err != nil {
		return fmt.Errorf("auto_sharding: watching StatefulSet %s/%s: %w", namespace, set, err)
	}
	go inf.RunWithContext(ctx)
	return nil
}

// plainListWatch lists, then watches: for one object a streaming
// watch-list saves nothing.
type plainListWatch struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells client-go's reflector
// (watchlist.DoesClientNotSupportWatchListSemantics) to list.
func (plainListWatch) IsWatchListSemanticsUnSupported() bool { return true }

// replicas is a StatefulSet's spec.replicas, 1 when unset (its default).
func replicas(ss *appsv1.StatefulSet) int {
	if ss.Spec.Replicas == nil {
		return 1
	}
	return int(*ss.Spec.Replicas)
}

// parseOrdinal splits a StatefulSet pod's name into the StatefulSet's name
// and the ordinal.
func parseOrdinal(pod string) (set string, ordinal int, err error) {
	i := strings.LastIndexByte(pod, '-')
	if i <= 0 {
		return "", 0, fmt.Errorf("auto_sharding: pod name %q has no ordinal: is it in a StatefulSet?", pod)
	}
	n, err := strconv.Atoi(pod[i+1:])
	if err != nil || n < 0 || pod[i+1:] != strconv.Itoa(n) {
		return "", 0, fmt.Errorf("auto_sharding: pod name %q does not end in an ordinal: is it in a StatefulSet?", pod)
	}
	return pod[:i], n, nil
}
