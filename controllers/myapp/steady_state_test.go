package myapp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// TestSteadyStateWritesNothing converges a few MyApps, then lets the periodic source resync
// every MyApp several times, and counts the API server's writes meanwhile: there must be none,
// while the controller did reconcile.
func TestSteadyStateWritesNothing(t *testing.T) {
	env.StartManager(t, "--controllers=myapp", "--resync-interval=500ms")
	ctx := context.Background()
	ns := env.Namespace(t, "myapp-")
	apps := []*v1alpha1.MyApp{newMyApp(ns, "steady-a"), newMyApp(ns, "steady-b"), newMyApp(ns, "steady-c")}
	apps[1].Spec.EnvFrom = []v1alpha1.ConfigMapEnvSource{{ConfigMapName: "settings", Optional: true}}
	for _, app := range apps {
		if err := env.Client.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
	}
	// Bring each to Running (the Deployment controller's part is played by hand), so that
	// the status has settled too.
	for _, app := range apps {
		d := waitConverged(t, app)
		markDeploymentReady(t, d)
		testenv.Eventually(t, timeout, func() error {
			if err := get(t, app); err != nil {
				return err
			}
			if app.Status.Phase != v1alpha1.MyAppRunning {
				return fmt.Errorf("%s phase %q, want Running", app.Name, app.Status.Phase)
			}
			return nil
		})
	}

	before := env.SettledAPIWrites(t, timeout)
	reconcilesBefore, err := testenv.ReconcileTotal("myapp")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	after, err := env.APIWrites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reconcilesAfter, err := testenv.ReconcileTotal("myapp")
	if err != nil {
		t.Fatal(err)
	}

	if got := reconcilesAfter - reconcilesBefore; got < float64(2*len(apps)) {
		t.Fatalf("only %v reconciles in the steady window; the periodic resync did not run, so the test proves nothing", got)
	}
	// Only the resources the controller may write: the API server writes leases of its own.
	controllerWrites := func(all map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for _, r := range []string{"myapps", "myapps/status", "deployments", "services", "events"} {
			out[r] = all[r]
		}
		return out
	}
	if diff := cmp.Diff(controllerWrites(before), controllerWrites(after)); diff != "" {
		t.Errorf("the API server served writes in a steady state (-before +after):\n%s", diff)
	}
}

func markDeploymentReady(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: *d.Spec.Replicas, UpdatedReplicas: *d.Spec.Replicas,
		ReadyReplicas: *d.Spec.Replicas, AvailableReplicas: *d.Spec.Replicas,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		},
	}
	if err := env.Client.Status().Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// TestStatusOnlyUpdateDoesNotReconcile checks the For predicate: a write to a MyApp's status
// alone (as the controller's own status writes are) does not trigger a reconcile, while a spec
// change does.
func TestStatusOnlyUpdateDoesNotReconcile(t *testing.T) {
	env.StartManager(t, "--controllers=myapp", "--resync-interval=0")
	ctx := context.Background()
	app := newMyApp(env.Namespace(t, "myapp-"), "quiet")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, app)
	time.Sleep(time.Second) // let the events of convergence drain
	before, err := testenv.ReconcileTotal("myapp")
	if err != nil {
		t.Fatal(err)
	}

	app.Status.Phase = v1alpha1.MyAppFailed
	if err := env.Client.Status().Update(ctx, app); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if after, _ := testenv.ReconcileTotal("myapp"); after != before {
		t.Errorf("a status-only update caused %v reconciles", after-before)
	}

	app.Spec.Replicas = 2
	if err := env.Client.Update(ctx, app); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		if after, _ := testenv.ReconcileTotal("myapp"); after == before {
			return fmt.Errorf("a spec change caused no reconcile")
		}
		return nil
	})
}
