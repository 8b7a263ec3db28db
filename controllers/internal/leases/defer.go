package leases

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
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
//
// A Deferral may also stand for the Leases the installation held under earlier names (see
// WithEarlierNames), which its replicas of an earlier version still hold during the rollout that
// renames them.
type Deferral struct {
	client    coordinationv1client.LeasesGetter
	namespace string
	names     []string
	now       func() time.Time
	earlier   *earlierNames

	mu       sync.Mutex
	observed map[string]observation
}

// earlierNames is the Leases an installation held under other names before, and how to tell
// its own replicas among their holders.
type earlierNames struct {
	names []string
	// ours says whether a holder is a replica of this installation.
	ours func(holder string) bool
	// quiet is how long none of the Leases must have been held by one of ours, counted from
	// this replica's first look, before this replica takes a Lease of its own.
	quiet time.Duration
	log   logr.Logger

	// since is when this replica first looked, or last saw one of ours hold one of the Leases;
	// seen is the Leases it saw one of ours hold, which it deletes once they are free.
	since time.Time
	seen  map[string]bool
}

// hold is a Lease that keeps this replica from taking its own.
type hold struct {
	lease, holder string
	// earlier: the Lease is one of the installation's earlier names, not the other scope's.
	earlier bool
}

func (h *hold) String() string {
	switch {
	case !h.earlier:
		return fmt.Sprintf("Lease %s of the other election scope, held by %s", h.lease, h.holder)
	case h.holder != "":
		return fmt.Sprintf("Lease %s of this installation's earlier names, held by %s", h.lease, h.holder)
	default:
		return fmt.Sprintf("Lease %s of this installation's earlier names, free for less than a lease duration", h.lease)
	}
}

// NewDeferral returns the deferral to the Leases names in namespace.
func NewDeferral(client coordinationv1client.LeasesGetter, namespace string, names []string) *Deferral {
	return &Deferral{client: client, namespace: namespace, names: names, now: time.Now, observed: map[string]observation{}}
}

// WithEarlierNames makes d also defer to names, the Leases this installation held under the
// names of an earlier version, while one of its replicas (ours) holds one: the replicas of that
// version do not know the new names, and would lead beside this one. This replica takes no
// Lease until none of them has been held by one of ours for quiet (a lease duration), counted
// from when it last saw one held or released by ours, or from its first look, so that a replica of the earlier version that takes one of them over
// just after another let it go is seen too; without any Lease of the earlier names it does not
// wait at all. The Leases found held by ours are then deleted once free, so that later starts do
// not wait; a Lease held by another installation keeps this replica waiting only for the quiet
// period from its first look, and is not deleted. It returns d.
func (d *Deferral) WithEarlierNames(names []string, ours func(holder string) bool, quiet time.Duration, log logr.Logger) *Deferral {
	d.earlier = &earlierNames{names: names, ours: ours, quiet: quiet, log: log, seen: map[string]bool{}}
	return d
}

// heldBy returns the first Lease that keeps this replica from taking its own: one of the other
// scope held by a holder whose lease duration has not passed since this replica saw it change,
// or one of the earlier names (see WithEarlierNames); nil when there is none.
func (d *Deferral) heldBy(ctx context.Context) (*hold, error) {
	if d == nil {
		return nil, nil
	}
	for _, name := range d.names {
		l, err := d.client.Leases(d.namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading Lease %s: %w", name, err)
		}
		if o := d.observe(name, l); valid(o, d.now()) {
			return &hold{lease: name, holder: o.record.HolderIdentity}, nil
		}
	}
	return d.heldUnderEarlierNames(ctx)
}

// observe records what this replica read of the Lease name, and returns it with when it last
// changed.
func (d *Deferral) observe(name string, l *coordinationv1.Lease) observation {
	record := rl.LeaseSpecToLeaderElectionRecord(&l.Spec)
	raw := []byte(fmt.Sprintf("%s/%v/%v", record.HolderIdentity, record.RenewTime.UnixNano(), record.LeaseDurationSeconds))
	d.mu.Lock()
	defer d.mu.Unlock()
	o := d.observed[name]
	if !bytes.Equal(o.raw, raw) {
		o = observation{record: record, raw: raw, changed: d.now()}
		d.observed[name] = o
	}
	return o
}

// heldUnderEarlierNames returns the Lease of the earlier names that keeps this replica waiting:
// one held by one of ours, or, while the quiet period runs, the first found. Once the quiet
// period has passed, it deletes the Leases it saw held by ours that are free.
func (d *Deferral) heldUnderEarlierNames(ctx context.Context) (*hold, error) {
	e := d.earlier
	if e == nil {
		return nil, nil
	}
	// Every Lease is read on every look, not only up to the first one held: a Lease that ours
	// hold only while they hold an earlier one too must be seen held, to be deleted later.
	var found []*coordinationv1.Lease
	var held *hold
	for _, name := range e.names {
		l, err := d.client.Leases(d.namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading Lease %s: %w", name, err)
		}
		now := d.now()
		o := d.observe(name, l)
		if valid(o, now) && e.ours(o.record.HolderIdentity) {
			d.mu.Lock()
			e.since, e.seen[name] = now, true
			d.mu.Unlock()
			if held == nil {
				held = &hold{lease: name, holder: o.record.HolderIdentity, earlier: true}
			}
			continue
		}
		// A Lease seen held by ours and now released or expired: the quiet period runs from
		// when this replica first saw it so, not from its last look while held, which may be
		// a retry period earlier.
		d.mu.Lock()
		if e.seen[name] && o.changed.After(e.since) {
			e.since = o.changed
		}
		d.mu.Unlock()
		found = append(found, l)
	}
	if held != nil || len(found) == 0 {
		return held, nil
	}
	now := d.now()
	d.mu.Lock()
	if e.since.IsZero() {
		e.since = now
	}
	waiting := now.Sub(e.since) < e.quiet
	d.mu.Unlock()
	if waiting {
		return &hold{lease: found[0].Name, earlier: true}, nil
	}
	for _, l := range found {
		d.deleteIfOurs(ctx, l)
	}
	return nil, nil
}

// deleteIfOurs deletes l, free, if this replica saw one of ours hold it, unless it changed since
// it was read. A failure is logged and left: the Lease, free, keeps nobody from leading, and only
// makes the next start wait the quiet period again.
func (d *Deferral) deleteIfOurs(ctx context.Context, l *coordinationv1.Lease) {
	e := d.earlier
	d.mu.Lock()
	seen := e.seen[l.Name]
	d.mu.Unlock()
	if !seen {
		return
	}
	err := d.client.Leases(d.namespace).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &l.ResourceVersion}})
	switch {
	case err == nil || apierrors.IsNotFound(err):
		d.mu.Lock()
		delete(e.seen, l.Name)
		d.mu.Unlock()
		if err == nil {
			e.log.Info("Deleted the Lease of this installation's earlier names", "lease", d.namespace+"/"+l.Name)
		}
	case apierrors.IsConflict(err):
		// Written since it was read: the next look decides again.
	default:
		e.log.Error(err, "Deleting the Lease of this installation's earlier names failed", "lease", d.namespace+"/"+l.Name)
	}
}

// DeferringLock is a resource lock for controller-runtime's manager election that defers to
// the Leases of d (see Deferral): it waits to take its Lease while one of them holds it back,
// and gives it back at once when, just after taking it, it finds one that does.
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

// Get reads the Lease once none of the deferral's holds this replica back, or at once when
// this replica holds its own.
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
		held, deferErr := l.deferral.heldBy(ctx)
		if deferErr != nil {
			return nil, nil, deferErr
		}
		if held == nil {
			return record, raw, err
		}
		l.log("Waiting for another Lease before taking this one", "heldLease", held.lease, "holder", held.holder, "reason", held.String())
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(l.retry):
		}
	}
}

// Create takes the Lease, and gives it back if one of the deferral's holds this replica back.
func (l *DeferringLock) Create(ctx context.Context, record rl.LeaderElectionRecord) error {
	if err := l.Interface.Create(ctx, record); err != nil {
		return err
	}
	return l.yieldIfHeld(ctx, record)
}

// Update writes the Lease; a write that takes it over gives it back if one of the deferral's
// holds this replica back.
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

// yieldIfHeld releases the Lease just taken with record when one of the deferral's holds this
// replica back.
func (l *DeferringLock) yieldIfHeld(ctx context.Context, record rl.LeaderElectionRecord) error {
	held, err := l.deferral.heldBy(ctx)
	if err == nil && held == nil {
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
		return fmt.Errorf("took the Lease but could not read the Leases it defers to, so gave it back: %w", err)
	}
	return fmt.Errorf("took the Lease but found the %s: gave it back", held)
}
