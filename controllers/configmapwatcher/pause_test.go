package configmapwatcher_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

func getDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPausePeriod: a roll of a Deployment with Reloader's pause-period pauses it (paused-at
// says when), a second change during the period updates the Pod template without resuming
// it, and the period's end resumes it: one rollout for both changes. A Deployment that Reloader
// paused before the switch is resumed when its period is over. An unreadable period, or one on
// another kind, is a Warning Event, and the workload rolls without a pause.
func TestPausePeriod(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher")
	ns := env.Namespace(t, "cmw-pause-")
	k := kinds[0]
	paused := k.workload(ns, "paused", "", envFrom("app"))
	paused.SetAnnotations(map[string]string{v1alpha1.ReloadAnnotation: "true", v1alpha1.ReloaderPausePeriodAnnotation: "4s"})
	invalid := k.workload(ns, "invalid", "", envFrom("app"))
	invalid.SetAnnotations(map[string]string{v1alpha1.ReloadAnnotation: "true", v1alpha1.ReloaderPausePeriodAnnotation: "soon"})
	statefulSet := kinds[1].workload(ns, "stateful", "", envFrom("app"))
	statefulSet.SetAnnotations(map[string]string{v1alpha1.ReloadAnnotation: "true", v1alpha1.ReloaderPausePeriodAnnotation: "4s"})
	byReloader := k.workload(ns, "by-reloader", "", envFrom("app")).(*appsv1.Deployment)
	byReloader.SetAnnotations(map[string]string{v1alpha1.ReloaderAutoAnnotation: "true", v1alpha1.ReloaderPausePeriodAnnotation: "5m",
		v1alpha1.ReloaderPausedAtAnnotation: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
	byReloader.Spec.Paused = true
	create(t, configMap(ns, "app", map[string]string{"k": "v1"}), paused, invalid, statefulSet, byReloader)

	// Reloader's pause, long over, ends at the first reconcile.
	testenv.Eventually(t, timeout, func() error {
		d := getDeployment(t, ns, "by-reloader")
		if d.Spec.Paused || d.Annotations[v1alpha1.ReloaderPausedAtAnnotation] != "" {
			return fmt.Errorf("Deployment paused by Reloader not resumed yet")
		}
		return nil
	})
	k.waitEvent(t, ns, "by-reloader", v1alpha1.ReasonResumed, "Resumed Deployment by-reloader")

	before := k.waitRecorded(t, ns, "paused", "invalid")
	kinds[1].waitRecorded(t, ns, "stateful")
	updateConfigMap(t, ns, "app", map[string]string{"k": "v2"})
	first := k.waitRolled(t, ns, before, "paused", "invalid")
	pausedAt := ""
	testenv.Eventually(t, timeout, func() error {
		d := getDeployment(t, ns, "paused")
		if pausedAt = d.Annotations[v1alpha1.ReloaderPausedAtAnnotation]; !d.Spec.Paused || pausedAt == "" {
			return fmt.Errorf("Deployment not paused for its period: paused %v, paused-at %q", d.Spec.Paused, pausedAt)
		}
		return nil
	})
	k.waitEvent(t, ns, "paused", v1alpha1.ReasonPaused, "Paused Deployment paused for its pause period of 4s")
	if d := getDeployment(t, ns, "invalid"); d.Spec.Paused {
		t.Error("a Deployment with an unreadable pause period was paused")
	}
	k.waitEvent(t, ns, "invalid", v1alpha1.ReasonInvalidReloadAnnotation, "rolled without a pause", `"soon"`)
	kinds[1].waitEvent(t, ns, "stateful", v1alpha1.ReasonInvalidReloadAnnotation, "applies to Deployments only")

	updateConfigMap(t, ns, "app", map[string]string{"k": "v3"})
	k.waitRolled(t, ns, first, "paused")
	if d := getDeployment(t, ns, "paused"); !d.Spec.Paused || d.Annotations[v1alpha1.ReloaderPausedAtAnnotation] != pausedAt {
		t.Errorf("a change during the pause period moved the pause: paused %v, paused-at %q (was %q)", d.Spec.Paused, d.Annotations[v1alpha1.ReloaderPausedAtAnnotation], pausedAt)
	}
	start := time.Now()
	testenv.Eventually(t, 15*time.Second, func() error {
		d := getDeployment(t, ns, "paused")
		if d.Spec.Paused || d.Annotations[v1alpha1.ReloaderPausedAtAnnotation] != "" {
			return fmt.Errorf("Deployment not resumed yet")
		}
		return nil
	})
	at, err := time.Parse(time.RFC3339, pausedAt)
	if err != nil {
		t.Fatal(err)
	}
	if resumed := time.Now(); resumed.Before(at.Add(4 * time.Second)) {
		t.Errorf("resumed %s after the pause, before its period of 4s", resumed.Sub(at))
	}
	t.Logf("resumed %s after the second change", time.Since(start))
	k.waitEvent(t, ns, "paused", v1alpha1.ReasonResumed, "Resumed Deployment paused")
}
