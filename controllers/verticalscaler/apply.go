package verticalscaler

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/apply"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// MinApplyInterval is the least time between two writes to one target's Pod template. With
// recommender.Tolerance, it keeps the controller from flapping: every write to a Pod template
// rolls the Pods, so the controller writes only when a request is clearly off, and
// not more often than this.
const MinApplyInterval = 10 * time.Minute

// appliedMessage is the message of Applied=True, the same after a write and on the passes that
// find nothing to write, so that those passes leave status alone.
var appliedMessage = fmt.Sprintf("Every controlled request of the Pod template is within %.0f%% of the recommendation", recommender.Tolerance*100)

// applyState is what happened to the recommendation in Auto mode; it becomes the Applied
// condition.
type applyState struct {
	// reason is the Applied condition's reason.
	reason string
	// message explains reason.
	message string
	// wait is how long until the next write is allowed, when waiting.
	wait time.Duration
	// appliedAt is set when this reconcile wrote the Pod template.
	appliedAt time.Time
}

// offRequests describes each controlled request of the containers that is missing or off its
// desired value by more than recommender.Tolerance, in the containers' order: the reasons for a
// write. None means the containers carry the recommendation.
func offRequests(current []corev1.Container, desired map[string]corev1.ResourceRequirements) []string {
	var off []string
	for _, c := range current {
		want, ok := desired[c.Name]
		if !ok {
			continue
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			target, ok := want.Requests[name]
			if !ok {
				continue
			}
			have, ok := c.Resources.Requests[name]
			if !ok {
				// Kubernetes defaults a missing request to the limit.
				have, ok = c.Resources.Limits[name]
			}
			switch t := target.AsApproximateFloat64(); {
			case !ok:
				off = append(off, fmt.Sprintf("container %s requests no %s, recommended %s", c.Name, name, target.String()))
			case t == 0:
				if have.Sign() != 0 {
					off = append(off, fmt.Sprintf("container %s requests %s %s, recommended 0", c.Name, name, have.String()))
				}
			case math.Abs(have.AsApproximateFloat64()-t)/t > recommender.Tolerance:
				off = append(off, fmt.Sprintf("container %s requests %s %s, recommended %s", c.Name, name, have.String(), target.String()))
			}
		}
	}
	return off
}

// untilNextApply returns how long to wait before the next write, given the last one.
func untilNextApply(last *time.Time, now time.Time, interval time.Duration) time.Duration {
	if last == nil {
		return 0
	}
	return max(0, last.Add(interval).Sub(now))
}

// desiredResourcesOf returns, per recommended container of the Pod template with a
// recommendation, the resources the controller wants it to have.
func desiredResourcesOf(spec *v1alpha1.VerticalScalerSpec, containers []corev1.Container, rec *v1alpha1.Recommendation) map[string]corev1.ResourceRequirements {
	byName := map[string]v1alpha1.ContainerRecommendation{}
	for _, c := range rec.ContainerRecommendations {
		byName[c.ContainerName] = c
	}
	out := map[string]corev1.ResourceRequirements{}
	for _, c := range containers {
		r, ok := byName[c.Name]
		if !ok {
			continue
		}
		if res := desiredResources(c.Resources, r, recommender.ContainerPolicyFor(spec, c.Name)); len(res.Requests) > 0 {
			out[c.Name] = res
		}
	}
	return out
}

// desiredTemplate is the apply configuration of the Pod template fields the controller owns:
// the controlled requests and limits of the containers and native sidecars, nothing else. It
// lists them in the template's order.
func desiredTemplate(template *corev1.PodTemplateSpec, desired map[string]corev1.ResourceRequirements) *corev1ac.PodTemplateSpecApplyConfiguration {
	podSpec := corev1ac.PodSpec()
	entry := func(c corev1.Container) (*corev1ac.ContainerApplyConfiguration, bool) {
		res, ok := desired[c.Name]
		if !ok {
			return nil, false
		}
		rac := corev1ac.ResourceRequirements().WithRequests(res.Requests)
		if len(res.Limits) > 0 {
			rac.WithLimits(res.Limits)
		}
		return corev1ac.Container().WithName(c.Name).WithResources(rac), true
	}
	for _, c := range template.Spec.InitContainers {
		if e, ok := entry(c); ok && recommender.IsNativeSidecar(c) {
			podSpec.WithInitContainers(e)
		}
	}
	for _, c := range template.Spec.Containers {
		if e, ok := entry(c); ok {
			podSpec.WithContainers(e)
		}
	}
	return corev1ac.PodTemplateSpec().WithSpec(podSpec)
}

// writesTemplate says whether mode writes the recommendation to the target's Pod template.
func writesTemplate(mode v1alpha1.UpdateMode) bool {
	return mode == v1alpha1.UpdateModeAuto
}

// applyRecommendation writes rec to the target's Pod template, when a request is off by more
// than the tolerance and the minimum interval since the last write has passed. The write is a
// server-side apply under the controller's field manager that sends only the controlled
// resources, and nothing when the manager already owns exactly those values. Each write is an
// Event on the VerticalScaler that says which requests moved.
func (r *Reconciler) applyRecommendation(ctx context.Context, vs *v1alpha1.VerticalScaler, w *workload, rec *v1alpha1.Recommendation) (applyState, error) {
	if w.object == nil || !w.kind.RollsOnTemplateChange {
		return applyState{reason: v1alpha1.ReasonTemplateNotWritable, message: fmt.Sprintf(
			"%s: writing the Pod template would not replace the running Pods, so Auto mode does not apply the recommendation", w.key)}, nil
	}
	template := w.template()
	containers := recommender.RecommendedContainers(&template.Spec)
	desired := desiredResourcesOf(&vs.Spec, containers, rec)
	if len(desired) == 0 {
		return applyState{reason: v1alpha1.ReasonNoRecommendation, message: "No controlled resource of any container has a recommendation"}, nil
	}
	off := offRequests(containers, desired)
	if len(off) == 0 {
		return applyState{reason: v1alpha1.ReasonApplied, message: appliedMessage}, nil
	}
	now := time.Now()
	var last *time.Time
	if vs.Status.LastAppliedTime != nil {
		last = &vs.Status.LastAppliedTime.Time
	}
	if wait := untilNextApply(last, now, MinApplyInterval); wait > 0 {
		return applyState{reason: v1alpha1.ReasonWaitingForMinApplyInterval, wait: wait,
			message: fmt.Sprintf("%s (more than %.0f%% off); the last write was at %s, the next is allowed %s after it, as each write rolls the Pods",
				upperFirst(strings.Join(off, "; ")), recommender.Tolerance*100, last.UTC().Format(time.RFC3339), MinApplyInterval)}, nil
	}
	var owned runtime.ApplyConfiguration
	if w.kind.Extract != nil {
		var err error
		if owned, err = w.kind.Extract(w.object, ControllerName); err != nil {
			return applyState{}, fmt.Errorf("reading the fields %s owns on %s: %w", ControllerName, w.key, err)
		}
	}
	changed, err := apply.IfChanged(ctx, r.Client, ControllerName, owned, w.kind.Apply(w.object, desiredTemplate(template, desired)), w.kind.New())
	if err != nil {
		r.Recorder.Eventf(vs, w.object, corev1.EventTypeWarning, v1alpha1.ReasonApplyFailed, "Apply", "Writing the recommendation to %s failed: %v", w.key, err)
		return applyState{reason: v1alpha1.ReasonApplyFailed, message: err.Error()}, fmt.Errorf("applying to %s: %w", w.key, err)
	}
	state := applyState{reason: v1alpha1.ReasonApplied, message: appliedMessage}
	if changed {
		ctrl.LoggerFrom(ctx).Info("Applied recommendation to the Pod template", "target", w.key, "fieldManager", ControllerName)
		r.Recorder.Eventf(vs, w.object, corev1.EventTypeNormal, v1alpha1.ReasonRecommendationApplied, "Apply",
			"Applied the recommendation to the Pod template of %s, which replaces its Pods: %s (more than %.0f%% off)", w.key, strings.Join(off, "; "), recommender.Tolerance*100)
		state.appliedAt = now
	}
	return state, nil
}

// upperFirst returns s with its first letter in upper case: a condition message is a sentence.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// changesRunningPods says whether mode changes a target's running Pods themselves (by resize or
// eviction), which the controller then follows through the Pod watch; a template write leaves
// them to the workload's own controller.
func changesRunningPods(mode v1alpha1.UpdateMode) bool {
	return false
}
