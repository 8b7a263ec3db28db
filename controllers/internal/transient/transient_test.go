package transient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

var groupResource = schema.GroupResource{Group: "argoproj.io", Resource: "rollouts"}

func TestIs(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"503", apierrors.NewServiceUnavailable("injected"), true},
		{"500", apierrors.NewInternalError(errors.New("boom")), true},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"504", apierrors.NewTimeoutError("slow", 1), true},
		{"408", apierrors.NewGenericServerResponse(408, "get", groupResource, "", "", 0, false), true},
		{"wrapped 503", fmt.Errorf("asking: %w", apierrors.NewServiceUnavailable("injected")), true},
		{"connection refused", &url.Error{Op: "Get", URL: "https://10.96.0.1/apis", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}, true},
		{"cut mid-answer", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), true},
		{"kind not served", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "argoproj.io", Kind: "Rollout"}}, false},
		{"an error of our own", errors.New("bad selector"), false},
		{"403", apierrors.NewForbidden(groupResource, "", errors.New("RBAC")), false},
		{"401", apierrors.NewUnauthorized("who are you"), false},
		{"400", apierrors.NewBadRequest("no"), false},
		{"404", apierrors.NewNotFound(groupResource, "x"), false},
	} {
		if got := Is(tc.err); got != tc.want {
			t.Errorf("%s: Is(%v) = %t, want %t", tc.name, tc.err, got, tc.want)
		}
	}
}

// fastBackoff retries at once, steps times in all.
func fastBackoff(steps int) wait.Backoff {
	return wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: steps}
}

func TestRetry(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("injected")
	t.Run("transient failures then success", func(t *testing.T) {
		calls := 0
		err := Retry(context.Background(), fastBackoff(5), logr.Discard(), "asking", func(context.Context) error {
			calls++
			if calls < 3 {
				return unavailable
			}
			return nil
		})
		if err != nil || calls != 3 {
			t.Errorf("Retry = %v after %d calls, want nil after 3", err, calls)
		}
	})
	t.Run("a refusal is returned at once", func(t *testing.T) {
		calls := 0
		forbidden := apierrors.NewForbidden(groupResource, "", errors.New("RBAC"))
		err := Retry(context.Background(), fastBackoff(5), logr.Discard(), "asking", func(context.Context) error {
			calls++
			return forbidden
		})
		if !errors.Is(err, forbidden) || calls != 1 {
			t.Errorf("Retry = %v after %d calls, want the Forbidden error after 1", err, calls)
		}
	})
	t.Run("gives up when the backoff runs out", func(t *testing.T) {
		calls := 0
		err := Retry(context.Background(), fastBackoff(4), logr.Discard(), "asking", func(context.Context) error {
			calls++
			return unavailable
		})
		if !apierrors.IsServiceUnavailable(err) || calls != 4 || !strings.Contains(err.Error(), "asking failed 4 times, giving up") {
			t.Errorf("Retry = %v after %d calls, want the 503 after 4, saying so", err, calls)
		}
	})
	t.Run("stops when the context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		slow := wait.Backoff{Duration: time.Hour, Factor: 1, Steps: 5}
		done := make(chan error)
		go func() {
			done <- Retry(ctx, slow, logr.Discard(), "asking", func(context.Context) error {
				calls++
				return unavailable
			})
		}()
		cancel()
		select {
		case err := <-done:
			if !apierrors.IsServiceUnavailable(err) || calls != 1 {
				t.Errorf("Retry = %v after %d calls, want the 503 after 1", err, calls)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Retry went on after its context ended")
		}
	})
}

// TestStartBackoff: the start's retries end before the default liveness probe would kill the
// manager (about 55 s), and last long enough to ride out an API server's restart.
func TestStartBackoff(t *testing.T) {
	b := StartBackoff
	var least, most time.Duration
	for b.Steps > 1 {
		d := b.Duration
		least += d
		most += time.Duration(float64(d) * (1 + b.Jitter))
		b.Step()
	}
	if least < 30*time.Second || most > 50*time.Second {
		t.Errorf("StartBackoff waits %s to %s in all, want within 30 s to 50 s", least, most)
	}
}
