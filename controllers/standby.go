package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// standbyReadiness decides whether a replica that does not lead a controller is ready for it.
// Between its start and the first outcome of its election (a few hundred milliseconds) a
// replica that finds the Lease free is about to lead: it is not ready until it does, or until it
// sees another live replica hold the Lease; reporting it ready before would let a change made
// "after the manager is ready" go unseen as a change. Once settled (it has led the controller,
// or seen the Lease held), a replica that does not lead is a standby, ready as before: its
// readiness does not flap while a failover waits out the lease duration.
type standbyReadiness struct {
	reader client.Reader
	now    func() time.Time
	// leases names, per controller, the Leases any one of which, held, keeps this replica a
	// standby.
	leases func(Controller) []types.NamespacedName
	// fixedNames are the Leases of the fixed names this replica waits for during a rollout
	// that renames its Leases; one held by a holder that ours accepts keeps it a standby too.
	fixedNames []types.NamespacedName
	ours       func(holder string) bool
	// led says whether this replica has led the controller since it started; nil for never.
	led func(Controller) bool

	mu      sync.Mutex
	settled map[string]bool
}

// check returns nil when this replica is a settled standby for c, and an error while it is
// about to lead it.
func (s *standbyReadiness) check(ctx context.Context, c Controller) error {
	s.mu.Lock()
	settled := s.settled[c.Name]
	s.mu.Unlock()
	if settled || (s.led != nil && s.led(c)) {
		return nil
	}
	keys := s.leases(c)
	held, err := anyHeld(ctx, s.reader, keys, s.now(), func(string) bool { return true })
	if err == nil && !held {
		held, err = anyHeld(ctx, s.reader, s.fixedNames, s.now(), s.ours)
	}
	if err != nil {
		return err
	}
	if !held {
		return fmt.Errorf("the Lease %s is free: this replica is about to lead", keys[0])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settled == nil {
		s.settled = map[string]bool{}
	}
	s.settled[c.Name] = true
	return nil
}

// anyHeld reports whether one of the Leases keys is held by a holder that ours accepts.
func anyHeld(ctx context.Context, reader client.Reader, keys []types.NamespacedName, now time.Time, ours func(holder string) bool) (bool, error) {
	for _, key := range keys {
		holder, err := leaseHolder(ctx, reader, key, now)
		if err != nil {
			return false, err
		}
		if holder != "" && ours(holder) {
			return true, nil
		}
	}
	return false, nil
}

// leaseHolder returns the holder of the Lease key when it renewed it within its duration, as
// client-go's leader election judges it; empty when nobody holds it.
func leaseHolder(ctx context.Context, reader client.Reader, key types.NamespacedName, now time.Time) (string, error) {
	var lease coordinationv1.Lease
	if err := reader.Get(ctx, key, &lease); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading Lease %s: %w", key, err)
	}
	spec := lease.Spec
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" || spec.RenewTime == nil || spec.LeaseDurationSeconds == nil {
		return "", nil
	}
	if expires := spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second); !now.Before(expires) {
		return "", nil
	}
	return *spec.HolderIdentity, nil
}
