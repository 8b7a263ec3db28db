package myapp

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
)

func deploymentWith(generation, observed int64, ready, updated int32, conditions ...appsv1.DeploymentCondition) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	d.Generation = generation
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: observed, ReadyReplicas: ready, UpdatedReplicas: updated, Conditions: conditions}
	return d
}

var (
	available   = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}
	unavailable = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"}
	progressing = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}
	stuck       = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "timed out"}
)

func TestComputeStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		seen observation
		// mirrored: the status holds the mirrored conditions from an earlier Deployment.
		mirrored   bool
		deleting   bool
		wantPhase  v1alpha1.MyAppPhase
		wantReady  metav1.ConditionStatus
		wantReason string
		// wantAvailable is the mirrored Available condition's status, "" for none.
		wantAvailable metav1.ConditionStatus
		wantReplicas  int32
		wantObserved  int64
	}{
		{name: "no Deployment yet: nothing mirrored", seen: observation{applied: true},
			wantPhase: v1alpha1.MyAppPending, wantReady: metav1.ConditionFalse, wantReason: v1alpha1.ReasonDeploymentPending,
			wantObserved: 4},
		{name: "Deployment not reporting yet: nothing mirrored", seen: observation{applied: true, deployment: deploymentWith(1, 0, 0, 0)},
			wantPhase: v1alpha1.MyAppPending, wantReady: metav1.ConditionFalse, wantReason: v1alpha1.ReasonRolloutPending,
			wantObserved: 4},
		{name: "mirrored before, Deployment created anew", mirrored: true, seen: observation{applied: true, deployment: deploymentWith(1, 0, 0, 0)},
			wantPhase: v1alpha1.MyAppPending, wantReady: metav1.ConditionFalse, wantReason: v1alpha1.ReasonRolloutPending,
			wantAvailable: metav1.ConditionUnknown, wantObserved: 4},
		{name: "rollout not observed", seen: observation{applied: true, deployment: deploymentWith(2, 1, 3, 3, available, progressing)},
			wantPhase: v1alpha1.MyAppPending, wantReady: metav1.ConditionFalse, wantReason: v1alpha1.ReasonRolloutPending,
			wantAvailable: metav1.ConditionTrue, wantReplicas: 3, wantObserved: 4},
		{name: "replicas not ready", seen: observation{applied: true, deployment: deploymentWith(2, 2, 1, 3, unavailable, progressing)},
			wantPhase: v1alpha1.MyAppPending, wantReady: metav1.ConditionFalse, wantReason: v1alpha1.ReasonReplicasNotReady,
			wantAvailable: metav1.ConditionFalse, wantReplicas: 1, wantObserved: 4},
		{name: "old replicas ready, new ones not updated", seen: observation{applied: true, deployment: deploymentWith(2, 2, 3, 1, available, progressing)},
			wantPhase: v1alpha1.MyAppPending, wantReady: metav1.ConditionFalse, wantReason: v1alpha1.ReasonReplicasNotReady,
			wantAvailable: metav1.ConditionTrue, wantReplicas: 3, wantObserved: 4},
		{name: "ready", seen: observation{applied: true, deployment: deploymentWith(2, 2, 3, 3, available, progressing)},
			wantPhase: v1alpha1.MyAppRunning, wantReady: metav1.ConditionTrue, wantReason: v1alpha1.ReasonAllReplicasReady,
			wantAvailable: metav1.ConditionTrue, wantReplicas: 3, wantObserved: 4},
		{name: "all ready but not available", seen: observation{applied: true, deployment: deploymentWith(2, 2, 3, 3, unavailable, progressing)},
			wantPhase: v1alpha1.MyAppPending, wantReady: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNotAvailable,
			wantAvailable: metav1.ConditionFalse, wantReplicas: 3, wantObserved: 4},
		{name: "progress deadline exceeded", seen: observation{applied: true, deployment: deploymentWith(2, 2, 1, 3, unavailable, stuck)},
			wantPhase: v1alpha1.MyAppFailed, wantReady: metav1.ConditionFalse, wantReason: v1alpha1.ReasonProgressDeadlineExceeded,
			wantAvailable: metav1.ConditionFalse, wantReplicas: 1, wantObserved: 4},
		{name: "name conflict keeps the old observedGeneration", seen: observation{blocked: &blocker{Reason: v1alpha1.ReasonServiceConflict, Message: "taken"}},
			wantPhase: v1alpha1.MyAppFailed, wantReady: metav1.ConditionFalse, wantReason: v1alpha1.ReasonServiceConflict,
			wantObserved: 3},
		{name: "failed write keeps the old observedGeneration", seen: observation{deployment: deploymentWith(2, 2, 3, 3, available, progressing)},
			wantPhase: v1alpha1.MyAppRunning, wantReady: metav1.ConditionTrue, wantReason: v1alpha1.ReasonAllReplicasReady,
			wantAvailable: metav1.ConditionTrue, wantReplicas: 3, wantObserved: 3},
		{name: "deleting", deleting: true, seen: observation{applied: true, deployment: deploymentWith(2, 2, 3, 3, available, progressing)},
			wantPhase: v1alpha1.MyAppTerminating, wantReady: metav1.ConditionTrue, wantReason: v1alpha1.ReasonAllReplicasReady,
			wantAvailable: metav1.ConditionTrue, wantReplicas: 3, wantObserved: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &v1alpha1.MyApp{Spec: v1alpha1.MyAppSpec{Replicas: 3}}
			app.Generation = 4
			app.Status.ObservedGeneration = 3
			if tc.deleting {
				app.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}
			if tc.mirrored {
				app.Status = computeStatus(app, observation{applied: true, deployment: deploymentWith(4, 4, 3, 3, available, progressing)})
			}
			got := computeStatus(app, tc.seen)
			if got.Phase != tc.wantPhase || got.ReadyReplicas != tc.wantReplicas || got.ObservedGeneration != tc.wantObserved {
				t.Errorf("phase %q readyReplicas %d observedGeneration %d, want %q %d %d",
					got.Phase, got.ReadyReplicas, got.ObservedGeneration, tc.wantPhase, tc.wantReplicas, tc.wantObserved)
			}
			ready := condition(got, v1alpha1.ConditionReady)
			if ready.Status != tc.wantReady || ready.Reason != tc.wantReason || ready.ObservedGeneration != 4 {
				t.Errorf("Ready = %s %s (generation %d), want %s %s (generation 4)", ready.Status, ready.Reason, ready.ObservedGeneration, tc.wantReady, tc.wantReason)
			}
			if got := condition(got, v1alpha1.ConditionAvailable).Status; got != tc.wantAvailable {
				t.Errorf("Available = %q, want %q", got, tc.wantAvailable)
			}
			if available, progressing := condition(got, v1alpha1.ConditionAvailable), condition(got, v1alpha1.ConditionProgressing); (available.Type == "") != (progressing.Type == "") {
				t.Errorf("Available %+v and Progressing %+v: the Deployment reports both or neither here", available, progressing)
			}
		})
	}
}

// TestComputeStatusIsStable checks what makes a steady state write nothing: recomputing the
// status of an unchanged world gives an equal status, transition times included, and a
// change of reason alone keeps the transition time.
func TestComputeStatusIsStable(t *testing.T) {
	app := &v1alpha1.MyApp{Spec: v1alpha1.MyAppSpec{Replicas: 3}}
	app.Generation = 1
	seen := observation{applied: true, deployment: deploymentWith(1, 1, 1, 3, unavailable, progressing)}
	first := computeStatus(app, seen)
	app.Status = first
	time.Sleep(1100 * time.Millisecond) // condition times have a resolution of one second
	if diff := cmp.Diff(first, computeStatus(app, seen)); diff != "" {
		t.Errorf("recomputed status differs (-first +second):\n%s", diff)
	}

	seen.blocked = &blocker{Reason: v1alpha1.ReasonDeploymentConflict, Message: "taken"}
	second := computeStatus(app, seen)
	before, after := condition(first, v1alpha1.ConditionReady), condition(second, v1alpha1.ConditionReady)
	if after.Reason != v1alpha1.ReasonDeploymentConflict || !after.LastTransitionTime.Equal(&before.LastTransitionTime) {
		t.Errorf("Ready went from %+v to %+v: a new reason with the same status must keep the transition time", before, after)
	}
	if diff := cmp.Diff(first.Conditions, second.Conditions, cmpopts.IgnoreFields(metav1.Condition{}, "Reason", "Message")); diff != "" {
		t.Errorf("only reason and message may change (-first +second):\n%s", diff)
	}
}

func condition(s v1alpha1.MyAppStatus, t string) metav1.Condition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return metav1.Condition{}
}

// TestSpecChanged: the Deployment and the Service may have to shrink only when the spec changed
// since the controller last carried it out; a MyApp that never changed has nothing to shrink,
// even when no reconcile recorded it yet (a leader killed between its creates and its status).
func TestSpecChanged(t *testing.T) {
	for _, tc := range []struct {
		generation, observed int64
		want                 bool
	}{
		{generation: 1, observed: 0, want: false},
		{generation: 1, observed: 1, want: false},
		{generation: 2, observed: 1, want: true},
		{generation: 2, observed: 0, want: true},
		{generation: 3, observed: 3, want: false},
	} {
		app := &v1alpha1.MyApp{}
		app.Generation, app.Status.ObservedGeneration = tc.generation, tc.observed
		if got := specChanged(app); got != tc.want {
			t.Errorf("generation %d, observed %d: specChanged = %v, want %v", tc.generation, tc.observed, got, tc.want)
		}
	}
}
