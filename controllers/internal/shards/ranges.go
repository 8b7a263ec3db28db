// Package shards splits a cluster's namespaces between the live replicas of a shard group as
// ranges of the hash the API server filters lists and watches by (ShardedListAndWatch,
// KEP-5866: the 64-bit FNV-1a of object.metadata.namespace), so that each replica receives and
// caches only its own namespaces' objects.
//
// Real namespace names cluster in that hash (short names that differ in their last bytes land
// close together), so the split follows the measured hashes of the namespaces, weighted by
// their objects, rather than equal slices of the space: Slots cuts the sorted hashes into
// contiguous slots of about equal weight whose ranges cover the whole space, and Assign gives
// each slot to a member by rendezvous hashing with bounded loads.
package shards

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"

	apisharding "k8s.io/apimachinery/pkg/sharding"
)

// Field is the field the API server hashes: every reference of the controllers stays within a
// namespace, so splitting by namespace keeps each reference within one shard.
const Field = "object.metadata.namespace"

// Hash is the API server's hash of a namespace's name.
func Hash(namespace string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(namespace))
	return h.Sum64()
}

// Range is the hashes from First to Last, both included.
type Range struct {
	First, Last uint64
}

// Contains says whether hash is in r.
func (r Range) Contains(hash uint64) bool { return r.First <= hash && hash <= r.Last }

// requirement is r as the API server's selector says it: a 0x-prefixed 16-digit start and an
// exclusive end, 2^64 for a range that reaches the end of the space.
func (r Range) requirement() apisharding.ShardRangeRequirement {
	end := fmt.Sprintf("0x%016x", r.Last+1)
	if r.Last == math.MaxUint64 {
		end = "0x10000000000000000"
	}
	return apisharding.ShardRangeRequirement{Key: Field, Start: fmt.Sprintf("0x%016x", r.First), End: end}
}

// Ranges are the ranges of one member, sorted and merged where they touch.
type Ranges []Range

// Merge sorts rs and merges the ranges that touch or overlap.
func Merge(rs []Range) Ranges {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b Range) int {
		switch {
		case a.First < b.First:
			return -1
		case a.First > b.First:
			return 1
		}
		return 0
	})
	var out Ranges
	for _, r := range rs {
		if n := len(out); n > 0 && (out[n-1].Last == math.MaxUint64 || r.First <= out[n-1].Last+1) {
			out[n-1].Last = max(out[n-1].Last, r.Last)
			continue
		}
		out = append(out, r)
	}
	return out
}

// Contains says whether hash is in one of rs.
func (rs Ranges) Contains(hash uint64) bool {
	_, found := slices.BinarySearchFunc(rs, hash, func(r Range, h uint64) int {
		switch {
		case r.Last < h:
			return -1
		case r.First > h:
			return 1
		}
		return 0
	})
	return found
}

// Selector is rs as the shard selector of a list or a watch; empty for no range, which the
// API server refuses: a member without ranges lists nothing.
func (rs Ranges) Selector() apisharding.Selector {
	reqs := make([]apisharding.ShardRangeRequirement, 0, len(rs))
	for _, r := range rs {
		reqs = append(reqs, r.requirement())
	}
	return apisharding.NewSelector(reqs...)
}
