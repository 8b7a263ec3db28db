package configmapwatcher_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/example/switchboard/internal/testenv"
)

// The HTTP trigger feeds every controller; these tests run it through a real manager, with its
// flags, its self-signed certificate and the registry, as main.go wires it.

// TestTriggerBypassesForPredicates POSTs two Deployments the configmapwatcher's For predicate
// would drop: one without the reload annotation, and one with it, because the trigger's event
// carries only a namespace and a name, and the predicate would find no annotation on it.
// controller-runtime applies no predicate to a channel source, so both are reconciled; the
// Reconciler checks the opt-in itself, so neither is written.
func TestTriggerBypassesForPredicates(t *testing.T) {
	post := env.StartManagerWithTrigger(t, "configmapwatcher")
	ns := env.Namespace(t, "cmw-")
	create(t, configMap(ns, "settings", map[string]string{"k": "v1"}),
		deployment(ns, "opted-in", "true", envFrom("settings")), deployment(ns, "plain", "", envFrom("settings")))
	waitHashed(t, ns, nil, "opted-in")
	settle(t, reconcileTotal(t), 0)
	versions := resourceVersions(t, ns)
	writes := deploymentWrites(t)
	since := reconcileTotal(t)

	if code := post("configmapwatcher", testenv.TriggerToken, "["+testenv.TriggerTarget(ns, "plain")+","+testenv.TriggerTarget(ns, "opted-in")+"]"); code != http.StatusAccepted {
		t.Fatalf("POST answered %d, want 202", code)
	}
	settle(t, since, 2)
	if got := reconcileTotal(t) - since; got != 2 {
		t.Errorf("%v reconciles after the POST, want 2", got)
	}
	if got := deploymentWrites(t) - writes; got != 0 {
		t.Errorf("%v writes to Deployments after the POST, want 0", got)
	}
	if diff := cmp.Diff(versions, resourceVersions(t, ns)); diff != "" {
		t.Errorf("Deployment resourceVersions (-before +after):\n%s", diff)
	}
}
