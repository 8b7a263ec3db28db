package leases

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Config is what every election of one replica shares.
type Config struct {
	// Client reads and writes the Leases.
	Client coordinationv1client.LeasesGetter
	// Namespace holds the Leases.
	Namespace string
	// Identity names this replica in the Leases it holds; unique among the replicas.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's: a candidate takes a Lease
	// over LeaseDuration after it last saw it renewed, a leader gives up when it has not renewed
	// for RenewDeadline, and both try every RetryPeriod. The Lease stores LeaseDuration in
	// whole seconds.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// Log receives what the elections do; client-go's elector logs through it too.
	Log logr.Logger
	// Defer, when set, is the Leases of the other election scope, and those of the
	// installation's earlier names: while one holds this replica back, it takes no group's
	// Lease (see Deferral).
	Defer *Deferral
}

// Validate checks the timing with client-go's rules, and that the lease duration survives being
// stored in whole seconds.
func (c Config) Validate() error {
	switch {
	case c.Client == nil || c.Namespace == "" || c.Identity == "":
		return errors.New("leases: a client, a namespace and an identity are needed")
	case c.RetryPeriod <= 0:
		return fmt.Errorf("leases: retry period %s is not positive", c.RetryPeriod)
	case c.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(c.RetryPeriod)):
		return fmt.Errorf("leases: renew deadline %s is not longer than %v retry periods (%s)", c.RenewDeadline, leaderelection.JitterFactor, c.RetryPeriod)
	case c.LeaseDuration <= c.RenewDeadline:
		return fmt.Errorf("leases: lease duration %s is not longer than the renew deadline %s", c.LeaseDuration, c.RenewDeadline)
	case c.LeaseDuration%time.Second != 0:
		return fmt.Errorf("leases: lease duration %s is not a whole number of seconds, which is what a Lease stores", c.LeaseDuration)
	}
	return nil
}

// Term is what a replica runs while it leads a group. It runs until ctx ends and must return
// only once everything it started has stopped: the Lease is released, or left to expire, only
// then. A Term that returns before ctx ends gives the Lease up; one that returns an error also
// ends Run with that error.
type Term func(ctx context.Context) error

// Replica runs the elections of one replica, one per group, and holds what they share: which
// groups this replica leads, and what it saw of every Lease, for the head start (spread.go).
type Replica struct {
	cfg Config
	now func() time.Time

	mu     sync.Mutex
	groups map[string]*group
}

// group is the state of one group's election on this replica.
type group struct {
	// term is the current election's term, nil between elections.
	term *term
	// leading is true from this replica's first successful write of the Lease as its holder
	// until the term that write started has stopped.
	leading bool
	// lastRenewal is when the last successful write of the Lease as its holder was sent: the
	// earliest time another replica can have seen that renewal.
	lastRenewal time.Time
	// observed is the Lease as this replica last read it, and when it last changed.
	observed observation
	// freeSince is when this replica first saw the Lease free (missing, released or expired)
	// since it was last held; zero while it is held.
	freeSince time.Time
	// reservedAt is when this replica decided to take the free Lease, until it has written it
	// or failed to: the head start of its other groups counts it as led.
	reservedAt time.Time
}

// observation is a Lease's record as read, and when this replica saw it change.
type observation struct {
	record  *rl.LeaderElectionRecord
	raw     []byte
	changed time.Time
}

// NewReplica returns the elections of one replica.
func NewReplica(cfg Config) (*Replica, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Replica{cfg: cfg, now: time.Now, groups: map[string]*group{}}, nil
}

// Identity names this replica in the Leases it holds.
func (r *Replica) Identity() string { return r.cfg.Identity }

// Leading reports whether this replica runs the term of group now.
func (r *Replica) Leading(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.groups[name]
	return g != nil && g.term != nil && g.term.running()
}

// Holder returns the holder of group's Lease as this replica last saw it, empty when it saw
// none or the Lease was released.
func (r *Replica) Holder(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.groups[name]; g != nil && g.observed.record != nil {
		return g.observed.record.HolderIdentity
	}
	return ""
}

// LeaseName is the name of group's Lease given a prefix; Run uses prefix + group.
func LeaseName(prefix, group string) string { return prefix + group }

// Run elects a leader for group through the Lease named lease until ctx ends, running term
// whenever this replica holds it: it competes, leads, loses or gives the Lease up, and competes
// again. It returns nil when ctx ends, and an error when a term failed or did not stop before
// another replica could take the Lease over.
func (r *Replica) Run(ctx context.Context, groupName, lease string, term Term) error {
	r.mu.Lock()
	if _, dup := r.groups[groupName]; dup {
		r.mu.Unlock()
		return fmt.Errorf("leases: group %s is elected twice", groupName)
	}
	r.groups[groupName] = &group{}
	r.mu.Unlock()
	log := r.cfg.Log.WithValues("lease", r.cfg.Namespace+"/"+lease, "group", groupName)
	for ctx.Err() == nil {
		if err := r.elect(ctx, log, groupName, lease, term); err != nil {
			return err
		}
	}
	return nil
}

// elect runs one client-go election: from competing for the Lease to having stopped the term
// it led, if any.
func (r *Replica) elect(ctx context.Context, log logr.Logger, groupName, lease string, fn Term) error {
	electionCtx, endElection := context.WithCancel(ctx)
	defer endElection()
	t := newTerm(electionCtx, endElection, fn, log)
	r.mu.Lock()
	g := r.groups[groupName]
	g.term = t
	// A new elector starts its own clock on what it reads first; so does the head start.
	g.observed = observation{}
	g.freeSince, g.reservedAt = time.Time{}, time.Time{}
	r.mu.Unlock()

	lock := &lock{
		inner: &rl.LeaseLock{
			LeaseMeta:  metaOf(r.cfg.Namespace, lease),
			Client:     r.cfg.Client,
			LockConfig: rl.ResourceLockConfig{Identity: r.cfg.Identity},
		},
		replica: r,
		group:   groupName,
		term:    t,
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: r.cfg.LeaseDuration,
		RenewDeadline: r.cfg.RenewDeadline,
		RetryPeriod:   r.cfg.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: t.run,
			OnStoppedLeading: func() {},
		},
		// Safe only because the lock releases after the term has stopped (lock.Update).
		ReleaseOnCancel: true,
		Name:            lease,
	})
	if err != nil {
		return fmt.Errorf("leases: %w", err)
	}
	go r.watch(electionCtx, groupName, t)
	elector.Run(logr.NewContext(electionCtx, electorLogger(log)))

	// The elector returns once it stopped renewing. A term it started may still be stopping
	// when another holder took the Lease; it must have stopped before that holder could have
	// started, which is the lease duration after this replica's last renewal.
	err = r.awaitStopped(groupName, t)
	r.mu.Lock()
	g.term, g.leading = nil, false
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return t.err
}

// awaitStopped waits until t has stopped, and fails when it outlives the Lease.
func (r *Replica) awaitStopped(groupName string, t *term) error {
	if !t.wasAcquired() {
		return nil
	}
	r.mu.Lock()
	deadline := r.groups[groupName].lastRenewal.Add(r.cfg.LeaseDuration)
	r.mu.Unlock()
	timer := time.NewTimer(max(deadline.Sub(r.now()), 0))
	defer timer.Stop()
	select {
	case <-t.done:
		return nil
	case <-timer.C:
	}
	select {
	case <-t.done:
		return nil
	default:
		return fmt.Errorf("leases: the term of group %s has not stopped by the time another replica may take its Lease over", groupName)
	}
}

// watch stops t once no renewal of the Lease has succeeded for the renew deadline: client-go
// notices up to a retry period later, and the term must stop before the Lease expires.
func (r *Replica) watch(ctx context.Context, groupName string, t *term) {
	tick := max(r.cfg.RetryPeriod/4, 10*time.Millisecond)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.done:
			return
		case <-ticker.C:
		}
		r.mu.Lock()
		last := r.groups[groupName].lastRenewal
		r.mu.Unlock()
		if t.wasAcquired() && !last.IsZero() && r.now().Sub(last) > r.cfg.RenewDeadline {
			t.stop(fmt.Sprintf("no renewal for %s", r.now().Sub(last).Round(time.Millisecond)))
		}
	}
}
