package controllers

import (
	"context"
	"testing"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// fakeSource is a source that syncs when release is closed.
type fakeSource struct{ release chan struct{} }

func (f fakeSource) Start(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	return nil
}

func (f fakeSource) WaitForSync(ctx context.Context) error {
	select {
	case <-f.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestWatchStarts: a controller's watches are started once each has synced, and a new build
// (a new term) replaces the watches followed.
func TestWatchStarts(t *testing.T) {
	var starts watchStarts
	if err := starts.started("x"); err != nil {
		t.Errorf("a controller without uncached watches: %v", err)
	}
	a, b := fakeSource{make(chan struct{})}, fakeSource{make(chan struct{})}
	tracked := starts.track("x", []source.Source{a, b})
	ctx := context.Background()
	close(a.release)
	if err := tracked[0].(source.SyncingSource).WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := starts.started("x"); err == nil {
		t.Error("one watch of two synced: started")
	}
	close(b.release)
	if err := tracked[1].(source.SyncingSource).WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := starts.started("x"); err != nil {
		t.Errorf("both synced: %v", err)
	}
	starts.track("x", []source.Source{fakeSource{make(chan struct{})}})
	if err := starts.started("x"); err == nil {
		t.Error("a new term's watch not synced yet: started")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := starts.track("y", []source.Source{fakeSource{make(chan struct{})}})[0].(source.SyncingSource).WaitForSync(cancelled); err == nil || starts.started("y") == nil {
		t.Error("a watch that never synced: started")
	}
}
