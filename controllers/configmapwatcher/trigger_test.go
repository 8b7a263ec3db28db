package configmapwatcher_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/example/switchboard/controllers/configmapwatcher"
	"github.com/example/switchboard/internal/testenv"
)

// The HTTP trigger feeds every controller; these tests run it through a real manager, with its
// flags, its self-signed certificate and the registry, as main.go wires it.

// TestTriggerBypassesForPredicates POSTs two Deployments the configmapwatcher's For predicate
// would drop: one without an opt-in annotation, and one with it, because the trigger's event
// carries only a namespace and a name, and the predicate would find no annotation on it.
// controller-runtime applies no predicate to a channel source, so both are reconciled; the
// Reconciler checks the opt-in itself, so neither is written.
func TestTriggerBypassesForPredicates(t *testing.T) {
	post := env.StartManagerWithTrigger(t, "configmapwatcher")
	deployments := kinds[0]
	controller := configmapwatcher.Deployments.ControllerName
	ns := env.Namespace(t, "cmw-")
	create(t, configMap(ns, "settings", map[string]string{"k": "v1"}),
		deployments.workload(ns, "opted-in", "true", envFrom("settings")), deployments.workload(ns, "plain", "", envFrom("settings")))
	deployments.waitRecorded(t, ns, "opted-in")
	settle(t, reconcileTotal(t), 0)
	before := deployments.states(t, ns)
	writes := deployments.writes(t)
	since := reconcileTotal(t)

	if code := post(controller, testenv.TriggerToken, "["+testenv.TriggerTarget(ns, "plain")+","+testenv.TriggerTarget(ns, "opted-in")+"]"); code != http.StatusAccepted {
		t.Fatalf("POST answered %d, want 202", code)
	}
	settle(t, since, 2)
	if got := reconcileTotal(t) - since; got != 2 {
		t.Errorf("%v reconciles after the POST, want 2", got)
	}
	if got := deployments.writes(t) - writes; got != 0 {
		t.Errorf("%v writes to Deployments after the POST, want 0", got)
	}
	if diff := cmp.Diff(before, deployments.states(t, ns)); diff != "" {
		t.Errorf("Deployment states (-before +after):\n%s", diff)
	}
}
