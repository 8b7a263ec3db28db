package verticalscaler

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// defaultControlledResources are what a policy without controlledResources controls.
var defaultControlledResources = []v1alpha1.ControlledResource{"cpu", "memory"}

// controlledResources returns the resources policy controls.
func controlledResources(policy v1alpha1.ContainerPolicy) []corev1.ResourceName {
	controlled := policy.ControlledResources
	if len(controlled) == 0 {
		controlled = defaultControlledResources
	}
	out := make([]corev1.ResourceName, 0, len(controlled))
	for _, r := range controlled {
		out = append(out, corev1.ResourceName(r))
	}
	return out
}

// controlsLimits says whether policy scales limits along with requests.
func controlsLimits(policy v1alpha1.ContainerPolicy) bool {
	return policy.ControlledValues != v1alpha1.ControlledRequestsOnly
}

// unknownContainers returns one message per policy that names a container the Pod template
// does not recommend, naming the field: one it does not have, or a plain init container.
func unknownContainers(spec *v1alpha1.VerticalScalerSpec, podSpec *corev1.PodSpec) []string {
	var problems []string
	recommended := recommender.RecommendedContainers(podSpec)
	for i, p := range spec.ContainerPolicies {
		if p.ContainerName == v1alpha1.DefaultContainerPolicyName ||
			slices.ContainsFunc(recommended, func(c corev1.Container) bool { return c.Name == p.ContainerName }) {
			continue
		}
		if slices.ContainsFunc(podSpec.InitContainers, func(c corev1.Container) bool { return c.Name == p.ContainerName }) {
			problems = append(problems, fmt.Sprintf("spec.containerPolicies[%d].containerName: %q is an init container, which gets no recommendation "+
				"(it runs to completion before the containers start); native sidecars, with restartPolicy Always, do", i, p.ContainerName))
			continue
		}
		problems = append(problems, fmt.Sprintf("spec.containerPolicies[%d].containerName: the target's Pod template has no container %q", i, p.ContainerName))
	}
	return problems
}

// estimatesOf returns the uncapped estimates a recommendation for target was made from, by
// container: Target is the uncapped target. A recommendation for another workload has none to
// give.
func estimatesOf(rec *v1alpha1.Recommendation, target string) map[string]v1alpha1.ContainerRecommendation {
	if rec == nil || v1alpha1.RecommendationTarget(rec) != target {
		return nil
	}
	out := map[string]v1alpha1.ContainerRecommendation{}
	for _, c := range rec.ContainerRecommendations {
		if len(c.UncappedTarget) == 0 {
			// Another recommender's, written before spec.recommenders changed to this one: no
			// estimate of this recommender's to go on.
			continue
		}
		c.Target = c.UncappedTarget
		out[c.ContainerName] = c
	}
	return out
}

// behindStatus says which containers of report, a recommendation drawn from the usage history,
// rest on fewer samples than the same containers of status, the recommendation in status, when
// both are of the same target; empty when none does. A history only gains samples, so fewer
// means the history was read back from a checkpoint older than the status (a manager killed
// before its last checkpoint, or one whose writes failed): the status's recommendation rests on
// more evidence, and is kept until the history catches up.
func behindStatus(report, status *v1alpha1.Recommendation) string {
	if status == nil || v1alpha1.RecommendationTarget(report) != v1alpha1.RecommendationTarget(status) {
		return ""
	}
	var behind []string
	for _, c := range report.ContainerRecommendations {
		for _, s := range status.ContainerRecommendations {
			if s.ContainerName == c.ContainerName && c.Samples < s.Samples {
				behind = append(behind, fmt.Sprintf("%s: %d samples, the status's %d", c.ContainerName, c.Samples, s.Samples))
			}
		}
	}
	return strings.Join(behind, "; ")
}

// recommend bounds the estimates of the recommended containers (recommender.RecommendedContainers)
// by their policies, in the template's order, and keeps what each rests on. Containers without
// an estimate, or whose policy's mode is Off, are left out; it returns nil when none is left. target is the key of the workload
// the estimates are of, and policy the recommender policy they were drawn with.
func recommend(spec *v1alpha1.VerticalScalerSpec, target string, containers []corev1.Container, policy *v1alpha1.RecommenderPolicy,
	estimates map[string]v1alpha1.ContainerRecommendation) *v1alpha1.Recommendation {
	rec := &v1alpha1.Recommendation{Target: target, Policy: policy.DeepCopy()}
	if spec.TargetRef == nil {
		// Read by a release before targets, should the manager be rolled back.
		rec.DeploymentName = spec.DeploymentName
	}
	for _, c := range containers {
		e, ok := estimates[c.Name]
		if !ok || !recommender.Recommends(spec, c.Name) {
			continue
		}
		p := recommender.ContainerPolicyFor(spec, c.Name)
		out := *e.DeepCopy()
		out.Target = recommender.Clamp(e.Target, p.MinAllowed, p.MaxAllowed)
		out.LowerBound = recommender.Clamp(e.LowerBound, p.MinAllowed, p.MaxAllowed)
		out.UpperBound = recommender.Clamp(e.UpperBound, p.MinAllowed, p.MaxAllowed)
		out.UncappedTarget = e.Target.DeepCopy()
		rec.ContainerRecommendations = append(rec.ContainerRecommendations, out)
	}
	if len(rec.ContainerRecommendations) == 0 {
		return nil
	}
	return rec
}

// scaledLimit returns the limit that keeps limit/request when the request becomes target:
// limit × target / request, rounded up to the resource's unit (millicores for CPU, bytes
// otherwise; scaleInProportion). A request of zero has no ratio to keep: the limit stays,
// raised to the target so that the request never exceeds it.
func scaledLimit(name corev1.ResourceName, limit, request, target resource.Quantity) resource.Quantity {
	if request.Sign() <= 0 {
		if limit.Cmp(target) < 0 {
			return target.DeepCopy()
		}
		return limit.DeepCopy()
	}
	return scaleInProportion(name, limit, request, target, true)
}

// desiredResources returns the requests (and, for RequestsAndLimits, limits) of the controlled
// resources that carry rec's target, given the container as it is. Only resources with a
// target are set; a limit is set only where the container has one, scaled in proportion to the
// request it had (Kubernetes defaults a missing request to the limit). With RequestsOnly, the
// request stays under an existing limit, which the API server would refuse otherwise.
func desiredResources(current corev1.ResourceRequirements, rec v1alpha1.ContainerRecommendation, policy v1alpha1.ContainerPolicy) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{Requests: corev1.ResourceList{}}
	for _, name := range controlledResources(policy) {
		target, ok := rec.Target[name]
		if !ok {
			continue
		}
		limit, hasLimit := current.Limits[name]
		switch {
		case hasLimit && controlsLimits(policy):
			request, hasRequest := current.Requests[name]
			if !hasRequest {
				request = limit
			}
			if out.Limits == nil {
				out.Limits = corev1.ResourceList{}
			}
			out.Limits[name] = scaledLimit(name, limit, request, target)
		case hasLimit && target.Cmp(limit) > 0:
			target = limit
		}
		out.Requests[name] = target.DeepCopy()
	}
	return out
}
