// Package transient retries the calls the manager makes to the API server once, before its
// caches and probes start: the REST mapper's discovery read, whether an optional kind is
// served, and which namespaces --namespace-selector selects. A failure the API server would
// not repeat a moment later (an overloaded or restarting API server, a dropped connection) must
// not stop the manager, which would then wait out the kubelet's crash-loop backoff; a refusal
// (RBAC, a bad request) is returned at once, since asking again changes nothing.
package transient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
)

// StartBackoff is how the start's calls are retried: 6 attempts over 31 to 37 s before the
// manager gives up. The default liveness probe (config/manager: a 15 s delay, then three failed
// 20 s periods) would kill it at about 55 s, so the error it stops with is its own. No Cap: a
// wait.Backoff that reaches its cap stops stepping.
var StartBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 6}

// Is says whether err may go away by itself: an answer of the API server that it is busy or
// failing (429, 408, 5xx), or no answer at all (the connection failed or was cut). Anything
// else, a refusal or a kind the API server does not serve, is there to stay.
func Is(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code >= http.StatusInternalServerError || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// Retry calls fn until it succeeds, returns an error that Is not transient, backoff runs out,
// or ctx ends; it logs each failure it retries, and returns the last error, saying how many
// times it tried. what names the call in the log and the error ("listing the namespaces").
func Retry(ctx context.Context, backoff wait.Backoff, log logr.Logger, what string, fn func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || !Is(err) {
			return err
		}
		if backoff.Steps <= 1 || ctx.Err() != nil {
			return fmt.Errorf("%s failed %d times, giving up: %w", what, attempt, err)
		}
		delay := backoff.Step()
		log.Info("A call to the API server failed; retrying", "call", what, "error", err.Error(), "attempt", attempt, "after", delay.String())
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s failed %d times, stopped: %w", what, attempt, err)
		case <-time.After(delay):
		}
	}
}
