package configmapwatcher_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// TestWarningsSaidOncePerProblem: a workload whose source is missing, or whose annotation cannot
// be read, gets its warning Event once, not again at every periodic resync (here every second);
// a new problem is said, and so is an old one that comes back after it was fixed.
func TestWarningsSaidOncePerProblem(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher", "--resync-interval=1s")
	forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
		ctx := context.Background()
		missing := k.workload(ns, "missing", "true", envFrom("absent"))
		unreadable := k.workload(ns, "unreadable", "secret/", envFrom("absent"))
		create(t, missing, unreadable)
		k.waitEvent(t, ns, "missing", v1alpha1.ReasonConfigMapMissing, "ConfigMap absent not found")
		k.waitEvent(t, ns, "unreadable", v1alpha1.ReasonInvalidReloadAnnotation, `"secret/"`)
		said := func(name, reason string) int {
			t.Helper()
			warnings, err := testenv.Warnings(ctx, env.Client, ns)
			if err != nil {
				t.Fatal(err)
			}
			return warnings[k.name+"/"+name+" "+reason]
		}
		// expect waits until each problem has been said as often as wanted, then checks that
		// three resyncs later it has not been said again.
		expect := func(when string, missingTimes, unreadableTimes int) {
			t.Helper()
			check := func() error {
				if got := said("missing", v1alpha1.ReasonConfigMapMissing); got != missingTimes {
					return fmt.Errorf("%s: the missing ConfigMap was said %d times, want %d", when, got, missingTimes)
				}
				if got := said("unreadable", v1alpha1.ReasonInvalidReloadAnnotation); got != unreadableTimes {
					return fmt.Errorf("%s: the unreadable annotation was said %d times, want %d", when, got, unreadableTimes)
				}
				return nil
			}
			testenv.Eventually(t, timeout, check)
			time.Sleep(3 * time.Second)
			if err := check(); err != nil {
				t.Error(err)
			}
		}
		expect("after three resyncs", 1, 1)

		annotate := func(obj client.Object, value string) {
			t.Helper()
			patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"`+v1alpha1.ReloadAnnotation+`":"`+value+`"}}}`))
			if err := env.Client.Patch(ctx, obj, patch); err != nil {
				t.Fatal(err)
			}
		}
		// A new problem: the workload now names another ConfigMap, missing too.
		annotate(missing, "gone")
		k.waitEvent(t, ns, "missing", v1alpha1.ReasonConfigMapMissing, "ConfigMap gone not found")
		// The annotation fixed, then broken again the same way.
		annotate(unreadable, "settings")
		k.waitRecorded(t, ns, "unreadable")
		annotate(unreadable, "secret/")
		expect("after a new problem and an old one back", 2, 2)
	})
}

// TestRecordWriteReconcilesNothingAgain: writing a workload's record is the end of its
// reconcile. A Deployment's generation moves with its annotations (the API server copies them to
// its ReplicaSets), so a predicate that let generation changes through reconciled every recorded
// Deployment a second time, reading its sources from the API server again for nothing.
func TestRecordWriteReconcilesNothingAgain(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher", "--resync-interval=0")
	forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
		create(t, configMap(ns, "settings", map[string]string{"k": "v1"}))
		k.settle(t, k.reconcileTotal(t), 0)
		since := k.reconcileTotal(t)
		create(t, k.workload(ns, "web", "true", envFrom("settings")))
		k.waitRecorded(t, ns, "web")
		k.settle(t, since, 1)
		time.Sleep(time.Second)
		if got := k.reconcileTotal(t) - since; got != 1 {
			t.Errorf("%v reconciles of a %s created and recorded, want 1", got, k.name)
		}
		// A roll is a change of the Pod template: reconciled once more, as the workload changed.
		since, before := k.reconcileTotal(t), k.states(t, ns)
		updateConfigMap(t, ns, "settings", map[string]string{"k": "v2"})
		k.waitRolled(t, ns, before, "web")
		k.settle(t, since, 1)
		time.Sleep(time.Second)
		if got := k.reconcileTotal(t) - since; got > 2 {
			t.Errorf("%v reconciles of a %s rolled once, want at most 2 (the change, the roll's own template change)", got, k.name)
		}
	})
}
