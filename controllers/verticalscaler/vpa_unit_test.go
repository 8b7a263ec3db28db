package verticalscaler

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/switchboard/apis/v1alpha1"
	vpav1 "github.com/example/switchboard/apis/vpa/v1"
	"github.com/example/switchboard/controllers/internal/compare"
)

func TestScalerSpecOf(t *testing.T) {
	// The VPA's updater evicts the Pods of every kind.
	byEviction := &v1alpha1.UpdatePolicy{RecreateBy: v1alpha1.RecreateByEviction}
	deployment := &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	target := &v1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	quantity := resource.MustParse("1.5")
	for _, tc := range []struct {
		name         string
		spec         vpav1.Spec
		want         v1alpha1.VerticalScalerSpec
		wantProblems []string
	}{{
		name: "defaults: Recreate, as the VPA's",
		spec: vpav1.Spec{TargetRef: deployment},
		want: v1alpha1.VerticalScalerSpec{TargetRef: target, UpdateMode: v1alpha1.UpdateModeRecreate, UpdatePolicy: byEviction},
	}, {
		name: "a well-known kind is found by kind, whatever its apiVersion",
		spec: vpav1.Spec{TargetRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "extensions/v1beta1", Kind: "Deployment", Name: "web"}},
		want: v1alpha1.VerticalScalerSpec{TargetRef: target, UpdateMode: v1alpha1.UpdateModeRecreate, UpdatePolicy: byEviction},
	}, {
		name: "every field carried",
		spec: vpav1.Spec{TargetRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "example.com/v1", Kind: "Pool", Name: "workers"},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: new("InPlaceOrRecreate"), MinReplicas: new(int32(3)),
				EvictionRequirements: []*vpav1.EvictionRequirement{{Resources: []corev1.ResourceName{"memory"}, ChangeRequirement: "TargetHigherThanRequests"}}},
			ResourcePolicy: &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{
				{ContainerName: "*", Mode: new("Auto"), MinAllowed: corev1.ResourceList{"cpu": resource.MustParse("10m")},
					MaxAllowed: corev1.ResourceList{"memory": resource.MustParse("1Gi")}, ControlledResources: &[]corev1.ResourceName{"memory"},
					ControlledValues: new("RequestsOnly"), OOMBumpUpRatio: &quantity, OOMMinBumpUp: new(resource.MustParse("50Mi")),
					MemoryAggregationIntervalSeconds: new(int32(3600)), MemoryAggregationIntervalCount: new(int64(12))},
				{ContainerName: "istio-proxy", Mode: new("Off")},
				{ContainerName: "logger", ControlledResources: &[]corev1.ResourceName{}},
			}}},
		want: v1alpha1.VerticalScalerSpec{TargetRef: &v1alpha1.TargetReference{APIVersion: "example.com/v1", Kind: "Pool", Name: "workers"},
			UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate,
			UpdatePolicy: &v1alpha1.UpdatePolicy{RecreateBy: v1alpha1.RecreateByEviction, MinReplicas: new(int32(3)), EvictionRequirements: []v1alpha1.EvictionRequirement{
				{Resources: []v1alpha1.ControlledResource{"memory"}, ChangeRequirement: v1alpha1.TargetHigherThanRequests}}},
			ContainerPolicies: []v1alpha1.ContainerPolicy{
				{ContainerName: "*", Mode: v1alpha1.ContainerModeAuto, MinAllowed: corev1.ResourceList{"cpu": resource.MustParse("10m")},
					MaxAllowed: corev1.ResourceList{"memory": resource.MustParse("1Gi")}, ControlledResources: []v1alpha1.ControlledResource{"memory"},
					ControlledValues: v1alpha1.ControlledRequestsOnly, OOMBumpUpRatio: &quantity, OOMMinBumpUp: new(resource.MustParse("50Mi")),
					MemoryAggregationInterval: &metav1.Duration{Duration: time.Hour}, MemoryAggregationIntervalCount: new(int32(12))},
				{ContainerName: "istio-proxy", Mode: v1alpha1.ContainerModeOff, ControlledValues: v1alpha1.ControlledRequestsAndLimits},
				// An empty controlledResources recommends nothing, as mode Off.
				{ContainerName: "logger", Mode: v1alpha1.ContainerModeOff, ControlledValues: v1alpha1.ControlledRequestsAndLimits},
			}},
	}, {
		name:         "no targetRef",
		spec:         vpav1.Spec{},
		wantProblems: []string{"spec.targetRef"},
	}, {
		name:         "a custom kind without apiVersion",
		spec:         vpav1.Spec{TargetRef: &autoscalingv1.CrossVersionObjectReference{Kind: "Pool", Name: "workers"}},
		wantProblems: []string{"spec.targetRef.apiVersion"},
	}, {
		name: "what Switchboard does not do is named, field by field",
		spec: vpav1.Spec{TargetRef: deployment, StartupBoost: &vpav1.StartupBoost{CPU: &vpav1.StartupBoostOfResource{Type: "Factor", Factor: new(int32(2))}},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: new("InPlace"), EvictAfterOOMSeconds: new(int32(60))},
			ResourcePolicy: &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{
				{ContainerName: "app", Mode: new("Sometimes"), StartupBoost: &vpav1.StartupBoost{}},
			}}},
		wantProblems: []string{"spec.startupBoost", "spec.updatePolicy.updateMode: InPlace", "spec.updatePolicy.evictAfterOOMSeconds",
			"spec.resourcePolicy.containerPolicies[0].mode", "spec.resourcePolicy.containerPolicies[0].startupBoost"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := scalerSpecOf(&tc.spec)
			if len(problems) != len(tc.wantProblems) {
				t.Fatalf("problems = %q, want %d naming %q", problems, len(tc.wantProblems), tc.wantProblems)
			}
			for i, want := range tc.wantProblems {
				if !strings.HasPrefix(problems[i], want) {
					t.Errorf("problem %d = %q, want it to start with %q", i, problems[i], want)
				}
			}
			if len(problems) > 0 {
				return
			}
			if diff := cmp.Diff(tc.want, got, compare.Quantities); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadVPASpecRefusesUnknownFields: a field of a newer VPA is named, not dropped.
func TestReadVPASpecRefusesUnknownFields(t *testing.T) {
	vpa := NewVerticalPodAutoscaler()
	vpa.Object["spec"] = map[string]any{"targetRef": map[string]any{"kind": "Deployment", "name": "web"}, "podLifecycle": map[string]any{}}
	if _, err := readVPASpec(vpa); err == nil || !strings.Contains(err.Error(), "podLifecycle") {
		t.Errorf("readVPASpec of a spec with podLifecycle: %v, want an error naming it", err)
	}
	// Whose it is does not depend on the rest of the spec: another recommender's object with a
	// field Switchboard does not know is still another recommender's.
	vpa.Object["spec"].(map[string]any)["recommenders"] = []any{map[string]any{"name": "custom"}}
	if got := readRecommenders(vpa); len(got) != 1 || got[0].Name != "custom" || meantFor(got, vpav1.DefaultRecommenderName) {
		t.Errorf("readRecommenders of a spec with podLifecycle = %v, want custom's", got)
	}
	unstructured.RemoveNestedField(vpa.Object, "spec", "podLifecycle")
	if _, err := readVPASpec(vpa); err != nil {
		t.Errorf("readVPASpec: %v", err)
	}
}

// named are VPA recommender selectors of these names.
func named(names ...string) []*vpav1.RecommenderSelector {
	var out []*vpav1.RecommenderSelector
	for _, n := range names {
		out = append(out, &vpav1.RecommenderSelector{Name: n})
	}
	return out
}

func TestMeantFor(t *testing.T) {
	for _, tc := range []struct {
		recommenders []*vpav1.RecommenderSelector
		name         string
		want         bool
	}{
		{nil, "default", true},
		{nil, "switchboard", false},
		{named("default"), "default", true},
		{named("custom"), "default", false},
		{named("custom", "switchboard"), "switchboard", true},
	} {
		if got := meantFor(tc.recommenders, tc.name); got != tc.want {
			t.Errorf("meantFor(%v, %q) = %v, want %v", tc.recommenders, tc.name, got, tc.want)
		}
	}
}

func TestComputeVPAStatus(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	now := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	scaler := &v1alpha1.VerticalScaler{
		ObjectMeta: metav1.ObjectMeta{Generation: 1},
		Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web", ContainerPolicies: []v1alpha1.ContainerPolicy{
			{ContainerName: "app", ControlledResources: []v1alpha1.ControlledResource{"memory"}}}},
		Status: v1alpha1.VerticalScalerStatus{
			Target: "Deployment.apps/web", TargetSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionTargetFound, Status: metav1.ConditionTrue, ObservedGeneration: 1}},
			Recommendation: &v1alpha1.Recommendation{Target: "Deployment.apps/web", ContainerRecommendations: []v1alpha1.ContainerRecommendation{{
				ContainerName: "app", Target: corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("100Mi")},
				UncappedTarget: corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("90Mi")}, Samples: 5}}},
		},
	}
	old := &vpav1.Status{Conditions: []vpav1.Condition{
		{Type: vpav1.ConditionRecommendationProvided, Status: corev1.ConditionTrue, LastTransitionTime: then},
		{Type: vpav1.ConditionConfigDeprecated, Status: corev1.ConditionTrue, LastTransitionTime: then},
		{Type: "LowConfidence", Status: corev1.ConditionFalse, LastTransitionTime: then},
		{Type: vpav1.ConditionNoPodsMatched, Status: corev1.ConditionTrue, LastTransitionTime: then},
	}}
	got := computeVPAStatus(4, old, vpaObservation{scaler: scaler, podsMatched: true, now: now})
	want := vpav1.Status{
		ObservedGeneration: new(int64(4)),
		Recommendation: &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{{
			ContainerName: "app", Target: corev1.ResourceList{"memory": resource.MustParse("100Mi")},
			UncappedTarget: corev1.ResourceList{"memory": resource.MustParse("90Mi")}}}},
		// ConfigDeprecated and NoPodsMatched go; LowConfidence, not ours, stays; RecommendationProvided
		// keeps its transition time.
		Conditions: []vpav1.Condition{
			{Type: "LowConfidence", Status: corev1.ConditionFalse, LastTransitionTime: then},
			{Type: vpav1.ConditionRecommendationProvided, Status: corev1.ConditionTrue, LastTransitionTime: then},
		},
	}
	if diff := cmp.Diff(want, got, compare.Quantities); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	// The target is gone: ConfigUnsupported with the VerticalScaler's words, no Pods, and the
	// recommendation it had is kept.
	gone := scaler.DeepCopy()
	gone.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionTargetFound, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonTargetNotFound, Message: "Deployment.apps/web does not exist", ObservedGeneration: 1}}
	got = computeVPAStatus(4, &want, vpaObservation{scaler: gone, now: now})
	at := metav1.NewTime(now)
	wantConditions := []vpav1.Condition{
		{Type: vpav1.ConditionConfigUnsupported, Status: corev1.ConditionTrue, LastTransitionTime: at,
			Message: "Cannot read targetRef. Reason: Deployment.apps/web does not exist"},
		{Type: "LowConfidence", Status: corev1.ConditionFalse, LastTransitionTime: then},
		{Type: vpav1.ConditionNoPodsMatched, Status: corev1.ConditionTrue, LastTransitionTime: at, Reason: "NoPodsMatched", Message: noPodsMatchedMessage},
		{Type: vpav1.ConditionRecommendationProvided, Status: corev1.ConditionTrue, LastTransitionTime: then},
	}
	if diff := cmp.Diff(wantConditions, got.Conditions); diff != "" {
		t.Errorf("conditions with the target gone (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Recommendation, got.Recommendation, compare.Quantities); diff != "" {
		t.Errorf("recommendation with the target gone (-want +got):\n%s", diff)
	}
}
