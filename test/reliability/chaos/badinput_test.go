package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/faultproxy"
	"github.com/example/switchboard/internal/testenv"
)

// badInput is the malformed objects mixed into the churn (testenv.MalformedObjects).
type badInput struct {
	c       client.Client
	ns      string
	mu      sync.Mutex
	objects []*testenv.Malformed
}

func newBadInput(c client.Client, ns string, n int) *badInput {
	return &badInput{c: c, ns: ns, objects: testenv.MalformedObjects(ns, n)}
}

// create creates the malformed objects.
func (b *badInput) create(ctx context.Context) error {
	for _, o := range b.objects {
		if err := o.Create(ctx, b.c); err != nil {
			return err
		}
	}
	return nil
}

// change changes each malformed object once, keeping it malformed.
func (b *badInput) change(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, o := range b.objects {
		if err := o.Change(ctx, b.c); err != nil {
			return err
		}
	}
	return nil
}

// badFigures is what the report says of the malformed objects.
type badFigures struct {
	objects, changes       int
	events, mostEvents     int
	reconciles, mostRecons int
}

// check checks what the malformed objects got: each its warning Event, no more of them than its changes and the terms of leading its controller
// allow (a new term checks every object again, and may say it again), and no more reconciles
// than three times that, with one more a minute for a MyApp whose name is taken (it looks
// again every minute).
func (b *badInput) check(ctx context.Context, reconciles []Reconcile, rs *replicas) ([]Violation, badFigures) {
	b.mu.Lock()
	defer b.mu.Unlock()
	figures := badFigures{objects: len(b.objects)}
	if len(b.objects) == 0 {
		return nil, figures
	}
	warnings, err := testenv.Warnings(ctx, b.c, b.ns)
	if err != nil {
		return []Violation{{InvariantEventsOnce, err.Error()}}, figures
	}
	recons := map[string]int{}
	for _, r := range reconciles {
		recons[r.Controller+" "+r.Object]++
	}
	terms := termsPerGroup(rs.writes())
	run := time.Since(rs.began())
	var out []Violation
	for _, o := range b.objects {
		figures.changes += o.Changes
		name := o.Object.GetName()
		allowed := o.Changes + terms[o.Group]
		if o.Reason == v1alpha1.ReasonDeploymentConflict {
			allowed += int(run / time.Minute)
		}
		n := recons[o.Controller+" "+b.ns+"/"+name]
		figures.reconciles += n
		figures.mostRecons = max(figures.mostRecons, n)
		if limit := 3 * allowed; n > limit {
			out = append(out, Violation{InvariantBadInputPace, fmt.Sprintf("malformed %s %s was reconciled %d times for %d changes and %d terms of %s: more than %d, faster than backoff allows",
				o.Kind, name, n, o.Changes, terms[o.Group], o.Group, limit)})
		}
		got := warnings[o.WarningKey()]
		figures.events += got
		figures.mostEvents = max(figures.mostEvents, got)
		switch {
		case got == 0:
			out = append(out, Violation{InvariantEventsOnce, fmt.Sprintf("malformed %s %s got no %s Event", o.Kind, name, o.Reason)})
		case got > allowed:
			out = append(out, Violation{InvariantEventsOnce, fmt.Sprintf("malformed %s %s got its %s Event %d times for %d changes and %d terms of %s (at most %d)",
				o.Kind, name, o.Reason, got, o.Changes, terms[o.Group], o.Group, allowed)})
		}
	}
	return out, figures
}

// termsPerGroup counts, per group, the terms of leading it: the accepted writes of its Lease
// that changed its holder.
func termsPerGroup(writes []faultproxy.Write) map[string]int {
	var leases []faultproxy.Write
	for _, w := range writes {
		if w.Resource == "leases" && w.Succeeded() && strings.HasPrefix(w.Name, controllers.LeaseNamePrefix) {
			leases = append(leases, w)
		}
	}
	sort.SliceStable(leases, func(i, j int) bool { return leases[i].Answered.Before(leases[j].Answered) })
	last := map[string]string{}
	out := map[string]int{}
	for _, w := range leases {
		group := strings.TrimPrefix(w.Name, controllers.LeaseNamePrefix)
		if w.Holder != "" && w.Holder != last[group] {
			out[group]++
		}
		last[group] = w.Holder
	}
	return out
}
