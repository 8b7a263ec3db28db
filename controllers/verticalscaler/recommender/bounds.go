package recommender

import (
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
