package recommender

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/example/switchboard/apis/v1alpha1"
)

// ContainerPolicyFor returns the policy of container: its own, else the "*" policy, else the
// zero policy (no bounds, cpu and memory, requests and limits). The controller bounds the
// recommendation by it, and the poller compares the bounds it would report as the controller
// will write them.
func ContainerPolicyFor(spec *v1alpha1.VerticalScalerSpec, container string) v1alpha1.ContainerPolicy {
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

// Recommends says whether container gets a recommendation: its policy's mode is not Off.
func Recommends(spec *v1alpha1.VerticalScalerSpec, container string) bool {
	return ContainerPolicyFor(spec, container).Mode != v1alpha1.ContainerModeOff
}

// Clamp returns values raised to minAllowed and lowered to maxAllowed, per resource; nil for
// nil values.
func Clamp(values, minAllowed, maxAllowed corev1.ResourceList) corev1.ResourceList {
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

// RecommendedElsewhere returns the recommenders a VerticalScaler's spec names when they are all
// others than own, the manager's --recommender-name, joined for messages: the verticalscaler then
// applies the recommendation they write into status and recommends nothing itself. Empty when
// the manager's own recommender recommends for it.
func RecommendedElsewhere(spec *v1alpha1.VerticalScalerSpec, own string) string {
	if len(spec.Recommenders) == 0 || slices.ContainsFunc(spec.Recommenders, func(r v1alpha1.RecommenderSelector) bool { return r.Name == own }) {
		return ""
	}
	names := make([]string, 0, len(spec.Recommenders))
	for _, r := range spec.Recommenders {
		names = append(names, r.Name)
	}
	return strings.Join(names, ", ")
}
