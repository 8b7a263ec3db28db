package verticalscaler

import (
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/example/switchboard/apis/v1alpha1"
)

// defaultControlledResources are what a policy without controlledResources controls.
var defaultControlledResources = []v1alpha1.ControlledResource{"cpu", "memory"}

// policyFor returns the policy of container: its own, else the "*" policy, else the zero
// policy (no bounds, cpu and memory, requests and limits).
func policyFor(spec *v1alpha1.VerticalScalerSpec, container string) v1alpha1.ContainerPolicy {
	var fallback v1alpha1.ContainerPolicy
	for _, p := range spec.ContainerPolicies {
		switch p.ContainerName {
		case container:
			return p
		case v1alpha1.DefaultContainerPolicyName:
			fallback = p
		}
	}
	return fallback
}

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
// does not have, naming the field.
func unknownContainers(spec *v1alpha1.VerticalScalerSpec, containers []corev1.Container) []string {
	var problems []string
	for i, p := range spec.ContainerPolicies {
		if p.ContainerName == v1alpha1.DefaultContainerPolicyName {
			continue
		}
		if !slices.ContainsFunc(containers, func(c corev1.Container) bool { return c.Name == p.ContainerName }) {
			problems = append(problems, fmt.Sprintf("spec.containerPolicies[%d].containerName: the Deployment has no container %q", i, p.ContainerName))
		}
	}
	return problems
}

// estimatesOf returns the uncapped estimates a recommendation for deploymentName was made from,
// by container: Target is the uncapped target. A recommendation for another Deployment has
// none to give.
func estimatesOf(rec *v1alpha1.Recommendation, deploymentName string) map[string]v1alpha1.ContainerRecommendation {
	if rec == nil || rec.DeploymentName != deploymentName {
		return nil
	}
	out := map[string]v1alpha1.ContainerRecommendation{}
	for _, c := range rec.ContainerRecommendations {
		c.Target = c.UncappedTarget
		out[c.ContainerName] = c
	}
	return out
}

// recommend bounds the estimates of the Pod template's containers by their policies, in the
// template's order. Containers without an estimate are left out; it returns nil when none has one.
func recommend(spec *v1alpha1.VerticalScalerSpec, containers []corev1.Container, estimates map[string]v1alpha1.ContainerRecommendation) *v1alpha1.Recommendation {
	rec := &v1alpha1.Recommendation{DeploymentName: spec.DeploymentName}
	for _, c := range containers {
		e, ok := estimates[c.Name]
		if !ok {
			continue
		}
		p := policyFor(spec, c.Name)
		rec.ContainerRecommendations = append(rec.ContainerRecommendations, v1alpha1.ContainerRecommendation{
			ContainerName:  c.Name,
			Target:         clamp(e.Target, p.MinAllowed, p.MaxAllowed),
			LowerBound:     clamp(e.LowerBound, p.MinAllowed, p.MaxAllowed),
			UpperBound:     clamp(e.UpperBound, p.MinAllowed, p.MaxAllowed),
			UncappedTarget: e.Target.DeepCopy(),
		})
	}
	if len(rec.ContainerRecommendations) == 0 {
		return nil
	}
	return rec
}

// clamp returns values raised to minAllowed and lowered to maxAllowed, per resource.
func clamp(values, minAllowed, maxAllowed corev1.ResourceList) corev1.ResourceList {
	if values == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for name, v := range values {
		if lo, ok := minAllowed[name]; ok && v.Cmp(lo) < 0 {
			v = lo
		}
		if hi, ok := maxAllowed[name]; ok && v.Cmp(hi) > 0 {
			v = hi
		}
		out[name] = v.DeepCopy()
	}
	return out
}

// scaledLimit returns the limit that keeps limit/request when the request becomes target:
// limit × target / request, rounded up to the resource's unit (millicores for CPU, bytes
// otherwise). A request of zero has no ratio to keep: the limit stays, raised to the target so
// that the request never exceeds it.
func scaledLimit(name corev1.ResourceName, limit, request, target resource.Quantity) resource.Quantity {
	if request.Sign() <= 0 {
		if limit.Cmp(target) < 0 {
			return target.DeepCopy()
		}
		return limit.DeepCopy()
	}
	ratio := limit.AsApproximateFloat64() / request.AsApproximateFloat64()
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(int64(math.Ceil(float64(target.MilliValue())*ratio-1e-9)), resource.DecimalSI)
	}
	return *resource.NewQuantity(int64(math.Ceil(float64(target.Value())*ratio-1e-9)), target.Format)
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
