package controllers

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// standbyReadiness decides whether a replica that does not lead a controller is ready for it:
// only while a live replica holds one of the Leases that keep it from leading. A replica whose
// Lease is free is about to lead, and is ready once it leads and its watches have started;
// reporting it ready before that (between its start and its first election, a few hundred
// milliseconds) would let a change made "after the manager is ready" go unseen as a change.
type standbyReadiness struct {
	reader client.Reader
	now    func() time.Time
	// leases names, per controller, the Leases any one of which, held, keeps this replica a
	// standby.
	leases func(Controller) []types.NamespacedName
}

// check returns nil when a live replica holds one of c's Leases, and an error otherwise.
func (s standbyReadiness) check(ctx context.Context, c Controller) error {
	keys := s.leases(c)
	for _, key := range keys {
		held, err := leaseHeld(ctx, s.reader, key, s.now())
		if err != nil {
			return err
		}
		if held {
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
