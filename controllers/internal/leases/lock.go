package leases

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

// errTermRunning refuses a release while the term still runs; client-go gives up releasing, and
// the Lease expires instead.
var errTermRunning = errors.New("the term has not stopped: not releasing the Lease")

// lock is the resource lock client-go's elector uses for one group: a LeaseLock, plus what keeps
// two replicas from leading the group at once (see the package doc) and the head start.
type lock struct {
	inner   rl.Interface
	replica *Replica
	group   string
	term    *term
}

var _ rl.Interface = (*lock)(nil)

func metaOf(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

// Get reads the Lease. A Lease found deleted counts as held by the last holder this replica
// saw, until that holder's lease duration has passed. A free Lease is returned only once this
// replica's head start for it has passed: Get waits until then, so that client-go's elector
// tries again with what the Lease is by then.
func (l *lock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	for {
		record, raw, err := l.inner.Get(ctx)
		now := l.replica.now()
		switch {
		case apierrors.IsNotFound(err):
			if held, heldRaw := l.replica.heldBeforeDeletion(l.group, now); held != nil {
				return held, heldRaw, nil
			}
			record, raw = nil, nil
		case err != nil:
			return nil, nil, err
		default:
			if lost := l.replica.observe(l.group, record, raw, now); lost != "" {
				l.term.stop("the Lease is held by " + lost)
			}
		}
		if !l.term.wasAcquired() && (record == nil || record.HolderIdentity != l.Identity()) {
			held, err := l.replica.cfg.Defer.heldBy(ctx)
			if err != nil {
				return nil, nil, err
			}
			if held != nil {
				l.replica.cfg.Log.V(1).Info("Waiting for another Lease before taking this one", "group", l.group, "heldLease", held.lease, "holder", held.holder, "reason", held.String())
				if err := sleep(ctx, l.replica.cfg.RetryPeriod); err != nil {
					return nil, nil, err
				}
				continue
			}
		}
		wait := l.replica.headStart(l.group, record, now)
		if wait <= 0 {
			return record, raw, err
		}
		if err := sleep(ctx, min(wait, l.replica.cfg.RetryPeriod)); err != nil {
			return nil, nil, err
		}
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// Create creates the Lease with this replica as its holder.
func (l *lock) Create(ctx context.Context, record rl.LeaderElectionRecord) error {
	sent := l.replica.now()
	err := l.inner.Create(ctx, record)
	if err == nil {
		err = l.yieldToOtherScope(ctx, record)
	}
	l.wrote(record, sent, err)
	return err
}

// Update writes the Lease: a renewal, a takeover, or client-go's release (no holder). A release
// first stops the term and waits for it: client-go releases as soon as it stops renewing, before
// anything it started has stopped. A renewal or takeover that finds the Lease deleted creates
// it.
func (l *lock) Update(ctx context.Context, record rl.LeaderElectionRecord) error {
	if record.HolderIdentity == "" {
		l.term.stop("releasing the Lease")
		if !l.term.waitStopped(ctx) {
			return errTermRunning
		}
		return l.inner.Update(ctx, record)
	}
	taking := !l.term.wasAcquired()
	sent := l.replica.now()
	err := l.inner.Update(ctx, record)
	if apierrors.IsNotFound(err) {
		err = l.inner.Create(ctx, record)
	}
	if err == nil && taking {
		err = l.yieldToOtherScope(ctx, record)
	}
	l.wrote(record, sent, err)
	return err
}

// yieldToOtherScope gives the Lease just taken with record back when a Lease of the deferral
// holds this replica back (see Deferral): this replica wrote its own before it read the
// other's, so of two replicas racing, at least one sees the other and yields.
func (l *lock) yieldToOtherScope(ctx context.Context, record rl.LeaderElectionRecord) error {
	held, err := l.replica.cfg.Defer.heldBy(ctx)
	if err == nil && held == nil {
		return nil
	}
	released := rl.LeaderElectionRecord{LeaderTransitions: record.LeaderTransitions, LeaseDurationSeconds: 1,
		RenewTime: record.RenewTime, AcquireTime: record.AcquireTime}
	if releaseErr := l.inner.Update(ctx, released); releaseErr != nil {
		return fmt.Errorf("giving the Lease back: %w", releaseErr)
	}
	if err != nil {
		return fmt.Errorf("took the Lease but could not read the Leases it defers to, so gave it back: %w", err)
	}
	return fmt.Errorf("took the Lease but found the %s: gave it back", held)
}

// wrote records the outcome of a write that made this replica the holder.
func (l *lock) wrote(record rl.LeaderElectionRecord, sent time.Time, err error) {
	if record.HolderIdentity != l.Identity() {
		return
	}
	l.replica.mu.Lock()
	g := l.replica.groups[l.group]
	g.reservedAt = time.Time{}
	if err == nil {
		g.leading = true
		g.lastRenewal = sent
		g.freeSince = time.Time{}
		// No raw record: the next read counts as a change, as it is one to client-go too.
		g.observed = observation{record: &record, changed: sent}
	}
	l.replica.mu.Unlock()
	if err == nil {
		l.term.acquire()
	}
}

// RecordEvent records nothing: the Lease and the logs say who leads.
func (l *lock) RecordEvent(string) {}

// Identity is this replica's.
func (l *lock) Identity() string { return l.inner.Identity() }

// Describe names the Lease.
func (l *lock) Describe() string { return l.inner.Describe() }

// observe records what this replica read of group's Lease. It returns the holder when the Lease
// is held by another replica while this one leads it: the term must stop.
func (r *Replica) observe(name string, record *rl.LeaderElectionRecord, raw []byte, now time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.groups[name]
	if !bytes.Equal(raw, g.observed.raw) {
		copied := *record
		g.observed = observation{record: &copied, raw: bytes.Clone(raw), changed: now}
	}
	if g.term != nil && g.term.wasAcquired() && record.HolderIdentity != "" && record.HolderIdentity != r.cfg.Identity {
		return record.HolderIdentity
	}
	return ""
}

// heldBeforeDeletion returns the record of group's Lease as this replica last saw it, when
// another replica held it and its lease duration has not passed since: a deleted Lease is
// treated as still held by that replica, whose next renewal recreates it.
func (r *Replica) heldBeforeDeletion(name string, now time.Time) (*rl.LeaderElectionRecord, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.groups[name].observed
	if o.record == nil || o.record.HolderIdentity == "" || o.record.HolderIdentity == r.cfg.Identity || !valid(o, now) {
		return nil, nil
	}
	copied := *o.record
	return &copied, o.raw
}

// valid reports whether an observed Lease is held and its lease duration has not passed since
// it last changed, as client-go's elector judges it.
func valid(o observation, now time.Time) bool {
	return o.record != nil && o.record.HolderIdentity != "" &&
		now.Before(o.changed.Add(time.Duration(o.record.LeaseDurationSeconds)*time.Second))
}

func (l *lock) String() string { return fmt.Sprintf("lease lock %s", l.Describe()) }
