package shards

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Gate is a member's Holder in a manager: it lets through the reconciles of the namespaces in
// its ranges only, and narrows and widens the Filter of the manager's caches with them.
type Gate struct {
	filter *Filter

	mu     sync.Mutex
	ranges Ranges
	// inFlight counts the reconciles running, by namespace.
	inFlight map[string]int
}

// NewGate returns a Gate that holds nothing yet, over filter.
func NewGate(filter *Filter) *Gate {
	return &Gate{filter: filter, inFlight: map[string]int{}}
}

// drainPoll is how often Release looks whether the reconciles it waits for ended.
const drainPoll = 10 * time.Millisecond

// Release lets no new reconcile outside ranges start, waits until those running end, then
// narrows the caches to ranges.
func (g *Gate) Release(ctx context.Context, ranges Ranges) error {
	g.mu.Lock()
	g.ranges = ranges
	for !g.drained() {
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(drainPoll):
		}
		g.mu.Lock()
	}
	g.mu.Unlock()
	g.filter.SetRanges(ranges)
	return nil
}

// drained says whether no reconcile runs outside the ranges; g.mu is held.
func (g *Gate) drained() bool {
	for namespace, n := range g.inFlight {
		if n > 0 && !g.ranges.Contains(Hash(namespace)) {
			return false
		}
	}
	return true
}

// Acquire widens the caches and the reconciles to ranges.
func (g *Gate) Acquire(ranges Ranges) {
	g.filter.SetRanges(ranges)
	g.mu.Lock()
	g.ranges = ranges
	g.mu.Unlock()
}

// enter says whether a reconcile of namespace may run, and counts it as running if so.
func (g *Gate) enter(namespace string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.ranges.Contains(Hash(namespace)) {
		return false
	}
	g.inFlight[namespace]++
	return true
}

func (g *Gate) leave(namespace string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[namespace]--; g.inFlight[namespace] <= 0 {
		delete(g.inFlight, namespace)
	}
}

// Reconciler wraps next so that it reconciles only the objects of the Gate's namespaces; a
// request of another namespace ends at once, as its member reconciles it.
func (g *Gate) Reconciler(next reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if !g.enter(req.Namespace) {
			return reconcile.Result{}, nil
		}
		defer g.leave(req.Namespace)
		return next.Reconcile(ctx, req)
	})
}
