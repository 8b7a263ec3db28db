package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"

	"github.com/example/switchboard/controllers/internal/apifeatures"
	"github.com/example/switchboard/controllers/internal/transient"
)

// DefaultIdleRecheckInterval is the default of --idle-recheck-interval: a minute, the VPA's
// recommender's own loop, so that a VPA component installed beside a running manager overlaps
// it for about that long at most.
const DefaultIdleRecheckInterval = time.Minute

// idleUnknownError is a controller's Idle check that could not answer.
type idleUnknownError struct{ err error }

func (e *idleUnknownError) Error() string { return e.err.Error() }
func (e *idleUnknownError) Unwrap() error { return e.err }

// idleReason says why controller c is idle ("" when it is not): its Idle check, then, for an
// optional controller, whether the API server serves its primary kind, asked with backoff. An
// Idle check that cannot answer is an *idleUnknownError.
func idleReason(ctx context.Context, c Controller, namespaces []string, discoveryClient func() (*discovery.DiscoveryClient, error), backoff wait.Backoff) (string, error) {
	if c.Idle != nil {
		reason, err := c.Idle(ctx, namespaces)
		if err != nil {
			return "", &idleUnknownError{err}
		}
		if reason != "" {
			return reason, nil
		}
	}
	if !c.Optional {
		return "", nil
	}
	d, err := discoveryClient()
	if err != nil {
		return "", err
	}
	gvk := c.For.GetObjectKind().GroupVersionKind()
	var served bool
	err = transient.Retry(ctx, backoff, logr.FromContextOrDiscard(ctx), "asking whether the API server serves "+gvk.GroupVersion().String(),
		func(context.Context) (err error) {
			served, err = apifeatures.Serves(d, gvk.GroupVersion().String(), func(r metav1.APIResource) bool { return r.Kind == gvk.Kind })
			return err
		})
	if err != nil {
		return "", err
	}
	if !served {
		return fmt.Sprintf("the API server does not serve %s %s (is its CRD installed?); the manager looks again every minute", gvk.GroupVersion(), gvk.Kind), nil
	}
	return "", nil
}

// idleRecheck asks every interval whether each controller that may be idle (an Idle check, or
// an optional kind) still is as Prepare decided at start, and stops the manager with an error
// that says which changed and how when one did: a controller is set up, or left out, once, when
// the manager is made, so only a new process (the Deployment's restart) can follow the change.
// Without it a controller left idle because its CRD was missing would never start, and the
// verticalpodautoscaler would fight a VPA admission controller installed after it. It runs on
// every replica, standbys included, so that none takes over with a stale decision.
type idleRecheck struct {
	interval    time.Duration
	controllers []Controller
	namespaces  []string
	discovery   func() (*discovery.DiscoveryClient, error)
	// decided is each controller's idle reason at start, "" for one that runs.
	decided map[string]string
}

// NeedLeaderElection is false: every replica follows the changes.
func (r *idleRecheck) NeedLeaderElection() bool { return false }

// Start asks again every interval until ctx ends or an answer changed.
func (r *idleRecheck) Start(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx).WithName("idle-recheck")
	ctx = logr.NewContext(ctx, log)
	ticker := time.NewTicker(r.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		if err := r.recheck(ctx); err != nil {
			return err
		}
	}
}

// recheck asks each controller once; an answer that cannot be had now keeps the decision.
func (r *idleRecheck) recheck(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx)
	for _, c := range r.controllers {
		// One attempt: the next tick is the retry.
		reason, err := idleReason(ctx, c, r.namespaces, r.discovery, wait.Backoff{Steps: 1})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.V(1).Info("Cannot tell whether a controller is idle; keeping what was decided", "controller", c.Name, "error", err.Error())
			continue
		}
		was := r.decided[c.Name]
		switch {
		case was == "" && reason != "":
			return fmt.Errorf("controller %s ran since the manager started, and now must be idle (%s): the manager stops so that its restart leaves it out", c.Name, reason)
		case was != "" && reason == "":
			return fmt.Errorf("controller %s was idle at start (%s), and no longer is: the manager stops so that its restart runs it", c.Name, was)
		}
	}
	return nil
}
