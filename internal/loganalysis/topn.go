package loganalysis

import (
	"cmp"
	"slices"
)

// topN counts keys in bounded memory with the Space-Saving algorithm (Metwally, Agrawal and
// El Abbadi, 2005): it holds at most capacity counters; a new key arriving when they are all in
// use takes over the counter with the smallest count and inherits that count. Every key whose
// true count exceeds total/capacity is then guaranteed to hold a counter, and a counter
// overestimates its key's count by at most its over field. Until the first takeover every count
// is exact.
type topN struct {
	capacity int
	index    map[string]int // key -> position in heap
	heap     []*counter     // a min-heap on count
	// evictions counts takeovers: when zero, the counts are exact.
	evictions uint64
}

// counter is one counted key.
type counter struct {
	key   string
	count uint64
	// over is how much count may exceed the key's true count.
	over uint64
	// example is the first raw text seen for the key, for top errors.
	example string
}

func newTopN(capacity int) *topN {
	return &topN{capacity: capacity, index: make(map[string]int, capacity)}
}

// add counts one occurrence of key; a new counter keeps example (cut at maxExample bytes) as
// an instance of the key.
func (t *topN) add(key, example []byte) {
	if i, ok := t.index[string(key)]; ok {
		t.heap[i].count++
		t.down(i)
		return
	}
	if len(t.heap) < t.capacity {
		c := &counter{key: string(key), count: 1, example: truncate(example, maxExample)}
		t.heap = append(t.heap, c)
		t.index[c.key] = len(t.heap) - 1
		t.up(len(t.heap) - 1)
		return
	}
	c := t.heap[0]
	delete(t.index, c.key)
	c.key, c.over = string(key), c.count
	c.count++
	c.example = truncate(example, maxExample)
	t.index[c.key] = 0
	t.evictions++
	t.down(0)
}

// top returns the n counters with the highest counts, ties broken by key.
func (t *topN) top(n int) []counter {
	all := make([]counter, len(t.heap))
	for i, c := range t.heap {
		all[i] = *c
	}
	slices.SortFunc(all, func(a, b counter) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	return all[:min(n, len(all))]
}

func (t *topN) less(i, j int) bool { return t.heap[i].count < t.heap[j].count }

func (t *topN) swap(i, j int) {
	t.heap[i], t.heap[j] = t.heap[j], t.heap[i]
	t.index[t.heap[i].key] = i
	t.index[t.heap[j].key] = j
}

func (t *topN) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !t.less(i, parent) {
			return
		}
		t.swap(i, parent)
		i = parent
	}
}

func (t *topN) down(i int) {
	for {
		smallest, l, r := i, 2*i+1, 2*i+2
		if l < len(t.heap) && t.less(l, smallest) {
			smallest = l
		}
		if r < len(t.heap) && t.less(r, smallest) {
			smallest = r
		}
		if smallest == i {
			return
		}
		t.swap(i, smallest)
		i = smallest
	}
}
