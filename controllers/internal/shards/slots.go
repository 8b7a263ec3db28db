package shards

import (
	"cmp"
	"math"
	"slices"
)

// Namespace is a namespace and its weight: how many objects of the sharded kinds it holds (at
// least 1, for the objects it may get).
type Namespace struct {
	Name   string
	Weight int
}

// Slot is a contiguous range of the hash space and the weight of the namespaces in it.
type Slot struct {
	Range
	Weight     int
	Namespaces int
}

// Slots cuts the hash space into at most n contiguous slots that cover it whole, each holding
// namespaces of about 1/n of the total weight: the cuts fall between the sorted hashes of the
// namespaces, halfway between two neighbours, so that a namespace created later falls into
// exactly one slot. A namespace is never split, so one heavier than 1/n of the total makes a
// slot of its own, and fewer slots. Namespaces of the same hash are in the same slot.
func Slots(namespaces []Namespace, n int) []Slot {
	type point struct {
		hash   uint64
		weight int
	}
	points := make([]point, 0, len(namespaces))
	total := 0
	for _, ns := range namespaces {
		w := max(ns.Weight, 1)
		points = append(points, point{Hash(ns.Name), w})
		total += w
	}
	slices.SortFunc(points, func(a, b point) int { return cmp.Compare(a.hash, b.hash) })
	if len(points) == 0 || n <= 1 {
		return []Slot{{Range: Range{0, math.MaxUint64}, Weight: total, Namespaces: len(points)}}
	}
	var slots []Slot
	current := Slot{Range: Range{First: 0}}
	accumulated := 0
	for i, p := range points {
		current.Weight += p.weight
		current.Namespaces++
		accumulated += p.weight
		last := i == len(points)-1
		if last {
			break
		}
		next := points[i+1].hash
		// Cut once the slots so far hold their share of the weight, never between equal hashes.
		if next != p.hash && len(slots) < n-1 && accumulated*n >= (len(slots)+1)*total {
			current.Last = p.hash + (next-p.hash)/2
			slots = append(slots, current)
			current = Slot{Range: Range{First: current.Last + 1}}
		}
	}
	current.Last = math.MaxUint64
	return append(slots, current)
}
