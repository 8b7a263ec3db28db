package leases

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
)

// term is one stretch of leading a group: from the write that took the Lease until the Term
// function has returned.
type term struct {
	fn  Term
	log logr.Logger
	// ctx is the Term function's context, a child of the election's; cancel stops it.
	ctx    context.Context
	cancel context.CancelFunc
	// endElection ends the election this term belongs to: a term that stops on its own gives
	// the Lease up.
	endElection context.CancelFunc
	// done is closed once the Term function has returned, or once it is certain never to run.
	done chan struct{}

	mu       sync.Mutex
	acquired bool
	err      error
}

func newTerm(electionCtx context.Context, endElection context.CancelFunc, fn Term, log logr.Logger) *term {
	ctx, cancel := context.WithCancel(electionCtx)
	return &term{fn: fn, log: log, ctx: ctx, cancel: cancel, endElection: endElection, done: make(chan struct{})}
}

// acquire records that this replica wrote the Lease as its holder: from now on the Lease is
// released only after the term has stopped.
func (t *term) acquire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.acquired = true
}

func (t *term) wasAcquired() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acquired
}

// running reports whether the Term function may be running.
func (t *term) running() bool {
	if !t.wasAcquired() {
		return false
	}
	select {
	case <-t.done:
		return false
	default:
		return t.ctx.Err() == nil
	}
}

// run is client-go's OnStartedLeading: it runs the Term function until the term is stopped,
// the elector's context (leadCtx) ends, or the function returns by itself.
func (t *term) run(leadCtx context.Context) {
	defer close(t.done)
	stopWithLeader := context.AfterFunc(leadCtx, t.cancel)
	defer stopWithLeader()
	if t.ctx.Err() != nil {
		return
	}
	t.log.Info("Started leading")
	err := t.fn(t.ctx)
	t.mu.Lock()
	t.err = err
	t.mu.Unlock()
	t.cancel()
	t.endElection()
	if err != nil {
		t.log.Error(err, "Term failed")
	}
	t.log.Info("Stopped leading")
}

// stop stops the Term function; the elector keeps going until client-go sees the loss itself.
func (t *term) stop(reason string) {
	if t.ctx.Err() == nil && t.wasAcquired() {
		t.log.Info("Stopping the term", "reason", reason)
	}
	t.cancel()
}

// waitStopped waits, when the term was acquired, until the Term function has returned or ctx
// ends; it reports whether the term has stopped.
func (t *term) waitStopped(ctx context.Context) bool {
	if !t.wasAcquired() {
		return true
	}
	select {
	case <-t.done:
		return true
	case <-ctx.Done():
		return false
	}
}
