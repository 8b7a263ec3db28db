package loganalysis

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTopNExactUnderCapacity(t *testing.T) {
	tn := newTopN(10)
	for i, key := range []string{"a", "b", "a", "c", "a", "b"} {
		tn.add([]byte(key), []byte("example "+strconv.Itoa(i)))
	}
	got := tn.top(2)
	want := []counter{{key: "a", count: 3, example: "example 0"}, {key: "b", count: 2, example: "example 1"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(counter{})); diff != "" {
		t.Errorf("top(2) (-want +got):\n%s", diff)
	}
}

// TestTopNFindsHeavyHitters feeds far more distinct keys than counters, with a few frequent
// ones, and checks that the frequent ones are found with counts within the stated bound.
func TestTopNFindsHeavyHitters(t *testing.T) {
	const capacity = 100
	tn := newTopN(capacity)
	truth := map[string]uint64{}
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := range 200000 {
		key := "rare-" + strconv.Itoa(rnd.IntN(50000))
		if i%10 < 3 { // 30% of the stream is 3 heavy keys
			key = "heavy-" + strconv.Itoa(i%10)
		}
		truth[key]++
		tn.add([]byte(key), nil)
	}
	top := tn.top(3)
	for _, c := range top {
		if c.key[:5] != "heavy" {
			t.Errorf("top 3 holds %q (count %d), want only heavy keys", c.key, c.count)
		}
		if tc := truth[c.key]; c.count < tc || c.count-c.over > tc {
			t.Errorf("%q: count %d, over %d; true count %d not in [count-over, count]", c.key, c.count, c.over, tc)
		}
	}
	if len(tn.heap) != capacity || tn.evictions == 0 {
		t.Errorf("%d counters and %d evictions, want %d counters and evictions", len(tn.heap), tn.evictions, capacity)
	}
}
