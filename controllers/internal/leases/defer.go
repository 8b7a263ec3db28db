package leases

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Deferral is the Leases of the other election scope: the manager's Lease for replicas that
// elect per group, the groups' Leases for replicas that elect the manager. While one of them is
// held, a replica takes no Lease of its own scope, and one that took its Lease just as the other
// scope took one gives its own back: so a rollout that changes the scope never runs a controller
// on two replicas at once. Each side writes its Lease before it reads the others', so of two
// replicas racing, at least one sees the other.
type Deferral struct {
	client    coordinationv1client.LeasesGetter
	namespace string
	names     []string
	now       func() time.Time

	mu       sync.Mutex
	observed map[string]observation
}

// NewDeferral returns the deferral to the Leases names in namespace.
func NewDeferral(client coordinationv1client.LeasesGetter, namespace string, names []string) *Deferral {
	return &Deferral{client: client, namespace: namespace, names: names, now: time.Now, observed: map[string]observation{}}
}

// heldBy returns the first of the Leases held by a holder whose lease duration has not passed
// since this replica saw it change, and that holder; empty when none is.
func (d *Deferral) heldBy(ctx context.Context) (lease, holder string, err error) {
	if d == nil {
		return "", "", nil
	}
	for _, name := range d.names {
		l, err := d.client.Leases(d.namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("reading Lease %s: %w", name, err)
		}
		record := rl.LeaseSpecToLeaderElectionRecord(&l.Spec)
		raw := []byte(fmt.Sprintf("%s/%v/%v", record.HolderIdentity, record.RenewTime.UnixNano(), record.LeaseDurationSeconds))
		d.mu.Lock()
		o := d.observed[name]
		if !bytes.Equal(o.raw, raw) {
			o = observation{record: record, raw: raw, changed: d.now()}
			d.observed[name] = o
		}
		d.mu.Unlock()
		if valid(o, d.now()) {
			return name, record.HolderIdentity, nil
		}
	}
	return "", "", nil
}

// DeferringLock is a resource lock for controller-runtime's manager election that defers to
// the Leases of d (see Deferral): it waits to take its Lease while one of them is held, and
// gives it back at once when, just after taking it, it finds one held.
type DeferringLock struct {
	rl.Interface
	deferral *Deferral
	retry    time.Duration
	log      func(msg string, kv ...any)

	mu     sync.Mutex
	holder string
}

// NewDeferringLock returns inner deferring to d; it waits retry between two looks.
func NewDeferringLock(inner rl.Interface, d *Deferral, retry time.Duration, log func(msg string, kv ...any)) *DeferringLock {
	return &DeferringLock{Interface: inner, deferral: d, retry: retry, log: log}
}

// Get reads the Lease once none of the other scope's is held, or at once when this replica
// holds its own.
func (l *DeferringLock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	for {
		record, raw, err := l.Interface.Get(ctx)
		if err == nil {
			l.mu.Lock()
			l.holder = record.HolderIdentity
			l.mu.Unlock()
			if record.HolderIdentity == l.Identity() {
				return record, raw, nil
			}
		} else if !apierrors.IsNotFound(err) {
			return record, raw, err
		}
		lease, holder, deferErr := l.deferral.heldBy(ctx)
		if deferErr != nil {
			return nil, nil, deferErr
		}
		if holder == "" {
			return record, raw, err
		}
		l.log("Waiting for the Lease of the other election scope", "heldLease", lease, "holder", holder)
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(l.retry):
		}
	}
}

// Create takes the Lease, and gives it back if the other scope holds one of its own.
func (l *DeferringLock) Create(ctx context.Context, record rl.LeaderElectionRecord) error {
	if err := l.Interface.Create(ctx, record); err != nil {
		return err
	}
	return l.yieldIfHeld(ctx, record)
}

// Update writes the Lease; a write that takes it over gives it back if the other scope holds
// one of its own.
func (l *DeferringLock) Update(ctx context.Context, record rl.LeaderElectionRecord) error {
	l.mu.Lock()
	taking := record.HolderIdentity == l.Identity() && l.holder != l.Identity()
	l.mu.Unlock()
	if err := l.Interface.Update(ctx, record); err != nil {
		return err
	}
	l.mu.Lock()
	l.holder = record.HolderIdentity
	l.mu.Unlock()
	if !taking {
		return nil
	}
	return l.yieldIfHeld(ctx, record)
}

// yieldIfHeld releases the Lease just taken with record when the other scope holds one.
func (l *DeferringLock) yieldIfHeld(ctx context.Context, record rl.LeaderElectionRecord) error {
	lease, holder, err := l.deferral.heldBy(ctx)
	if err == nil && holder == "" {
		return nil
	}
	released := rl.LeaderElectionRecord{LeaderTransitions: record.LeaderTransitions, LeaseDurationSeconds: 1,
		RenewTime: record.RenewTime, AcquireTime: record.AcquireTime}
	if releaseErr := l.Interface.Update(ctx, released); releaseErr != nil {
		return fmt.Errorf("giving the Lease back: %w", releaseErr)
	}
	l.mu.Lock()
	l.holder = ""
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("took the Lease but could not read the other scope's, so gave it back: %w", err)
	}
	return fmt.Errorf("took the Lease as %s took %s of the other election scope: gave it back", holder, lease)
}
