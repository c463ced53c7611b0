package watch

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Object sharding splits the objects among agent replicas as
// kube-state-metrics does (pkg/sharding/listwatch.go): the object UID is
// hashed with FNV-64a and the hash is mapped onto the replicas with jump consistent hashing (Lamping
// and Veach, https://arxiv.org/abs/1406.2294). The same object lands on the
// same replica in both programs, so a sharded kube-state-metrics can be
// replaced replica by replica. The word shard here, as in the keys shard and
// total_shards, is kube-state-metrics'; on the send side a shard is something
// else (package queue).

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// OwnedBy reports whether shard (of total) owns the object with this UID.
// With total <= 1 every shard owns everything. It does not allocate.
func OwnedBy(uid types.UID, shard, total int) bool {
	if total <= 1 {
		return true
	}
	return jumpHash(fnv64a(string(uid)), total) == shard
}

// fnv64a is hash/fnv's New64a over s, without its allocation.
func fnv64a(s string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}

// jumpHash maps key onto [0, buckets), moving only 1/n of the keys when a
// bucket is added. It is the paper's algorithm, with the float64 arithmetic
// of github.com/dgryski/go-jump, which kube-state-metrics uses.
func jumpHash(key uint64, buckets int) int {
	b, j := int64(-1), int64(0)
	for j < int64(buckets) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// Owner returns the predicate that tells the objects this instance renders,
// or nil when it renders all of them (no sharding). Call it after Validate,
// and after auto-sharding has set Shard and TotalShards.
func (c *Config) Owner() func(types.UID) bool {
	if c.TotalShards <= 1 {
		return nil
	}
	shard, total := c.Shard, c.TotalShards
	return func(uid types.UID) bool { return OwnedBy(uid, shard, total) }
}

// ShardFromStatefulSet finds this instance's shard and the total number of
// shards as kube-state-metrics' auto-sharding does: the shard is the pod's
// ordinal (the number after the last '-' of its name) and the total is the
// replica count of its StatefulSet, named like the pod without the ordinal.
// It reads the StatefulSet once (RBAC: get on statefulsets in namespace).
//
// Unlike kube-state-metrics, which watches the StatefulSet and re-shards in
// place, a change of replicas takes effect when the pods restart.
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
	total = 1
	if ss.Spec.Replicas != nil {
		total = int(*ss.Spec.Replicas)
	}
	if shard >= total {
		return 0, 0, fmt.Errorf("auto_sharding: pod %s has ordinal %d but StatefulSet %s/%s has %d replicas", pod, shard, namespace, set, total)
	}
	return shard, total, nil
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
