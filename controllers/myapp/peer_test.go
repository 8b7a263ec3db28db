package myapp_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
	"github.com/example/switchboard/internal/testenv/seedpeer"
)

// startPeerManager starts, in this process, a manager on ns that runs the seed-style peer
// (seedpeer) with the given number of workers.
func startPeerManager(tb testing.TB, ns string, workers int) (ctrl.Manager, func()) {
	mgr, err := seedpeer.NewManager(env.Config, ns, workers, "0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				tb.Errorf("peer manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			tb.Error("the peer manager did not stop within 30s")
		}
	}
	return mgr, stop
}

// TestSeedReconcilerConverges: the peer of the benchmark does what it must, so that beating it
// means something: a MyApp gets its finalizer, Deployment, Service and observed generation.
func TestSeedReconcilerConverges(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "myapp-")
	_, stop := startPeerManager(t, ns, 1)
	defer stop()
	app := newMyApp(ns, "peer")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		got := &v1alpha1.MyApp{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
			return err
		}
		if got.Status.ObservedGeneration != got.Generation || !controllerutil.ContainsFinalizer(got, v1alpha1.MyAppFinalizer) {
			return fmt.Errorf("not converged: %+v", got.Status)
		}
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), obj); err != nil {
				return err
			}
			if !metav1.IsControlledBy(obj, got) {
				return fmt.Errorf("%T not controlled by the MyApp", obj)
			}
		}
		return nil
	})
}
