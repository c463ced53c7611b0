package watch

import (
	"k8s.io/apimachinery/pkg/types"
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
	if c.Shard >= c.TotalShards {
		// A replica past the StatefulSet's replicas (auto_sharding, while
		// it scales down) owns nothing, as in kube-state-metrics.
		return func(types.UID) bool { return false }
	}
	if c.TotalShards <= 1 {
		return nil
	}
	shard, total := c.Shard, c.TotalShards
	return func(uid types.UID) bool { return OwnedBy(uid, shard, total) }
}
