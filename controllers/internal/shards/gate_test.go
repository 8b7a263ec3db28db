package shards

import (
	"context"
	"math"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestGateLetsThroughItsNamespacesAndDrains: a Gate reconciles only its namespaces, and
// Release returns only once the reconciles outside the new ranges ended.
func TestGateLetsThroughItsNamespacesAndDrains(t *testing.T) {
	g := NewGate(NewFilter(nil, false, nil))
	started, finish := make(chan string, 4), make(chan struct{})
	r := g.Reconciler(reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		started <- req.Namespace
		<-finish
		return reconcile.Result{}, nil
	}))
	request := func(ns string) reconcile.Request {
		return reconcile.Request{NamespacedName: struct{ Namespace, Name string }{ns, "x"}}
	}
	// Nothing held: nothing reconciled.
	if _, err := r.Reconcile(t.Context(), request("a")); err != nil || len(started) != 0 {
		t.Fatalf("a Gate that holds nothing reconciled (%v)", err)
	}
	g.Acquire(Ranges{{0, math.MaxUint64}})
	go func() { _, _ = r.Reconcile(context.Background(), request("a")) }()
	if ns := <-started; ns != "a" {
		t.Fatalf("reconciled %s, want a", ns)
	}
	released := make(chan error)
	go func() { released <- g.Release(context.Background(), nil) }()
	select {
	case err := <-released:
		t.Fatalf("Release returned (%v) while a reconcile of a released namespace ran", err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := r.Reconcile(t.Context(), request("b")); err != nil || len(started) != 0 {
		t.Fatalf("a reconcile started while releasing (%v)", err)
	}
	close(finish)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if got := g.filter.Ranges(); len(got) != 0 {
		t.Errorf("the Filter still holds %v after releasing everything", got)
	}
}
