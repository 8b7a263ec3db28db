package shards

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// peopleNamespaces are 300 namespaces named as people name them (shared prefixes, numbered
// suffixes) holding 30,000 objects between them, unevenly: a few big, most small.
func peopleNamespaces() []Namespace {
	teams := []string{"payments", "checkout", "search", "ml", "data", "platform", "web", "mobile-api", "billing", "ci"}
	envs := []string{"dev", "staging", "prod"}
	var out []Namespace
	for i := range 300 {
		name := fmt.Sprintf("%s-%s-%02d", teams[i%len(teams)], envs[(i/len(teams))%len(envs)], i/(len(teams)*len(envs)))
		out = append(out, Namespace{Name: name})
	}
	// Zipf-like weights, scaled to 30,000 objects.
	total := 0.0
	for i := range out {
		total += 1 / math.Sqrt(float64(i+1))
	}
	rest := 30000
	for i := range out {
		w := int(30000 / math.Sqrt(float64(i+1)) / total)
		out[i].Weight = max(w, 1)
		rest -= out[i].Weight
	}
	out[len(out)-1].Weight += max(rest, 0)
	return out
}

// TestSlotsCoverTheSpace: the slots are contiguous from 0 to 2^64-1, each namespace falls into
// exactly one, and their weights sum to the namespaces'.
func TestSlotsCoverTheSpace(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces []Namespace
		n          int
	}{
		{"none", nil, 8},
		{"one", []Namespace{{Name: "default", Weight: 10}}, 8},
		{"people's names", peopleNamespaces(), 64},
		{"40 numbered", numbered(40), 16},
		{"one slot asked", peopleNamespaces(), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slots := Slots(tc.namespaces, tc.n)
			if len(slots) == 0 || len(slots) > max(tc.n, 1) {
				t.Fatalf("%d slots, want 1 to %d", len(slots), tc.n)
			}
			if slots[0].First != 0 || slots[len(slots)-1].Last != math.MaxUint64 {
				t.Errorf("slots span %#x to %#x, want the whole space", slots[0].First, slots[len(slots)-1].Last)
			}
			weight, count := 0, 0
			for i, s := range slots {
				if s.First > s.Last {
					t.Errorf("slot %d: empty range %#x..%#x", i, s.First, s.Last)
				}
				if i > 0 && s.First != slots[i-1].Last+1 {
					t.Errorf("slot %d starts at %#x, slot %d ends at %#x", i, s.First, i-1, slots[i-1].Last)
				}
				weight += s.Weight
				count += s.Namespaces
			}
			want := 0
			for _, ns := range tc.namespaces {
				want += max(ns.Weight, 1)
				in := 0
				for _, s := range slots {
					if s.Contains(Hash(ns.Name)) {
						in++
					}
				}
				if in != 1 {
					t.Errorf("namespace %s falls into %d slots", ns.Name, in)
				}
			}
			if weight != want || count != len(tc.namespaces) {
				t.Errorf("slots hold weight %d of %d namespaces, want %d of %d", weight, count, want, len(tc.namespaces))
			}
		})
	}
}

func numbered(n int) []Namespace {
	var out []Namespace
	for i := range n {
		out = append(out, Namespace{Name: fmt.Sprintf("ns-%02d", i), Weight: 1})
	}
	return out
}

// TestEveryHashHasOneOwner: whatever the members, every hash (a namespace's, or any other, for
// namespaces created later) is in the ranges of exactly one of them.
func TestEveryHashHasOneOwner(t *testing.T) {
	slots := Slots(peopleNamespaces(), 64)
	random := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 5; n++ {
		a := Assign(slots, members(n), 0.05)
		hashes := []uint64{0, math.MaxUint64}
		for _, s := range slots {
			hashes = append(hashes, s.First, s.Last)
		}
		for range 2000 {
			hashes = append(hashes, random.Uint64())
		}
		for _, h := range hashes {
			owners := 0
			for _, rs := range a {
				if rs.Contains(h) {
					owners++
				}
			}
			if owners != 1 {
				t.Fatalf("%d members: hash %#x has %d owners", n, h, owners)
			}
		}
	}
}

func members(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("switchboard-7d9f8c6b5-%c%c%c%c%c", 'a'+i, 'k'+i, 'p'+i, 'x'+i%3, 'b'+i))
	}
	return out
}

// weights returns each member's weight of namespaces under a.
func weights(a Assignment, namespaces []Namespace) map[string]int {
	out := map[string]int{}
	for _, ns := range namespaces {
		out[a.Owner(Hash(ns.Name))] += max(ns.Weight, 1)
	}
	return out
}

// TestAssignBalancesTheObjects: with people's namespace names and uneven sizes, 2 to 5
// members each get objects within 1.2 times of each other.
func TestAssignBalancesTheObjects(t *testing.T) {
	namespaces := peopleNamespaces()
	slots := Slots(namespaces, 64)
	for n := 2; n <= 5; n++ {
		w := weights(Assign(slots, members(n), 0.05), namespaces)
		lo, hi := math.MaxInt, 0
		for _, m := range members(n) {
			lo, hi = min(lo, w[m]), max(hi, w[m])
		}
		t.Logf("%d members: objects per member %v, max/min %.3f", n, w, float64(hi)/float64(lo))
		if lo == 0 || float64(hi)/float64(lo) > 1.2 {
			t.Errorf("%d members: objects per member from %d to %d, want max/min at most 1.2", n, lo, hi)
		}
	}
}

// TestAMemberChangeMovesLittle: when a member joins, about 1/N of the objects move, all to it;
// when one leaves, its objects move and few others.
func TestAMemberChangeMovesLittle(t *testing.T) {
	namespaces := peopleNamespaces()
	slots := Slots(namespaces, 64)
	total := 0
	for _, ns := range namespaces {
		total += ns.Weight
	}
	// moved is the weight whose owner differs between from and to, and the part of it that
	// moved between members of both.
	moved := func(from, to Assignment) (weight, betweenBoth int) {
		for _, ns := range namespaces {
			a, b := from.Owner(Hash(ns.Name)), to.Owner(Hash(ns.Name))
			if a == b {
				continue
			}
			weight += ns.Weight
			_, aStays := to[a]
			_, bWas := from[b]
			if aStays && bWas {
				betweenBoth += ns.Weight
			}
		}
		return weight, betweenBoth
	}
	for n := 2; n <= 4; n++ {
		before, after := Assign(slots, members(n), 0.05), Assign(slots, members(n+1), 0.05)
		w, betweenOld := moved(before, after)
		t.Logf("%d to %d members: %.1f%% of the objects moved (ideal %.1f%%), %.1f%% between the old members",
			n, n+1, 100*float64(w)/float64(total), 100/float64(n+1), 100*float64(betweenOld)/float64(total))
		if float64(w) > 1.5*float64(total)/float64(n+1) {
			t.Errorf("%d to %d members: %d of %d objects moved, want at most 1.5 times 1/%d", n, n+1, w, total, n+1)
		}
		// The other way: the last member leaves.
		w, betweenStaying := moved(after, before)
		left := weights(after, namespaces)[members(n + 1)[n]]
		t.Logf("%d to %d members: %.1f%% moved, the leaver held %.1f%%, %.1f%% between those who stay",
			n+1, n, 100*float64(w)/float64(total), 100*float64(left)/float64(total), 100*float64(betweenStaying)/float64(total))
		if float64(betweenStaying) > 0.1*float64(total) {
			t.Errorf("%d to %d members: %d objects moved between members that stayed, want at most 10%%", n+1, n, betweenStaying)
		}
	}
}

// TestSelectorMatchesTheRanges: the selector the API server gets holds the same hashes as the
// ranges, by the API server's own matching, including the ends of the space.
func TestSelectorMatchesTheRanges(t *testing.T) {
	namespaces := append(peopleNamespaces(), numbered(40)...)
	a := Assign(Slots(namespaces, 64), members(3), 0.05)
	for member, rs := range a {
		sel := rs.Selector()
		for _, ns := range namespaces {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "p"}}
			got, err := sel.Matches(pod)
			if err != nil {
				t.Fatal(err)
			}
			if want := rs.Contains(Hash(ns.Name)); got != want {
				t.Errorf("%s: the selector matches namespace %s %t, the ranges %t", member, ns.Name, got, want)
			}
		}
	}
	whole := Ranges{{0, math.MaxUint64}}.Selector().String()
	if want := "shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')"; whole != want {
		t.Errorf("the whole space = %q, want %q", whole, want)
	}
}

// TestNamesCluster records the problem: 40 numbered namespaces hash into a sliver of the space,
// so equal slices of it would give one member all of them, while slots split them evenly.
func TestNamesCluster(t *testing.T) {
	namespaces := numbered(40)
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for _, ns := range namespaces {
		lo, hi = min(lo, Hash(ns.Name)), max(hi, Hash(ns.Name))
	}
	t.Logf("40 numbered namespaces span %#x to %#x: %.4f of the space", lo, hi, float64(hi-lo)/math.MaxUint64)
	w := weights(Assign(Slots(namespaces, 16), members(4), 0.05), namespaces)
	for _, m := range members(4) {
		if w[m] < 8 || w[m] > 12 {
			t.Errorf("namespaces per member %v, want 8 to 12 each", w)
			break
		}
	}
}

// TestMemberIdentityNamesALease: a leader election identity (host_suffix) becomes one that
// names a Lease; one that cannot is refused at once.
func TestMemberIdentityNamesALease(t *testing.T) {
	cfg := Config{Group: "switchboard", Namespace: "ns", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
		RetryPeriod: 2 * time.Second, SlotCount: 64, Weights: func(context.Context) ([]Namespace, error) { return nil, nil }}
	cfg.Identity = "Switchboard-7d9f_1a2b3c4d"
	m, err := NewMember(cfg, nil, nil, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if want := "switchboard-7d9f-1a2b3c4d"; m.cfg.Identity != want {
		t.Errorf("identity %q, want %q", m.cfg.Identity, want)
	}
	cfg.Identity = "___"
	if _, err := NewMember(cfg, nil, nil, logr.Discard()); err == nil {
		t.Error("an identity of no letter was accepted")
	}
}
