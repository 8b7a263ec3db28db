package verticalscaler

import (
	"fmt"
	"math"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/example/switchboard/apis/v1alpha1"
	vpav1 "github.com/example/switchboard/apis/vpa/v1"
)

// wellKnownGroupVersions are the group versions of the kinds the Vertical Pod Autoscaler finds by
// kind alone, whatever targetRef.apiVersion says.
var wellKnownGroupVersions = map[string]string{
	"Deployment":            appsv1.SchemeGroupVersion.String(),
	"StatefulSet":           appsv1.SchemeGroupVersion.String(),
	"DaemonSet":             appsv1.SchemeGroupVersion.String(),
	"ReplicaSet":            appsv1.SchemeGroupVersion.String(),
	"CronJob":               batchv1.SchemeGroupVersion.String(),
	"Job":                   batchv1.SchemeGroupVersion.String(),
	"ReplicationController": corev1.SchemeGroupVersion.String(),
}

// readVPASpec converts a VerticalPodAutoscaler's spec strictly: a field that vpav1 does not
// know is an error that names it, never dropped.
func readVPASpec(vpa *unstructured.Unstructured) (*vpav1.Spec, error) {
	raw, _, err := unstructured.NestedMap(vpa.Object, "spec")
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	spec := &vpav1.Spec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(raw, spec, true); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	return spec, nil
}

// readRecommenders is the VerticalPodAutoscaler's spec.recommenders, read on their own and
// leniently: whether the object is Switchboard's to act on (or to report on) must not depend on
// the rest of its spec. The VPA's CRD validates the field; one that does not convert counts as
// none.
func readRecommenders(vpa *unstructured.Unstructured) []*vpav1.RecommenderSelector {
	raw, _, err := unstructured.NestedSlice(vpa.Object, "spec", "recommenders")
	if err != nil || raw == nil {
		return nil
	}
	var spec vpav1.Spec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"recommenders": raw}, &spec); err != nil {
		return nil
	}
	return spec.Recommenders
}

// meantFor says whether a VerticalPodAutoscaler with these recommenders is meant for the
// recommender called name, as the VPA's recommender decides: one that names none is meant for
// the default recommender only, and one that names some is meant for each of them.
func meantFor(recommenders []*vpav1.RecommenderSelector, name string) bool {
	if len(recommenders) == 0 {
		return name == vpav1.DefaultRecommenderName
	}
	return slices.ContainsFunc(recommenders, func(s *vpav1.RecommenderSelector) bool { return s != nil && s.Name == name })
}

// scalerSpecOf is the VerticalScaler spec that does what a VerticalPodAutoscaler's spec asks,
// with every default filled in, so that it compares equal to the spec the API server returns.
// It returns one message per field it cannot carry out, naming the field; the spec is then not
// to be used. Bounds the VerticalScaler's schema checks (at most 7 policies, cpu and memory
// only) are left to it: the API server refuses the VerticalScaler with a message that names the
// field.
func scalerSpecOf(spec *vpav1.Spec) (v1alpha1.VerticalScalerSpec, []string) {
	var out v1alpha1.VerticalScalerSpec
	var problems []string
	ref, problem := targetRefOf(spec.TargetRef)
	if problem != "" {
		problems = append(problems, problem)
	}
	out.TargetRef = ref
	if spec.StartupBoost != nil {
		problems = append(problems, unsupportedField("spec.startupBoost"))
	}
	mode, policy, updateProblems := updatePolicyOf(spec.UpdatePolicy)
	out.UpdateMode, out.UpdatePolicy = mode, policy
	problems = append(problems, updateProblems...)
	if spec.ResourcePolicy != nil {
		for i, p := range spec.ResourcePolicy.ContainerPolicies {
			policy, policyProblems := containerPolicyOf(fmt.Sprintf("spec.resourcePolicy.containerPolicies[%d]", i), p)
			out.ContainerPolicies = append(out.ContainerPolicies, policy)
			problems = append(problems, policyProblems...)
		}
	}
	return out, problems
}

// targetRefOf is the VerticalScaler's targetRef for a VerticalPodAutoscaler's, or what is wrong
// with it.
func targetRefOf(ref *autoscalingv1.CrossVersionObjectReference) (*v1alpha1.TargetReference, string) {
	if ref == nil || ref.Kind == "" || ref.Name == "" {
		return nil, "spec.targetRef: Cannot read targetRef: it needs a kind and a name"
	}
	apiVersion := ref.APIVersion
	if gv, ok := wellKnownGroupVersions[ref.Kind]; ok {
		apiVersion = gv
	}
	if apiVersion == "" {
		return nil, fmt.Sprintf("spec.targetRef.apiVersion: Cannot read targetRef: kind %s is not a built-in workload, so it needs an apiVersion", ref.Kind)
	}
	return &v1alpha1.TargetReference{APIVersion: apiVersion, Kind: ref.Kind, Name: ref.Name}, ""
}

// updatePolicyOf is the update mode and policy of a VerticalPodAutoscaler's updatePolicy.
func updatePolicyOf(in *vpav1.PodUpdatePolicy) (v1alpha1.UpdateMode, *v1alpha1.UpdatePolicy, []string) {
	mode := v1alpha1.UpdateModeRecreate
	// The VPA's updater evicts Pods, whatever their workload's kind.
	policy := &v1alpha1.UpdatePolicy{RecreateBy: v1alpha1.RecreateByEviction}
	if in == nil {
		return mode, policy, nil
	}
	var problems []string
	if in.UpdateMode != nil && *in.UpdateMode != "" {
		switch m := *in.UpdateMode; m {
		case vpav1.UpdateModeOff, vpav1.UpdateModeInitial, vpav1.UpdateModeRecreate, vpav1.UpdateModeAuto, vpav1.UpdateModeInPlaceOrRecreate:
			mode = v1alpha1.UpdateMode(m)
		case vpav1.UpdateModeInPlace:
			problems = append(problems, "spec.updatePolicy.updateMode: InPlace (resize in place and never evict) is not supported; InPlaceOrRecreate resizes in place and evicts only a Pod that cannot be resized")
		default:
			problems = append(problems, fmt.Sprintf("spec.updatePolicy.updateMode: unknown mode %q", m))
		}
	}
	if in.EvictAfterOOMSeconds != nil {
		problems = append(problems, unsupportedField("spec.updatePolicy.evictAfterOOMSeconds"))
	}
	policy.MinReplicas = in.MinReplicas
	for i, r := range in.EvictionRequirements {
		if r == nil {
			problems = append(problems, fmt.Sprintf("spec.updatePolicy.evictionRequirements[%d]: null", i))
			continue
		}
		req := v1alpha1.EvictionRequirement{ChangeRequirement: v1alpha1.ChangeRequirement(r.ChangeRequirement)}
		for _, name := range r.Resources {
			req.Resources = append(req.Resources, v1alpha1.ControlledResource(name))
		}
		policy.EvictionRequirements = append(policy.EvictionRequirements, req)
	}
	return mode, policy, problems
}

// containerPolicyOf is the VerticalScaler's policy for one of a VerticalPodAutoscaler's
// container policies, at path.
func containerPolicyOf(path string, in vpav1.ContainerResourcePolicy) (v1alpha1.ContainerPolicy, []string) {
	out := v1alpha1.ContainerPolicy{ContainerName: in.ContainerName, Mode: v1alpha1.ContainerModeAuto,
		MinAllowed: in.MinAllowed, MaxAllowed: in.MaxAllowed, ControlledValues: v1alpha1.ControlledRequestsAndLimits,
		OOMBumpUpRatio: in.OOMBumpUpRatio, OOMMinBumpUp: in.OOMMinBumpUp}
	var problems []string
	if in.Mode != nil {
		switch *in.Mode {
		case vpav1.ContainerScalingModeAuto:
		case vpav1.ContainerScalingModeOff:
			out.Mode = v1alpha1.ContainerModeOff
		default:
			problems = append(problems, fmt.Sprintf("%s.mode: unknown mode %q", path, *in.Mode))
		}
	}
	if in.ControlledResources != nil {
		if len(*in.ControlledResources) == 0 {
			// Nothing controlled: the VPA recommends nothing for it either.
			out.Mode = v1alpha1.ContainerModeOff
		}
		for _, name := range *in.ControlledResources {
			out.ControlledResources = append(out.ControlledResources, v1alpha1.ControlledResource(name))
		}
	}
	if in.ControlledValues != nil {
		out.ControlledValues = v1alpha1.ControlledValues(*in.ControlledValues)
	}
	if s := in.MemoryAggregationIntervalSeconds; s != nil {
		out.MemoryAggregationInterval = &metav1.Duration{Duration: time.Duration(*s) * time.Second}
	}
	if n := in.MemoryAggregationIntervalCount; n != nil {
		if *n > math.MaxInt32 || *n < math.MinInt32 {
			problems = append(problems, fmt.Sprintf("%s.memoryAggregationIntervalCount: %d is out of range", path, *n))
		} else {
			count := int32(*n)
			out.MemoryAggregationIntervalCount = &count
		}
	}
	if in.StartupBoost != nil {
		problems = append(problems, unsupportedField(path+".startupBoost"))
	}
	return out, problems
}
