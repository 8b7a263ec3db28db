package verticalscaler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/compare"
)

func list(cpu, memory string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return l
}

func TestClamp(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		values, minimum, maxim corev1.ResourceList
		want                   corev1.ResourceList
	}{
		{name: "no bounds", values: list("100m", "1Gi"), want: list("100m", "1Gi")},
		{name: "raised to min", values: list("100m", "1Gi"), minimum: list("250m", ""), want: list("250m", "1Gi")},
		{name: "lowered to max", values: list("100m", "1Gi"), maxim: list("", "512Mi"), want: list("100m", "512Mi")},
		{name: "within", values: list("300m", "1Gi"), minimum: list("250m", "1Mi"), maxim: list("1", "2Gi"), want: list("300m", "1Gi")},
		{name: "bound on a resource without value adds nothing", values: list("300m", ""), minimum: list("", "1Gi"), want: list("300m", "")},
		{name: "nil stays nil", values: nil, minimum: list("1", ""), want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, clamp(tc.values, tc.minimum, tc.maxim), compare.Quantities); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestScaledLimit(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name                   string
		res                    corev1.ResourceName
		limit, request, target resource.Quantity
		want                   string
	}{
		{name: "cpu ratio 2", res: corev1.ResourceCPU, limit: q("200m"), request: q("100m"), target: q("588m"), want: "1176m"},
		{name: "cpu ratio 1.5 rounds up to a millicore", res: corev1.ResourceCPU, limit: q("3"), request: q("2"), target: q("333m"), want: "500m"},
		{name: "memory ratio 1.25", res: corev1.ResourceMemory, limit: q("1280Mi"), request: q("1Gi"), target: q("512Mi"), want: "640Mi"},
		{name: "zero request keeps the limit", res: corev1.ResourceCPU, limit: q("1"), request: q("0"), target: q("500m"), want: "1"},
		{name: "zero request raises the limit to the target", res: corev1.ResourceCPU, limit: q("1"), request: q("0"), target: q("2"), want: "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scaledLimit(tc.res, tc.limit, tc.request, tc.target)
			if got.Cmp(q(tc.want)) != 0 {
				t.Errorf("scaledLimit = %s, want %s", got.String(), tc.want)
			}
		})
	}
}

func TestDesiredResources(t *testing.T) {
	rec := v1alpha1.ContainerRecommendation{ContainerName: "app", Target: list("500m", "512Mi")}
	for _, tc := range []struct {
		name    string
		current corev1.ResourceRequirements
		policy  v1alpha1.ContainerPolicy
		want    corev1.ResourceRequirements
	}{
		{name: "no resources yet: requests only",
			want: corev1.ResourceRequirements{Requests: list("500m", "512Mi")}},
		{name: "limits scaled in proportion to requests",
			current: corev1.ResourceRequirements{Requests: list("250m", "256Mi"), Limits: list("1", "512Mi")},
			want:    corev1.ResourceRequirements{Requests: list("500m", "512Mi"), Limits: list("2", "1Gi")}},
		{name: "a limit without request: the request defaulted to the limit",
			current: corev1.ResourceRequirements{Limits: list("1", "")},
			want:    corev1.ResourceRequirements{Requests: list("500m", "512Mi"), Limits: list("500m", "")}},
		{name: "RequestsOnly leaves limits out",
			current: corev1.ResourceRequirements{Requests: list("250m", ""), Limits: list("1", "")},
			policy:  v1alpha1.ContainerPolicy{ControlledValues: v1alpha1.ControlledRequestsOnly},
			want:    corev1.ResourceRequirements{Requests: list("500m", "512Mi")}},
		{name: "RequestsOnly keeps the request under the limit",
			current: corev1.ResourceRequirements{Limits: list("", "256Mi")},
			policy:  v1alpha1.ContainerPolicy{ControlledValues: v1alpha1.ControlledRequestsOnly},
			want:    corev1.ResourceRequirements{Requests: list("500m", "256Mi")}},
		{name: "only the controlled resources",
			current: corev1.ResourceRequirements{Requests: list("250m", "256Mi"), Limits: list("1", "512Mi")},
			policy:  v1alpha1.ContainerPolicy{ControlledResources: []v1alpha1.ControlledResource{"memory"}},
			want:    corev1.ResourceRequirements{Requests: list("", "512Mi"), Limits: list("", "1Gi")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, desiredResources(tc.current, rec, tc.policy), compare.Quantities); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPolicyFor(t *testing.T) {
	spec := &v1alpha1.VerticalScalerSpec{ContainerPolicies: []v1alpha1.ContainerPolicy{
		{ContainerName: "*", MaxAllowed: list("1", "")},
		{ContainerName: "app", MaxAllowed: list("2", "")},
	}}
	if got := policyFor(spec, "app").MaxAllowed; got.Cpu().String() != "2" {
		t.Errorf("app's own policy not used: %v", got)
	}
	if got := policyFor(spec, "sidecar").MaxAllowed; got.Cpu().String() != "1" {
		t.Errorf("the * policy not used: %v", got)
	}
	if got := policyFor(&v1alpha1.VerticalScalerSpec{}, "app"); !cmp.Equal(got, v1alpha1.ContainerPolicy{}) {
		t.Errorf("no policy: %+v, want the zero policy", got)
	}
}

func TestUnknownContainers(t *testing.T) {
	spec := &v1alpha1.VerticalScalerSpec{ContainerPolicies: []v1alpha1.ContainerPolicy{
		{ContainerName: "*"}, {ContainerName: "app"}, {ContainerName: "ghost"},
	}}
	got := unknownContainers(spec, []corev1.Container{{Name: "app"}, {Name: "sidecar"}})
	want := []string{`spec.containerPolicies[2].containerName: the Deployment has no container "ghost"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRecommend(t *testing.T) {
	spec := &v1alpha1.VerticalScalerSpec{DeploymentName: "web", ContainerPolicies: []v1alpha1.ContainerPolicy{
		{ContainerName: "app", MinAllowed: list("1", ""), MaxAllowed: list("2", "1Gi")},
	}}
	estimates := map[string]v1alpha1.ContainerRecommendation{
		"app":  {ContainerName: "app", Target: list("500m", "2Gi"), LowerBound: list("100m", "1Gi"), UpperBound: list("3", "4Gi")},
		"gone": {ContainerName: "gone", Target: list("1", "1Gi")},
	}
	containers := []corev1.Container{{Name: "sidecar"}, {Name: "app"}}
	want := &v1alpha1.Recommendation{DeploymentName: "web", ContainerRecommendations: []v1alpha1.ContainerRecommendation{{
		ContainerName: "app", Target: list("1", "1Gi"), LowerBound: list("1", "1Gi"), UpperBound: list("2", "1Gi"),
		UncappedTarget: list("500m", "2Gi"),
	}}}
	if diff := cmp.Diff(want, recommend(spec, containers, estimates), compare.Quantities); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := recommend(spec, []corev1.Container{{Name: "sidecar"}}, estimates); got != nil {
		t.Errorf("no container with an estimate: %+v, want nil", got)
	}

	// Estimates kept in status are the uncapped targets, bounded again by today's policies.
	kept := estimatesOf(want, "web")
	if diff := cmp.Diff(list("500m", "2Gi"), kept["app"].Target, compare.Quantities); diff != "" {
		t.Errorf("estimate from status (-want +got):\n%s", diff)
	}
	// A recommendation made for the Deployment named before gives nothing for another one.
	if got := estimatesOf(want, "api"); got != nil {
		t.Errorf("estimates of web's recommendation used for api: %v", got)
	}
}
