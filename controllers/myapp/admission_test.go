package myapp_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/example/switchboard/apis/v1alpha1"
)

// TestFinalizerPolicySetsTheFinalizer checks the myapp component's admission policy
// (config/components/myapp/finalizer_policy.yaml) with the controller: the API server sets the
// finalizer as the MyApp is created, and the controller then converges the MyApp without
// writing the MyApp itself, only its Deployment, its Service and its status. Without the
// policy (the other tests) the controller adds the finalizer itself.
func TestFinalizerPolicySetsTheFinalizer(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "myapp-")
	env.BindFinalizerPolicy(t, ns)

	app := newMyApp(ns, "admitted")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(app.Finalizers, v1alpha1.MyAppFinalizer) {
		t.Fatalf("finalizers of the created MyApp = %v, want %s set at admission", app.Finalizers, v1alpha1.MyAppFinalizer)
	}

	before := env.SettledAPIWrites(t, timeout)
	env.StartManager(t, "--controllers=myapp", "--watch-namespaces="+ns)
	waitConverged(t, app)
	after := env.SettledAPIWrites(t, timeout)
	written := map[string]float64{}
	for _, r := range []string{"myapps", "myapps/status", "deployments", "services"} {
		written[r] = after[r] - before[r]
	}
	want := map[string]float64{"myapps": 0, "myapps/status": 1, "deployments": 1, "services": 1}
	if diff := cmp.Diff(want, written); diff != "" {
		t.Errorf("writes until the MyApp converged (-want +got):\n%s", diff)
	}
}
