package verticalscaler

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/apply"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// DefaultMinApplyInterval is the default of --min-apply-interval: the least time between two
// writes to one target's Pod template, and between two resizes of one Pod. With the bounds it
// keeps the controller from flapping: every write to a Pod template rolls the Pods.
const DefaultMinApplyInterval = 10 * time.Minute

// EnoughHistory is how long a recommendation's history must span for the controller to change a
// request that lies within the bounds but more than recommender.Tolerance off the target: a
// day, after which the bounds are at most twice the percentiles' distance from them and the
// target has seen a whole daily cycle. With less, only a request outside [lowerBound,
// upperBound] is changed, as the Vertical Pod Autoscaler's updater does.
const EnoughHistory = 24 * time.Hour

// appliedMessage is the message of Applied=True, the same after a write and on the passes that
// find nothing to write, so that those passes leave status alone.
const appliedMessage = "Every controlled request is within the recommendation's bounds"

// applyState is what happened to the recommendation in a mode that applies it; it becomes the
// Applied condition.
type applyState struct {
	// reason is the Applied condition's reason.
	reason string
	// message explains reason.
	message string
	// wait is how long until the next write is allowed, or a resize is to be looked at again.
	wait time.Duration
	// appliedAt is set when this reconcile wrote the Pod template.
	appliedAt time.Time
}

// offRequests describes each controlled request of the containers that the recommendation rec
// asks to change, in the containers' order: one that is missing, or outside [lowerBound,
// upperBound], or, once the recommendation rests on EnoughHistory, more than
// recommender.Tolerance off its desired value. None means the containers carry the
// recommendation. desired is what each container would be given (the target, kept under a
// limit with RequestsOnly); a request equal to it is never off.
func offRequests(current []corev1.Container, desired map[string]corev1.ResourceRequirements, rec *v1alpha1.Recommendation) []string {
	recs := map[string]v1alpha1.ContainerRecommendation{}
	for _, r := range rec.ContainerRecommendations {
		recs[r.ContainerName] = r
	}
	var off []string
	for _, c := range current {
		want, ok := desired[c.Name]
		if !ok {
			continue
		}
		r := recs[c.Name]
		enough := r.FirstSampleTime != nil && r.LastSampleTime != nil && r.LastSampleTime.Sub(r.FirstSampleTime.Time) >= EnoughHistory
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			target, ok := want.Requests[name]
			if !ok {
				continue
			}
			have, ok := requestOf(c, name)
			lower, hasLower := r.LowerBound[name]
			upper, hasUpper := r.UpperBound[name]
			switch t := target.AsApproximateFloat64(); {
			case !ok:
				off = append(off, fmt.Sprintf("container %s requests no %s, recommended %s", c.Name, name, target.String()))
			case have.Cmp(target) == 0:
			case hasLower && have.Cmp(lower) < 0:
				off = append(off, fmt.Sprintf("container %s requests %s %s, below the lower bound %s (recommended %s)", c.Name, name, have.String(), lower.String(), target.String()))
			case hasUpper && have.Cmp(upper) > 0:
				off = append(off, fmt.Sprintf("container %s requests %s %s, above the upper bound %s (recommended %s)", c.Name, name, have.String(), upper.String(), target.String()))
			case enough && (t == 0 || math.Abs(have.AsApproximateFloat64()-t)/t > recommender.Tolerance):
				off = append(off, fmt.Sprintf("container %s requests %s %s, more than %.0f%% off the recommended %s after a day of history",
					c.Name, name, have.String(), recommender.Tolerance*100, target.String()))
			}
		}
	}
	return off
}

// requestOf returns c's request of resource name: its request, else its limit, to which
// Kubernetes defaults a missing request.
func requestOf(c corev1.Container, name corev1.ResourceName) (resource.Quantity, bool) {
	if q, ok := c.Resources.Requests[name]; ok {
		return q, true
	}
	q, ok := c.Resources.Limits[name]
	return q, ok
}

// untilNextApply returns how long to wait before the next write, given the last one.
func untilNextApply(last *time.Time, now time.Time, interval time.Duration) time.Duration {
	if last == nil {
		return 0
	}
	return max(0, last.Add(interval).Sub(now))
}

// desiredResourcesOf returns rec brought within the namespace's LimitRanges for containers
// (capToLimitRanges), and per container with a recommendation there, the resources the
// controller wants it to have: desiredResources of the resources the API server would admit.
func desiredResourcesOf(spec *v1alpha1.VerticalScalerSpec, containers []corev1.Container, rec *v1alpha1.Recommendation,
	ranges limitRanges) (*v1alpha1.Recommendation, map[string]corev1.ResourceRequirements) {
	admitted := make([]corev1.ResourceRequirements, len(containers))
	for i, c := range containers {
		admitted[i] = ranges.admitted(c.Resources)
	}
	rec = capToLimitRanges(spec, containers, admitted, rec, ranges)
	byName := map[string]v1alpha1.ContainerRecommendation{}
	for _, c := range rec.ContainerRecommendations {
		byName[c.ContainerName] = c
	}
	out := map[string]corev1.ResourceRequirements{}
	for i, c := range containers {
		r, ok := byName[c.Name]
		if !ok {
			continue
		}
		if res := desiredResources(admitted[i], r, recommender.ContainerPolicyFor(spec, c.Name)); len(res.Requests) > 0 {
			out[c.Name] = res
		}
	}
	return rec, out
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

// writeTemplate writes rec to the target's Pod template (Recreate and Auto modes, for the kinds
// whose controller replaces its Pods on a template change), when a request is off
// (offRequests) and the minimum interval since the last write has passed. The write is a
// server-side apply under the controller's field manager that sends only the controlled
// resources, and nothing when the manager already owns exactly those values. Each write is an
// Event on the VerticalScaler that says which requests moved. ranges are the namespace's
// LimitRanges, within which it keeps what it writes.
func (r *Reconciler) writeTemplate(ctx context.Context, vs *v1alpha1.VerticalScaler, w *workload, rec *v1alpha1.Recommendation, ranges limitRanges) (applyState, error) {
	template := w.template()
	containers := recommender.RecommendedContainers(&template.Spec)
	rec, desired := desiredResourcesOf(&vs.Spec, containers, rec, ranges)
	if len(desired) == 0 {
		return applyState{reason: v1alpha1.ReasonNoRecommendation, message: "No controlled resource of any container has a recommendation"}, nil
	}
	off := offRequests(containers, desired, rec)
	if len(off) == 0 {
		return applyState{reason: v1alpha1.ReasonApplied, message: appliedMessage}, nil
	}
	if unmet := unmetRequirements(vs, containers, desired); unmet != "" {
		skippedApplies.WithLabelValues(v1alpha1.ReasonEvictionRequirements).Inc()
		return applyState{reason: v1alpha1.ReasonEvictionRequirements, message: fmt.Sprintf("%s; %s", upperFirst(strings.Join(off, "; ")), unmet)}, nil
	}
	now := time.Now()
	var last *time.Time
	if vs.Status.LastAppliedTime != nil {
		last = &vs.Status.LastAppliedTime.Time
	}
	if wait := untilNextApply(last, now, r.Limits.MinApplyInterval); wait > 0 {
		skippedApplies.WithLabelValues(v1alpha1.ReasonWaitingForMinApplyInterval).Inc()
		return applyState{reason: v1alpha1.ReasonWaitingForMinApplyInterval, wait: wait,
			message: fmt.Sprintf("%s; the last write was at %s, the next is allowed %s after it, as each write rolls the Pods",
				upperFirst(strings.Join(off, "; ")), last.UTC().Format(time.RFC3339), r.Limits.MinApplyInterval)}, nil
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
			"Applied the recommendation to the Pod template of %s, which replaces its Pods: %s", w.key, strings.Join(off, "; "))
		templateWritesTotal.Inc()
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

// changesRunningPods says whether vs's mode changes its target's running Pods themselves (by
// resize or eviction), which the controller then follows through the Pod watch. A template
// write leaves them to the workload's own controller.
func changesRunningPods(vs *v1alpha1.VerticalScaler) bool {
	switch vs.Spec.UpdateMode {
	case v1alpha1.UpdateModeInPlaceOrRecreate:
		return true
	case v1alpha1.UpdateModeRecreate, v1alpha1.UpdateModeAuto:
		if recreatesByEviction(&vs.Spec) {
			return true
		}
		for _, k := range TemplateKinds {
			if k.RollsOnTemplateChange && strings.HasPrefix(vs.Status.Target, k.Key("")) {
				return false
			}
		}
		return true
	}
	return false
}

// recreatesByEviction says whether spec's updatePolicy asks Recreate and Auto to evict the Pods
// of the kinds that roll on a template change, rather than write their template.
func recreatesByEviction(spec *v1alpha1.VerticalScalerSpec) bool {
	return spec.UpdatePolicy != nil && spec.UpdatePolicy.RecreateBy == v1alpha1.RecreateByEviction
}
