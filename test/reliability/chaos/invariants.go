// Package chaos runs Switchboard's three controllers on three replicas, each behind a hostile
// road to the API server (package faults), under continuous churn, kills at random and a
// partition, then without faults, and checks what must hold whatever happened: the invariants
// of this file, each a pure function of what was recorded, so that each has a unit test.
// TestChaos runs it on the local cluster (`make test-chaos`; a short run in `make test-e2e`).
package chaos

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/example/switchboard/internal/faultproxy"
	"github.com/example/switchboard/test/reliability/churn"
)

// Violation is one broken invariant, said so that the failure needs no debugger.
type Violation struct {
	// Invariant names the invariant broken.
	Invariant string
	// Message says what was seen.
	Message string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Message }

// The invariants' names.
const (
	InvariantConverged    = "converged"
	InvariantOneWriter    = "one writer"
	InvariantRolls        = "rolls"
	InvariantSamples      = "samples"
	InvariantNoCrash      = "no crash"
	InvariantNoHotLoop    = "no hot loop"
	InvariantEventsOnce   = "events once"
	InvariantBadInputPace = "bad input paced"
)

// Attribution says which controller group a write belongs to, by what the manager's
// controllers write: their field managers, their own kinds, the configmapwatcher's digest key
// in the manager's namespace. "" means the write is not checked (Events, which the event
// broadcaster may send after its term, and the Leases themselves); AnyGroup means the writer
// must lead some group.
type Attribution func(faultproxy.Write) string

// AnyGroup is the attribution of a write no group claims.
const AnyGroup = "*"

// SwitchboardWrites attributes the writes of Switchboard's controllers; managerNamespace holds
// the Leases and the digest key.
func SwitchboardWrites(managerNamespace string) Attribution {
	groups := []string{"myapp", "verticalscaler", "configmapwatcher"}
	return func(w faultproxy.Write) string {
		switch {
		case w.Resource == "events" || w.Resource == "leases":
			return ""
		case slices.Contains(groups, w.FieldManager):
			return w.FieldManager
		case w.Group == "app.example.com" && w.Resource == "myapps":
			return "myapp"
		case w.Group == "app.example.com" && (w.Resource == "verticalscalers" || w.Resource == "verticalscalercheckpoints"):
			return "verticalscaler"
		case w.Resource == "secrets" && w.Namespace == managerNamespace:
			return "configmapwatcher"
		case w.Group == "apps" && w.Resource == "deployments" && w.Verb == "patch":
			// myapp moves the fields it created to server-side apply with a JSON patch
			// (controllers/internal/apply), which names no field manager.
			return "myapp"
		}
		return AnyGroup
	}
}

// leaseTerm is a successful write of a group's Lease: from when it was answered, the Lease's
// holder is the client that wrote it (or nobody, for a release).
type leaseWrite struct {
	answered time.Time
	client   string
	holder   string
}

// CheckOneWriter checks that every write the API server accepted from a client (a replica's
// process) was sent while that client held the Lease of the write's group, as the API server
// saw the Lease: the last write of it answered before the write was sent must be the client's
// own, naming a holder. That is "no two replicas write in overlapping terms", across
// partitions too: a replica cut off must have stopped writing by the time another takes the
// Lease, and a write it had in flight counts when it reaches the API server. leasePrefix and
// the Lease's name give the group ("switchboard-myapp" is group myapp).
func CheckOneWriter(writes []faultproxy.Write, leasePrefix string, attribute Attribution) []Violation {
	leases := map[string][]leaseWrite{}
	for _, w := range writes {
		if w.Resource == "leases" && w.Succeeded() && strings.HasPrefix(w.Name, leasePrefix) {
			group := strings.TrimPrefix(w.Name, leasePrefix)
			leases[group] = append(leases[group], leaseWrite{answered: w.Answered, client: w.Client, holder: w.Holder})
		}
	}
	for _, ws := range leases {
		sort.SliceStable(ws, func(i, j int) bool { return ws[i].answered.Before(ws[j].answered) })
	}
	// holding returns, for group at t, whether client held its Lease and who the API server
	// last saw write it.
	holding := func(group, client string, t time.Time) (bool, leaseWrite) {
		ws := leases[group]
		i := sort.Search(len(ws), func(i int) bool { return !ws[i].answered.Before(t) })
		if i == 0 {
			return false, leaseWrite{}
		}
		last := ws[i-1]
		return last.client == client && last.holder != "", last
	}
	var out []Violation
	for _, w := range writes {
		group := attribute(w)
		if group == "" || !w.Succeeded() {
			continue
		}
		if group == AnyGroup {
			held := false
			for g := range leases {
				if ok, _ := holding(g, w.Client, w.Sent); ok {
					held = true
				}
			}
			if !held {
				out = append(out, Violation{InvariantOneWriter, fmt.Sprintf("%s wrote %s (%s) at %s while it held no Lease",
					w.Client, w.Object(), w.Verb, stamp(w.Sent))})
			}
			continue
		}
		ok, last := holding(group, w.Client, w.Sent)
		switch {
		case ok:
		case last.client == "":
			out = append(out, Violation{InvariantOneWriter, fmt.Sprintf("%s wrote %s (%s, %s) at %s before anyone held the %s Lease",
				w.Client, w.Object(), w.Verb, group, stamp(w.Sent), group)})
		case last.holder == "":
			out = append(out, Violation{InvariantOneWriter, fmt.Sprintf("%s wrote %s (%s, %s) at %s after %s released the %s Lease at %s",
				w.Client, w.Object(), w.Verb, group, stamp(w.Sent), last.client, group, stamp(last.answered))})
		default:
			out = append(out, Violation{InvariantOneWriter, fmt.Sprintf("%s wrote %s (%s, %s) at %s, %s after %s (%s) wrote the %s Lease as its holder",
				w.Client, w.Object(), w.Verb, group, stamp(w.Sent), w.Sent.Sub(last.answered).Round(time.Millisecond), last.client, last.holder, group)})
		}
	}
	return out
}

func stamp(t time.Time) string { return t.Format("15:04:05.000") }

// Roll is a roll of a workload: its Pod template's config hash changed, as seen at At.
type Roll struct {
	Workload string
	At       time.Time
	Hash     string
}

// CheckRolls checks the rolls of each workload in uses against the changes of the keys it takes:
// every roll needs a change of one of its keys after the change the previous roll needed, sent
// before the roll was seen (two rolls for one change, or a roll for a change of a key it does not
// take, or of labels only, fail); and the last change of its keys must be followed by a roll
// (a change missed fails). Rolls of workloads not in uses are not checked.
func CheckRolls(rolls []Roll, changes []churn.Change, uses map[string][]churn.SourceKey) []Violation {
	byWorkload := map[string][]Roll{}
	for _, r := range rolls {
		byWorkload[r.Workload] = append(byWorkload[r.Workload], r)
	}
	var out []Violation
	for _, workload := range slices.Sorted(maps.Keys(uses)) {
		keys := uses[workload]
		var relevant []churn.Change
		for _, c := range changes {
			for _, k := range c.Keys {
				if slices.Contains(keys, churn.SourceKey{Kind: c.Kind, Name: c.Name, Key: k}) {
					relevant = append(relevant, c)
					break
				}
			}
		}
		sort.SliceStable(relevant, func(i, j int) bool { return relevant[i].Sent.Before(relevant[j].Sent) })
		rs := byWorkload[workload]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].At.Before(rs[j].At) })
		next := 0 // the first change no roll has used yet
		for _, r := range rs {
			if next >= len(relevant) || !relevant[next].Sent.Before(r.At) {
				why := "no change of its keys at all"
				if next > 0 {
					prev := relevant[next-1]
					why = fmt.Sprintf("the last change of its keys (%s %s %v at %s) was already rolled", prev.Kind, prev.Name, prev.Keys, stamp(prev.Sent))
				}
				out = append(out, Violation{InvariantRolls, fmt.Sprintf("%s rolled at %s (config hash %s) with %s: rolled twice, or for nothing",
					workload, stamp(r.At), r.Hash, why)})
				continue
			}
			next++
		}
		if n := len(relevant); n > 0 && (len(rs) == 0 || !rs[len(rs)-1].At.After(relevant[n-1].Answered)) {
			last := relevant[n-1]
			out = append(out, Violation{InvariantRolls, fmt.Sprintf("%s did not roll after the last change of its keys (%s %s %v at %s): a change missed",
				workload, last.Kind, last.Name, last.Keys, stamp(last.Answered))})
		}
	}
	return out
}

// SamplesSeen is one VerticalScaler container's recommendation as seen at At: how many samples
// it rests on.
type SamplesSeen struct {
	// Scaler names the VerticalScaler and its uid (a new one of the same name starts over).
	Scaler, Container string
	At                time.Time
	Samples           int64
}

// CheckSamples checks that no VerticalScaler's recommendation for a container goes back to fewer
// samples than one seen before.
func CheckSamples(seen []SamplesSeen) []Violation {
	type key struct{ scaler, container string }
	most := map[key]SamplesSeen{}
	var out []Violation
	for _, s := range seen {
		k := key{s.Scaler, s.Container}
		if prev, ok := most[k]; ok && s.Samples < prev.Samples {
			out = append(out, Violation{InvariantSamples, fmt.Sprintf("VerticalScaler %s container %s: a recommendation from %d samples at %s, after one from %d at %s",
				s.Scaler, s.Container, s.Samples, stamp(s.At), prev.Samples, stamp(prev.At))})
			continue
		}
		most[k] = s
	}
	return out
}

// Reconcile is one reconcile a replica logged ("Reconcile finished", debug level).
type Reconcile struct {
	Replica, Controller, Object string
	At                          time.Time
}

// CheckHotLoops checks that no replica reconciled one object for one controller more than
// limit times within any window: a reconcile that requeues itself at once, or writes what
// triggers it again, does so hundreds of times a second. It returns the violations and the most
// reconciles of one object in one window, for the report.
func CheckHotLoops(reconciles []Reconcile, window time.Duration, limit int) ([]Violation, int) {
	type key struct{ replica, controller, object string }
	times := map[key][]time.Time{}
	for _, r := range reconciles {
		k := key{r.Replica, r.Controller, r.Object}
		times[k] = append(times[k], r.At)
	}
	var out []Violation
	most := 0
	keys := slices.SortedFunc(maps.Keys(times), func(a, b key) int {
		return strings.Compare(a.replica+a.controller+a.object, b.replica+b.controller+b.object)
	})
	for _, k := range keys {
		ts := times[k]
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		start, worst, worstAt := 0, 0, time.Time{}
		for end := range ts {
			for ts[end].Sub(ts[start]) >= window {
				start++
			}
			if n := end - start + 1; n > worst {
				worst, worstAt = n, ts[start]
			}
		}
		most = max(most, worst)
		if worst > limit {
			out = append(out, Violation{InvariantNoHotLoop, fmt.Sprintf("%s reconciled %s for %s %d times within %s from %s (at most %d allowed)",
				k.replica, k.object, k.controller, worst, window, stamp(worstAt), limit)})
		}
	}
	return out, most
}
