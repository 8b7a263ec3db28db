package leases

import (
	"time"

	"k8s.io/client-go/tools/leaderelection"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

// headStartUnit is the head start per group a replica already leads: the longest time between
// two tries of another replica's elector (client-go jitters the retry period up to 1 +
// JitterFactor times), so that every other replica gets a try first.
func (r *Replica) headStartUnit() time.Duration {
	return time.Duration(float64(r.cfg.RetryPeriod) * (1 + leaderelection.JitterFactor))
}

// headStart returns how much longer this replica waits before it takes group's Lease, read as
// record (nil when there is none). Zero means go ahead: then the Lease is reserved, so that the
// head start of this replica's other groups counts it as led until the write is done.
//
// The rule: a replica that leads N other groups (or is taking them) waits N units from when it
// first saw the Lease free, so that replicas that lead fewer take it first. When the Lease
// expired (its holder died), the replicas that hold other Leases are known, and a replica waits
// only for as many units as it leads more than the least loaded of them: after a crash all
// survivors usually lead as many, and none should wait. A Lease that is missing or was released
// comes up at start or in a rollout, when replicas that hold nothing yet may be starting, so
// there the full head start applies.
func (r *Replica) headStart(name string, record *rl.LeaderElectionRecord, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.groups[name]
	if g.term != nil && g.term.wasAcquired() {
		// This replica holds the Lease (a renewal that found it deleted, say): nothing to wait for.
		return 0
	}
	expired := false
	switch {
	case record == nil, record.HolderIdentity == "":
	case record.HolderIdentity == r.cfg.Identity:
		return 0
	case valid(g.observed, now):
		g.freeSince = time.Time{}
		return 0
	default:
		expired = true
	}
	if g.freeSince.IsZero() {
		g.freeSince = now
	}
	unit := r.headStartUnit()
	mine := 0
	for other, og := range r.groups {
		if other != name && (og.leading || (!og.reservedAt.IsZero() && now.Sub(og.reservedAt) < 2*unit)) {
			mine++
		}
	}
	behind := mine
	if expired {
		behind -= r.leastLoaded(name, now)
	}
	remaining := g.freeSince.Add(time.Duration(max(behind, 0)) * unit).Sub(now)
	if remaining > 0 {
		return remaining
	}
	g.reservedAt = now
	return 0
}

// leastLoaded returns the fewest Leases, other than group's, that another replica is seen to
// hold; zero when no other replica is seen holding any.
func (r *Replica) leastLoaded(name string, now time.Time) int {
	held := map[string]int{}
	for other, og := range r.groups {
		if other == name || !valid(og.observed, now) {
			continue
		}
		if holder := og.observed.record.HolderIdentity; holder != r.cfg.Identity {
			held[holder]++
		}
	}
	least := 0
	for _, n := range held {
		if least == 0 || n < least {
			least = n
		}
	}
	return least
}
