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
	for _, key := range keys {
		held, err := leaseHeld(ctx, s.reader, key, s.now())
		if err != nil {
			return err
		}
		if held {
			s.mu.Lock()
			if s.settled == nil {
				s.settled = map[string]bool{}
			}
			s.settled[c.Name] = true
			s.mu.Unlock()
			return nil
		}
	}
	return fmt.Errorf("the Lease %s is free: this replica is about to lead", keys[0])
}

// leaseHeld reports whether the Lease key has a holder that renewed it within its duration,
// as client-go's leader election judges it.
func leaseHeld(ctx context.Context, reader client.Reader, key types.NamespacedName, now time.Time) (bool, error) {
	var lease coordinationv1.Lease
	if err := reader.Get(ctx, key, &lease); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading Lease %s: %w", key, err)
	}
	spec := lease.Spec
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" || spec.RenewTime == nil || spec.LeaseDurationSeconds == nil {
		return false, nil
	}
	expires := spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second)
	return now.Before(expires), nil
}
