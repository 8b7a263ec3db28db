package myapp

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
)

// blocker is why the spec cannot be carried out as it stands. It ends in Ready=False and phase
// Failed until the cause goes away.
type blocker struct {
	Reason  string
	Message string
}

// observation is what one reconcile saw of the world, the input of computeStatus.
type observation struct {
	// deployment is the owned Deployment as last seen; nil when it is not there yet.
	deployment *appsv1.Deployment
	// blocked is set when the spec cannot be carried out.
	blocked *blocker
	// applied is true when every write of the pass succeeded, so the spec of this generation
	// has been carried out.
	applied bool
}

// computeStatus is the one place a MyApp's status is computed: from the previous status and what
// the reconcile observed. It keeps each condition's lastTransitionTime unless its status
// changes, so that recomputing an unchanged world gives an equal status.
func computeStatus(app *v1alpha1.MyApp, seen observation) v1alpha1.MyAppStatus {
	status := *app.Status.DeepCopy()
	gen := app.Generation
	d := seen.deployment

	if d != nil {
		status.ReadyReplicas = d.Status.ReadyReplicas
	} else {
		status.ReadyReplicas = 0
	}
	mirror(&status, d, appsv1.DeploymentAvailable, v1alpha1.ConditionAvailable, gen)
	mirror(&status, d, appsv1.DeploymentProgressing, v1alpha1.ConditionProgressing, gen)
	ready := readyCondition(app, seen)
	meta.SetStatusCondition(&status.Conditions, ready)

	status.Phase = phase(app, ready)
	if seen.applied && seen.blocked == nil {
		status.ObservedGeneration = gen
	}
	return status
}

// mirror copies the Deployment's condition of type from into status as the condition of type
// to. The copy appears once the Deployment first reports its condition, not as an Unknown
// placeholder before (the API conventions read an absent condition as Unknown, and the Ready
// condition already says what is pending): the first status of every new MyApp is written
// before the Deployment controller has seen the Deployment, and placeholders made that write
// costlier for every MyApp of a burst (README, Performance, has the figure). Once there, the copy
// stays, Unknown while the Deployment does not report the condition (a Deployment deleted and
// created anew), so that a condition never disappears.
func mirror(status *v1alpha1.MyAppStatus, d *appsv1.Deployment, from appsv1.DeploymentConditionType, to string, gen int64) {
	c := metav1.Condition{Type: to, Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonNotReportedByDeployment, ObservedGeneration: gen,
		Message: fmt.Sprintf("the Deployment does not report %s", from)}
	reported := false
	if d != nil {
		for _, dc := range d.Status.Conditions {
			if dc.Type != from {
				continue
			}
			reported = true
			c.Status = metav1.ConditionStatus(dc.Status)
			if dc.Reason != "" {
				c.Reason = dc.Reason
			}
			c.Message = dc.Message
		}
	}
	if reported || meta.FindStatusCondition(status.Conditions, to) != nil {
		meta.SetStatusCondition(&status.Conditions, c)
	}
}

// readyCondition says whether the MyApp serves as asked, and if not, the first reason why.
func readyCondition(app *v1alpha1.MyApp, seen observation) metav1.Condition {
	notReady := func(reason, format string, args ...any) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: reason, Message: fmt.Sprintf(format, args...), ObservedGeneration: app.Generation}
	}
	d := seen.deployment
	switch {
	case seen.blocked != nil:
		return notReady(seen.blocked.Reason, "%s", seen.blocked.Message)
	case d == nil:
		return notReady(v1alpha1.ReasonDeploymentPending, "the Deployment has not been observed yet")
	case d.Status.ObservedGeneration < d.Generation:
		return notReady(v1alpha1.ReasonRolloutPending, "the Deployment controller has not observed generation %d yet", d.Generation)
	case deploymentCondition(d, appsv1.DeploymentProgressing).Reason == v1alpha1.ReasonProgressDeadlineExceeded:
		return notReady(v1alpha1.ReasonProgressDeadlineExceeded, "the rollout made no progress within its deadline: %s",
			deploymentCondition(d, appsv1.DeploymentProgressing).Message)
	case d.Status.ReadyReplicas < app.Spec.Replicas || d.Status.UpdatedReplicas < app.Spec.Replicas:
		return notReady(v1alpha1.ReasonReplicasNotReady, "%d of %d replicas ready, %d updated",
			d.Status.ReadyReplicas, app.Spec.Replicas, d.Status.UpdatedReplicas)
	case deploymentCondition(d, appsv1.DeploymentAvailable).Status != corev1.ConditionTrue:
		return notReady(v1alpha1.ReasonNotAvailable, "the Deployment is not available")
	}
	return metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAllReplicasReady,
		Message: fmt.Sprintf("%d of %d replicas ready", d.Status.ReadyReplicas, app.Spec.Replicas), ObservedGeneration: app.Generation}
}

// phase derives the one-word summary from the Ready condition.
func phase(app *v1alpha1.MyApp, ready metav1.Condition) v1alpha1.MyAppPhase {
	switch {
	case !app.DeletionTimestamp.IsZero():
		return v1alpha1.MyAppTerminating
	case ready.Status == metav1.ConditionTrue:
		return v1alpha1.MyAppRunning
	case ready.Reason == v1alpha1.ReasonDeploymentConflict, ready.Reason == v1alpha1.ReasonServiceConflict,
		ready.Reason == v1alpha1.ReasonProgressDeadlineExceeded:
		return v1alpha1.MyAppFailed
	}
	return v1alpha1.MyAppPending
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) appsv1.DeploymentCondition {
	for _, c := range d.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return appsv1.DeploymentCondition{}
}
