package configmapwatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
)

// pause-period, as Reloader reads it: deployment.reloader.stakater.com/pause-period (or the name
// --pause-deployment-annotation gives) on a
// Deployment, a Go duration. A roll first pauses the Deployment (spec.paused, and paused-at
// with the time), so that the roll and every change made during the period go out in one
// rollout when the period ends and the controller resumes it. The time lives on the Deployment
// (paused-at), not in a timer, so a restarted manager, a new leader, or the configmapwatcher
// replacing a Reloader that paused the Deployment, resumes it on time. A Deployment paused by
// someone else is not resumed by the controller.

// pauseAnnotations are the names of Reloader's pause-period and paused-at annotations, which
// Reloader's flags can rename.
type pauseAnnotations struct{ period, at string }

// pausePeriod reads the pause period of obj: ok when the annotation is there, err when it
// cannot be read (not a positive duration, or not on a Deployment).
func (p pauseAnnotations) pausePeriod(obj client.Object) (period time.Duration, ok bool, err error) {
	value, ok := obj.GetAnnotations()[p.period]
	if !ok {
		return 0, false, nil
	}
	if _, isDeployment := obj.(*appsv1.Deployment); !isDeployment {
		return 0, true, fmt.Errorf("annotation %s applies to Deployments only", p.period)
	}
	period, err = time.ParseDuration(value)
	if err == nil && period <= 0 {
		err = fmt.Errorf("not a positive duration")
	}
	if err != nil {
		return 0, true, fmt.Errorf("annotation %s: %q is not a positive duration such as 5m: %w", p.period, value, err)
	}
	return period, true, nil
}

// pausedForPeriod says whether d is paused for its pause period (by this controller or by
// Reloader), and since when; a paused-at that cannot be read is the zero time, which resumes it.
func (p pauseAnnotations) pausedForPeriod(d *appsv1.Deployment) (time.Time, bool) {
	value, ok := d.Annotations[p.at]
	if !ok || !d.Spec.Paused {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return time.Time{}, true
	}
	return at, true
}

// resumeIfDue resumes a Deployment paused for its pause period once the period is over (or
// when the annotation is gone or unreadable), and otherwise returns how long until it is.
func (r *Reconciler[T]) resumeIfDue(ctx context.Context, obj T) (time.Duration, error) {
	d, ok := any(obj).(*appsv1.Deployment)
	if !ok {
		return 0, nil
	}
	pause := r.Settings.Pause
	at, paused := pause.pausedForPeriod(d)
	if !paused {
		return 0, nil
	}
	period, _, err := pause.pausePeriod(d)
	if remaining := at.Add(period).Sub(r.now()); err == nil && period > 0 && remaining > 0 {
		return remaining, nil
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{pause.at: nil}},
		"spec":     map[string]any{"paused": false},
	})
	if err := r.Client.Patch(ctx, d, client.RawPatch("application/merge-patch+json", patch), client.FieldOwner(FieldManager)); err != nil {
		return 0, fmt.Errorf("resuming Deployment after its pause period: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Patched Deployment: resumed at the end of its pause period", "pausedAt", d.Annotations[pause.at], "fieldManager", FieldManager)
	r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, v1alpha1.ReasonResumed, "Resume", "Resumed Deployment %s at the end of its pause period: the changes of the period roll out now", d.Name)
	return 0, nil
}

// pauseForRoll pauses a Deployment with a pause period before a roll, unless it is paused
// already; it returns how long until it resumes (0 when it does not pause). An unreadable
// pause period, or one on another kind, is a Warning Event: the roll goes on without a pause.
func (r *Reconciler[T]) pauseForRoll(ctx context.Context, obj T) (time.Duration, error) {
	period, ok, err := r.Settings.Pause.pausePeriod(obj)
	switch {
	case !ok:
		return 0, nil
	case err != nil:
		skippedRolls.WithLabelValues(r.Kind.Name, skippedPauseInvalid).Inc()
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, v1alpha1.ReasonInvalidReloadAnnotation, "Roll", "rolled without a pause: %s", cut(err.Error()))
		return 0, nil
	}
	d := any(obj).(*appsv1.Deployment)
	if d.Spec.Paused {
		// Paused for an earlier change (resumeIfDue returns when it resumes), or by someone
		// else, who resumes it: either way the roll waits for that.
		return 0, nil
	}
	now := r.now().UTC().Truncate(time.Second)
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{r.Settings.Pause.at: now.Format(time.RFC3339)}},
		"spec":     map[string]any{"paused": true},
	})
	if err := r.Client.Patch(ctx, d, client.RawPatch("application/merge-patch+json", patch), client.FieldOwner(FieldManager)); err != nil {
		return 0, fmt.Errorf("pausing Deployment for its pause period: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Patched Deployment: paused for its pause period", "period", period.String(), "fieldManager", FieldManager)
	r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, v1alpha1.ReasonPaused, "Pause", "Paused Deployment %s for its pause period of %s: this change and those of the period roll out when it resumes", d.Name, period)
	return period, nil
}
