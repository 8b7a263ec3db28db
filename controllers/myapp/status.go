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
	meta.SetStatusCondition(&status.Conditions, mirror(d, appsv1.DeploymentAvailable, v1alpha1.ConditionAvailable, gen))
	meta.SetStatusCondition(&status.Conditions, mirror(d, appsv1.DeploymentProgressing, v1alpha1.ConditionProgressing, gen))
	ready := readyCondition(app, seen)
	meta.SetStatusCondition(&status.Conditions, ready)

	status.Phase = phase(app, ready)
	if seen.applied && seen.blocked == nil {
		status.ObservedGeneration = gen
	}
	return status
}

// mirror copies the Deployment's condition of type from as the MyApp condition of type to.
func mirror(d *appsv1.Deployment, from appsv1.DeploymentConditionType, to string, gen int64) metav1.Condition {
	c := metav1.Condition{Type: to, Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonNotReportedByDeployment, ObservedGeneration: gen,
		Message: fmt.Sprintf("the Deployment has not reported %s yet", from)}
	if d == nil {
		return c
	}
	for _, dc := range d.Status.Conditions {
		if dc.Type != from {
			continue
		}
		c.Status = metav1.ConditionStatus(dc.Status)
		if dc.Reason != "" {
			c.Reason = dc.Reason
		}
		c.Message = dc.Message
	}
	return c
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
