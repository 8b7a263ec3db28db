package shards

import (
	"cmp"
	"encoding/binary"
	"hash/fnv"
	"slices"
)

// Assignment is each member's ranges.
type Assignment map[string]Ranges

// Owner is the member whose ranges hold hash; "" when none does.
func (a Assignment) Owner(hash uint64) string {
	for member, rs := range a {
		if rs.Contains(hash) {
			return member
		}
	}
	return ""
}

// Assign gives each slot to one of members, by rendezvous hashing with bounded loads: each
// member ranks every slot by a hash of the two (so that every member computes the same ranks),
// and a slot goes to the member that ranks it highest among those still under the bound of
// (1+slack) times the average weight, the heaviest slots first; where none is under it, to the
// least loaded. Rendezvous hashing moves only what it must when a member joins or leaves (the
// slots of the one that left; about 1/N of the slots to one that joined), and the bound keeps
// the members within slack of each other where the slots are small enough to allow it. The
// ranges of the slots cover the whole space, so every hash has exactly one owner.
func Assign(slots []Slot, members []string, slack float64) Assignment {
	members = slices.Compact(slices.Sorted(slices.Values(members)))
	if len(members) == 0 {
		return Assignment{}
	}
	total := 0
	for _, s := range slots {
		total += s.Weight
	}
	bound := (1 + slack) * float64(total) / float64(len(members))
	order := make([]int, len(slots))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(slots[b].Weight, slots[a].Weight); c != 0 {
			return c
		}
		return cmp.Compare(slots[a].First, slots[b].First)
	})
	load := make(map[string]int, len(members))
	ranges := make(map[string][]Range, len(members))
	for _, i := range order {
		s := slots[i]
		ranked := slices.Clone(members)
		slices.SortFunc(ranked, func(a, b string) int {
			if c := cmp.Compare(rank(b, s.First), rank(a, s.First)); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		owner := ""
		for _, m := range ranked {
			if float64(load[m]+s.Weight) <= bound {
				owner = m
				break
			}
		}
		if owner == "" {
			owner = ranked[0]
			for _, m := range ranked[1:] {
				if load[m] < load[owner] {
					owner = m
				}
			}
		}
		load[owner] += s.Weight
		ranges[owner] = append(ranges[owner], s.Range)
	}
	out := Assignment{}
	for _, m := range members {
		out[m] = Merge(ranges[m])
	}
	return out
}

// rank is member's rendezvous score for the slot that starts at first.
func rank(member string, first uint64) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	var b [9]byte
	binary.BigEndian.PutUint64(b[1:], first)
	_, _ = h.Write(b[:])
	return mix(h.Sum64())
}

// mix spreads FNV-1a's poorly mixed high bits (splitmix64's finalizer), so that ranks of
// similar members and slots are independent.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
