package shards_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/example/switchboard/controllers/internal/shards"
	"github.com/example/switchboard/internal/testenv"
)

// world is what every member acts on, as their Holders say, checked on every change: no hash
// acted on by two members at once, and how long some hash was acted on by none.
type world struct {
	mu       sync.Mutex
	acting   map[string]shards.Ranges
	overlaps []string
	// uncoveredSince is when some hash was first acted on by none, zero while all are; the
	// longest such stretch is kept once tracking started.
	tracking       bool
	uncoveredSince time.Time
	longest        time.Duration
}

var whole = shards.Ranges{{First: 0, Last: math.MaxUint64}}

func (w *world) set(member string, rs shards.Ranges) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.acting[member] = rs
	var union []shards.Range
	for a, ra := range w.acting {
		union = append(union, ra...)
		for b, rb := range w.acting {
			if a < b && shareAHash(ra, rb) {
				w.overlaps = append(w.overlaps, fmt.Sprintf("%s and %s act on the same hashes at %s", a, b, time.Now().Format(time.StampMilli)))
			}
		}
	}
	covered := slices.Equal(shards.Merge(union), whole)
	switch {
	case !w.tracking:
	case !covered && w.uncoveredSince.IsZero():
		w.uncoveredSince = time.Now()
	case covered && !w.uncoveredSince.IsZero():
		w.longest = max(w.longest, time.Since(w.uncoveredSince))
		w.uncoveredSince = time.Time{}
	}
}

func (w *world) get(member string) shards.Ranges {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acting[member]
}

// until waits up to 30 s for cond, and fails the test naming what otherwise.
func (w *world) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Fatalf("%s: not within 30s; acting %v", what, w.acting)
}

func shareAHash(a, b shards.Ranges) bool {
	for _, x := range a {
		for _, y := range b {
			if max(x.First, y.First) <= min(x.Last, y.Last) {
				return true
			}
		}
	}
	return false
}

// holder is a member's Holder in the world. It takes drain to release, as reconciles in flight
// finish, and acts on what it held until then.
type holder struct {
	w    *world
	name string
}

const drain = 300 * time.Millisecond

func (h holder) Release(_ context.Context, rs shards.Ranges) error {
	time.Sleep(drain)
	h.w.set(h.name, rs)
	return nil
}

func (h holder) Acquire(rs shards.Ranges) { h.w.set(h.name, rs) }

// partition fails every request while cut, as a replica cut off from the API server.
type partition struct {
	next http.RoundTripper
	cut  atomic.Bool
}

func (p *partition) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.cut.Load() {
		return nil, errors.New("partitioned by the test")
	}
	return p.next.RoundTrip(r)
}

// running is a started member; done is closed once Start returned err.
type running struct {
	cancel    context.CancelFunc
	done      chan struct{}
	err       error
	partition *partition
}

// TestMembersNeverShareANamespace: members that join, leave and are cut off split the whole
// space between them, and at no moment do two act on one hash; a hash is acted on by none for
// at most the lease duration plus 2 s (a member cut off, until its Lease expires).
func TestMembersNeverShareANamespace(t *testing.T) {
	env := testenv.StartForTest(t)
	clientset := kubernetes.NewForConfigOrDie(env.Config)
	const leaseDuration = 3 * time.Second
	w := &world{acting: map[string]shards.Ranges{}}
	// weighed counts the weighings: once per coordinator's term and per change of the members,
	// with a rebalance interval of an hour, however often the coordinator looks at them.
	var weighed atomic.Int32
	var namespaces []shards.Namespace
	for i := range 40 {
		namespaces = append(namespaces, shards.Namespace{Name: fmt.Sprintf("team-%02d", i), Weight: 1 + i%5})
	}
	start := func(name string) *running {
		p := &partition{}
		cfg := rest.CopyConfig(env.Config)
		cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { p.next = next; return p })
		member, err := shards.NewMember(shards.Config{Group: "test", Namespace: "default", Identity: name,
			LeaseDuration: leaseDuration, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
			SlotCount: 16, Slack: 0.05, RebalanceInterval: time.Hour, ForgetAfter: 2 * leaseDuration,
			Weights: func(context.Context) ([]shards.Namespace, error) { weighed.Add(1); return namespaces, nil },
		}, kubernetes.NewForConfigOrDie(cfg), holder{w, name}, testr.New(t).WithName(name))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &running{cancel: cancel, done: make(chan struct{}), partition: p}
		go func() { r.err = member.Start(ctx); close(r.done) }()
		t.Cleanup(func() { cancel(); <-r.done })
		return r
	}
	until := func(what string, cond func() bool) { t.Helper(); w.until(t, what, cond) }
	split := func(members ...string) func() bool {
		return func() bool {
			var union []shards.Range
			for _, m := range members {
				if len(w.get(m)) == 0 {
					return false
				}
				union = append(union, w.get(m)...)
			}
			return slices.Equal(shards.Merge(union), whole)
		}
	}

	a := start("a")
	until("a alone holds everything", split("a"))
	w.mu.Lock()
	w.tracking = true
	w.mu.Unlock()

	b, c := start("b"), start("c")
	until("a, b and c split the space", split("a", "b", "c"))

	b.cancel()
	if <-b.done; b.err != nil {
		t.Fatalf("b stopped with %v", b.err)
	}
	until("a and c split the space after b left", split("a", "c"))

	c.partition.cut.Store(true)
	cutAt := time.Now()
	<-c.done
	if c.err == nil || len(w.get("c")) != 0 {
		t.Fatalf("c, cut off, stopped with %v acting on %v; want an error, acting on nothing", c.err, w.get("c"))
	}
	t.Logf("c stopped %s after it was cut off: %v", time.Since(cutAt).Round(time.Millisecond), c.err)
	until("a holds everything after c's Lease expired", split("a"))
	t.Logf("a took c's ranges %s after c was cut off", time.Since(cutAt).Round(time.Millisecond))

	start("d")
	until("a and d split the space", split("a", "d"))
	_ = a
	until("c's Lease, standing still, is deleted", func() bool {
		_, err := clientset.CoordinationV1().Leases("default").Get(t.Context(), shards.MemberLeaseName("test", "c"), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})

	// a coordinates throughout: its first plan, b and c joining (together or not), b leaving,
	// c's Lease expiring, d joining.
	if n := weighed.Load(); n > 6 {
		t.Errorf("the namespaces were weighed %d times, want once per coordinator's term and change of members (at most 6 here)", n)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range w.overlaps {
		t.Error(o)
	}
	t.Logf("the longest time some hash was acted on by no member: %s", w.longest.Round(time.Millisecond))
	if w.longest > leaseDuration+2*time.Second {
		t.Errorf("some hash was acted on by no member for %s, want at most the lease duration (%s) plus 2s", w.longest, leaseDuration)
	}
}

// TestAJoinCutsNewSlotsWhenTheOldOnesCannotSplit: a member that started alone before the
// namespaces held anything cut one slot of the whole space; when another joins after objects
// came, the coordinator weighs them again and cuts new slots, since the old one would leave the
// newcomer nothing, and the two hold loads within 1.2 of each other.
func TestAJoinCutsNewSlotsWhenTheOldOnesCannotSplit(t *testing.T) {
	env := testenv.StartForTest(t)
	w := &world{acting: map[string]shards.Ranges{}}
	var (
		mu         sync.Mutex
		namespaces []shards.Namespace
	)
	start := func(name string) {
		member, err := shards.NewMember(shards.Config{Group: "test", Namespace: "default", Identity: name,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
			SlotCount: 16, Slack: 0.05, RebalanceInterval: time.Hour,
			Weights: func(context.Context) ([]shards.Namespace, error) {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(namespaces), nil
			},
		}, kubernetes.NewForConfigOrDie(env.Config), holder{w, name}, testr.New(t).WithName(name))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = member.Start(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	until := func(what string, cond func() bool) { t.Helper(); w.until(t, what, cond) }
	start("a")
	until("a holds everything", func() bool { return slices.Equal(w.get("a"), whole) })

	total := 0
	mu.Lock()
	for i := range 40 {
		namespaces = append(namespaces, shards.Namespace{Name: fmt.Sprintf("shop-%02d", i), Weight: 1 + i%3})
		total += 1 + i%3
	}
	mu.Unlock()
	start("b")
	load := func(member string) int {
		n := 0
		for _, ns := range namespaces {
			if w.get(member).Contains(shards.Hash(ns.Name)) {
				n += ns.Weight
			}
		}
		return n
	}
	until("a and b split the namespaces", func() bool { return load("a") > 0 && load("b") > 0 && load("a")+load("b") == total })
	hi, lo := max(load("a"), load("b")), min(load("a"), load("b"))
	t.Logf("loads %d and %d", load("a"), load("b"))
	if float64(hi) > 1.2*float64(lo) {
		t.Errorf("loads %d and %d, more than 1.2 apart", hi, lo)
	}
}
