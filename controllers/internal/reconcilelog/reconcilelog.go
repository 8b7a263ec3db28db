// Package reconcilelog logs one debug line at the end of every reconcile, with how long it took
// and how it ended, under the stable keys `durationMs` and `result`. The line goes through the
// reconcile's own logger, so it carries controller-runtime's `controller`, `namespace`, `name`
// and `reconcileID`, and `manager logs summary` computes reconcile counts and latency
// percentiles from it.
//
// The error itself is not logged here: controller-runtime logs every returned error once, as
// "Reconciler error", and logging it twice would double every error count.
package reconcilelog

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Message is the message of the reconcile-end line.
const Message = "Reconcile finished"

// Keys of the reconcile-end line.
const (
	// KeyDuration is the reconcile's wall time in milliseconds, a number with microsecond
	// precision.
	KeyDuration = "durationMs"
	// KeyResult is how the reconcile ended: one of the Result constants.
	KeyResult = "result"
	// KeyRequeueAfter is the RequeueAfter the reconciler returned, as a Go duration string;
	// only on requeue-after lines.
	KeyRequeueAfter = "requeueAfter"
)

// Values of KeyResult.
const (
	// ResultSuccess is a reconcile that returned no error and no requeue.
	ResultSuccess = "success"
	// ResultRequeueAfter is a reconcile that returned no error and a RequeueAfter.
	ResultRequeueAfter = "requeue-after"
	// ResultRequeue is a reconcile that returned Requeue: true, which Switchboard's controllers
	// never do; it is told apart so that a regression shows in the logs.
	ResultRequeue = "requeue"
	// ResultError is a reconcile that returned an error controller-runtime retries with backoff.
	ResultError = "error"
	// ResultTerminalError is a reconcile that returned a reconcile.TerminalError, which
	// controller-runtime does not retry.
	ResultTerminalError = "terminal-error"
)

// Wrap returns a reconciler that calls r and then logs the reconcile-end line at V(1) (zap's
// debug level). It returns r's result and error unchanged.
func Wrap[request comparable](r reconcile.TypedReconciler[request]) reconcile.TypedReconciler[request] {
	return &reconciler[request]{inner: r, now: time.Now}
}

type reconciler[request comparable] struct {
	inner reconcile.TypedReconciler[request]
	// now is time.Now; tests replace it to get known durations.
	now func() time.Time
}

// Reconcile calls the wrapped reconciler and logs how it ended.
func (r *reconciler[request]) Reconcile(ctx context.Context, req request) (reconcile.Result, error) {
	start := r.now()
	result, err := r.inner.Reconcile(ctx, req)
	logger := log.FromContext(ctx).V(1)
	if !logger.Enabled() {
		return result, err
	}
	elapsed := r.now().Sub(start)
	kv := []any{KeyDuration, float64(elapsed.Microseconds()) / 1000, KeyResult, Result(result, err)}
	if err == nil && result.RequeueAfter > 0 {
		kv = append(kv, KeyRequeueAfter, result.RequeueAfter.String())
	}
	logger.Info(Message, kv...)
	return result, err
}

// Result names how a reconcile that returned result and err ended, in the order
// controller-runtime itself looks at them: an error wins over any requeue.
func Result(result reconcile.Result, err error) string {
	switch {
	case err != nil && errors.Is(err, reconcile.TerminalError(nil)):
		return ResultTerminalError
	case err != nil:
		return ResultError
	case result.RequeueAfter > 0:
		return ResultRequeueAfter
	case result.Requeue: //nolint:staticcheck // Deprecated, but controller-runtime still honours it, so the log names it.
		return ResultRequeue
	default:
		return ResultSuccess
	}
}
