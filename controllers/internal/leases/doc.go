// Package leases elects, among the replicas of the manager, a leader per controller group, each
// through a Lease of its own, with client-go's leader election (tools/leaderelection over a
// LeaseLock). A Replica runs one election per group; while it holds a group's Lease it runs that
// group's Term (its controllers' workers and producers), and when it loses the Lease it stops
// exactly that Term and competes again.
//
// client-go's elector alone does not keep two replicas from running one group at once: with
// ReleaseOnCancel it releases the Lease as soon as it stops renewing, before anything its
// callbacks started has stopped, and a Lease that someone deletes looks free to every candidate
// at once. The lock this package hands the elector (see lock.go) closes those gaps:
//
//   - the Term stops as soon as the lock sees another holder, or when no renewal has succeeded
//     for the renew deadline; it must have stopped by the time another replica may take the
//     Lease (the lease duration after the last renewal), and Run fails if it has not;
//   - the Lease is released only once the Term has stopped;
//   - a Lease found deleted counts as held by the last holder this replica saw, until that
//     holder's lease duration has passed; the holder itself recreates it on its next renewal.
//
// Spreading: a replica that already leads groups gives the others a head start before it takes
// another free Lease (see spread.go), so that replicas started together lead about as many
// groups each.
//
// Deferring: a replica takes no Lease while another it defers to holds it back (see Deferral):
// a Lease of the other election scope during a rollout that switches scopes, or one of the
// installation's earlier names during the rollout that renames its Leases.
//
// The package knows no controller and no API kind: controllers/ maps groups to controllers.
package leases
