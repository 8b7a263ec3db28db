package myapp_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/myapp"
	"github.com/example/switchboard/internal/testenv"
)

// TestTriggerReconcilesTheNamedObject uses the one state no watch event brings back: myapp
// ignores status-only updates of a MyApp (its For predicate filters them), so a hand-edited
// status stays until something else reconciles that MyApp. A POST naming one of two tampered
// MyApps repairs that one and only that one.
func TestTriggerReconcilesTheNamedObject(t *testing.T) {
	post := env.StartManagerWithTrigger(t, myapp.ControllerName)
	ctx := context.Background()
	ns := env.Namespace(t, "myapp-")
	apps := map[string]*v1alpha1.MyApp{}
	for _, name := range []string{"named", "other"} {
		apps[name] = &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}
		if err := env.Client.Create(ctx, apps[name]); err != nil {
			t.Fatal(err)
		}
	}
	for _, app := range apps {
		waitPhase(t, app, v1alpha1.MyAppPending)
	}
	testenv.WaitQuiet(t, testenv.InProcess, settled(reconciles(t), 0))

	for _, app := range apps {
		app.Status.Phase, app.Status.ReadyReplicas = v1alpha1.MyAppRunning, 1
		if err := env.Client.Status().Update(ctx, app); err != nil {
			t.Fatal(err)
		}
	}
	since := reconciles(t)
	time.Sleep(time.Second)
	if got := reconciles(t); got != since {
		t.Fatalf("a status-only update was reconciled (%v reconciles): the test needs it filtered", got-since)
	}

	if code := post(myapp.ControllerName, "wrong-token", testenv.TriggerTarget(ns, "named")); code != http.StatusUnauthorized {
		t.Errorf("POST with a wrong token answered %d, want 401", code)
	}
	if code := post(myapp.ControllerName, testenv.TriggerToken, testenv.TriggerTarget(ns, "named")); code != http.StatusAccepted {
		t.Fatalf("POST answered %d, want 202", code)
	}
	waitPhase(t, apps["named"], v1alpha1.MyAppPending)
	testenv.WaitQuiet(t, testenv.InProcess, settled(since, 1))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(apps["other"]), apps["other"]); err != nil {
		t.Fatal(err)
	}
	if got := apps["other"].Status.Phase; got != v1alpha1.MyAppRunning {
		t.Errorf("the MyApp the POST did not name was reconciled: phase %q, want the tampered Running", got)
	}
}

func waitPhase(t *testing.T, app *v1alpha1.MyApp, phase v1alpha1.MyAppPhase) {
	t.Helper()
	testenv.Eventually(t, timeout, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(app), app); err != nil {
			return err
		}
		if app.Status.Phase != phase || app.Status.ObservedGeneration != app.Generation {
			return fmt.Errorf("phase %q observedGeneration %d, want %q and %d", app.Status.Phase, app.Status.ObservedGeneration, phase, app.Generation)
		}
		return nil
	})
}

// reconciles returns how many reconciles myapp has finished in this process.
func reconciles(t *testing.T) float64 {
	t.Helper()
	n, err := testenv.ReconcileTotal(myapp.ControllerName)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// settled is when myapp has handled every event that came before: at least atLeast reconciles
// since its count was since, then nothing queued, no worker busy and the count unchanged over
// five polls in a row.
func settled(since float64, atLeast int) testenv.Quiet {
	return testenv.Quiet{Controllers: []string{myapp.ControllerName}, Since: since, AtLeast: atLeast, Idle: true,
		For: 200 * time.Millisecond, Interval: 50 * time.Millisecond, Timeout: timeout}
}
