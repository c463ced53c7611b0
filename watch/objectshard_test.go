package watch

import (
	"context"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// The vectors were computed with hash/fnv's New64a and
// github.com/dgryski/go-jump's Hash, the two kube-state-metrics uses
// (pkg/sharding/listwatch.go); the FNV values of "" and "a" are the
// published test vectors of FNV-1a.
func TestOwnedByVectors(t *testing.T) {
	cases := []struct {
		uid    types.UID
		fnv    uint64
		shards map[int]int // total shards: the owning shard
	}{
		{"", 0xcbf29ce484222325, map[int]int{2: 1, 3: 1, 5: 1, 10: 1}},
		{"a", 0xaf63dc4c8601ec8c, map[int]int{2: 1, 3: 2, 5: 2, 10: 2}},
		{"0c9b6d4e-1f5a-4b3c-9d2e-7a8b9c0d1e2f", 0x5e3d4f40e2684dd9, map[int]int{2: 0, 3: 0, 5: 0, 10: 0}},
		{"3f2504e0-4f89-11d3-9a0c-0305e82c3301", 0xa6fbb9057c9867a0, map[int]int{2: 1, 3: 2, 5: 3, 10: 3}},
		{"6ba7b810-9dad-11d1-80b4-00c04fd430c8", 0xad05fd9059563830, map[int]int{2: 1, 3: 1, 5: 4, 10: 4}},
		{"123e4567-e89b-12d3-a456-426614174000", 0x8da4bf2f8d2be9bf, map[int]int{2: 0, 3: 0, 5: 4, 10: 4}},
		{"550e8400-e29b-41d4-a716-446655440000", 0xfbb0538ee83a5048, map[int]int{2: 1, 3: 1, 5: 4, 10: 4}},
	}
	for _, c := range cases {
		t.Run(string(c.uid), func(t *testing.T) {
			require.Equal(t, c.fnv, fnv64a(string(c.uid)))
			for total, want := range c.shards {
				require.Equal(t, want, jumpHash(c.fnv, total), "total %d", total)
				for shard := range total {
					require.Equal(t, shard == want, OwnedBy(c.uid, shard, total), "shard %d of %d", shard, total)
				}
			}
			require.True(t, OwnedBy(c.uid, 0, 1), "one shard owns everything")
		})
	}
	for key, want := range map[uint64]int{0: 0, 1: 549, 0xdeadbeef: 285, 0xffffffffffffffff: 313} {
		require.Equal(t, want, jumpHash(key, 1000), "jump(%#x, 1000)", key)
	}
}

// fnv64a is hash/fnv's FNV-64a, and every object has exactly one shard,
// spread about evenly.
func TestOwnedByProperties(t *testing.T) {
	counts := make([]int, 3)
	for i := range 3000 {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i*7919)
		h := fnv.New64a()
		_, _ = h.Write([]byte(uid))
		require.Equal(t, h.Sum64(), fnv64a(uid))
		owners := 0
		for s := range 3 {
			if OwnedBy(types.UID(uid), s, 3) {
				owners++
				counts[s]++
			}
		}
		require.Equal(t, 1, owners, uid)
	}
	for s, n := range counts {
		require.InDelta(t, 1000, n, 150, "shard %d", s)
	}
}

func TestShardingConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		err  string
	}{
		{"defaults", Config{}, ""},
		{"second of two", Config{Shard: 1, TotalShards: 2}, ""},
		{"shard out of range", Config{Shard: 2, TotalShards: 2}, "shard: must be in [0, total_shards) = [0, 2), not 2"},
		{"shard without total", Config{Shard: 1}, "shard: must be in [0, total_shards) = [0, 1), not 1"},
		{"negative shard", Config{Shard: -1, TotalShards: 2}, "shard: must be in [0, total_shards) = [0, 2), not -1"},
		{"negative total", Config{TotalShards: -2}, "total_shards: must be at least 1, not -2"},
		{"auto", Config{AutoSharding: true}, ""},
		{"auto with static", Config{AutoSharding: true, TotalShards: 2}, "auto_sharding: takes shard and total_shards from the StatefulSet: leave them unset"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Resources = []string{"pods"}
			err := c.cfg.Validate()
			if c.err == "" {
				require.NoError(t, err)
				require.GreaterOrEqual(t, c.cfg.TotalShards, 1)
				return
			}
			require.EqualError(t, err, c.err)
		})
	}
	one := Config{Resources: []string{"pods"}}
	require.NoError(t, one.Validate())
	require.Nil(t, one.Owner(), "unsharded: no predicate")
	two := Config{Resources: []string{"pods"}, Shard: 1, TotalShards: 2}
	require.NoError(t, two.Validate())
	require.True(t, two.Owner()("a"))
	require.False(t, two.Owner()("0c9b6d4e-1f5a-4b3c-9d2e-7a8b9c0d1e2f"))
}

func TestShardFromStatefulSet(t *testing.T) {
	ss := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-state-push", Namespace: "monitoring"},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
	}
	c := fake.NewClientset(ss)
	ctx := context.Background()

	shard, total, err := ShardFromStatefulSet(ctx, c, "monitoring", "kube-state-push-2")
	require.NoError(t, err)
	require.Equal(t, []int{2, 3}, []int{shard, total})

	// Past the replicas (scaling down): a shard that owns nothing.
	shard, total, err = ShardFromStatefulSet(ctx, c, "monitoring", "kube-state-push-3")
	require.NoError(t, err)
	require.Equal(t, []int{3, 3}, []int{shard, total})
	past := (&Config{Shard: shard, TotalShards: total}).Owner()
	require.NotNil(t, past)
	require.False(t, past("a"))
	require.False(t, (&Config{Shard: 1, TotalShards: 1}).Owner()("a"), "ordinal 1 of one replica")

	for pod, msg := range map[string]string{
		"kube-state-push":    `auto_sharding: pod name "kube-state-push" does not end in an ordinal: is it in a StatefulSet?`,
		"kube-state-push-01": `auto_sharding: pod name "kube-state-push-01" does not end in an ordinal: is it in a StatefulSet?`,
		"nodash":             `auto_sharding: pod name "nodash" has no ordinal: is it in a StatefulSet?`,
		"":                   `auto_sharding: the pod name and namespace are unknown: set POD_NAME and POD_NAMESPACE from the downward API`,
	} {
		_, _, err := ShardFromStatefulSet(ctx, c, "monitoring", pod)
		require.EqualError(t, err, msg, pod)
	}
	_, _, err = ShardFromStatefulSet(ctx, c, "other", "kube-state-push-0")
	require.ErrorContains(t, err, "auto_sharding: reading StatefulSet other/kube-state-push")
}

// WatchReplicas tells the replica count at start and at each change.
func TestWatchReplicas(t *testing.T) {
	ss := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-state-push", Namespace: "monitoring"},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
	}
	c := fake.NewClientset(ss)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan int, 10)
	require.NoError(t, WatchReplicas(ctx, c, "monitoring", "kube-state-push-1", func(n int) { got <- n }, func(err error) { t.Error(err) }))
	next := func() int {
		select {
		case n := <-got:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no replica count told")
			return 0
		}
	}
	require.Equal(t, 2, next())
	ss.Spec.Replicas = ptr.To[int32](3)
	_, err := c.AppsV1().StatefulSets("monitoring").Update(ctx, ss, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, 3, next())

	require.EqualError(t, WatchReplicas(ctx, c, "monitoring", "nodash", func(int) {}, func(error) {}),
		`auto_sharding: pod name "nodash" has no ordinal: is it in a StatefulSet?`)
}

func BenchmarkOwnedBy(b *testing.B) {
	b.ReportAllocs()
	uid := types.UID("550e8400-e29b-41d4-a716-446655440000")
	for b.Loop() {
		OwnedBy(uid, 1, 4)
	}
}
