package recommender

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/compare"
)

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
			if diff := cmp.Diff(tc.want, Clamp(tc.values, tc.minimum, tc.maxim), compare.Quantities); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestContainerPolicyFor(t *testing.T) {
	spec := &v1alpha1.VerticalScalerSpec{ContainerPolicies: []v1alpha1.ContainerPolicy{
		{ContainerName: "*", MaxAllowed: list("1", "")},
		{ContainerName: "app", MaxAllowed: list("2", "")},
	}}
	if got := ContainerPolicyFor(spec, "app").MaxAllowed; got.Cpu().String() != "2" {
		t.Errorf("app's own policy not used: %v", got)
	}
	if got := ContainerPolicyFor(spec, "sidecar").MaxAllowed; got.Cpu().String() != "1" {
		t.Errorf("the * policy not used: %v", got)
	}
	if got := ContainerPolicyFor(&v1alpha1.VerticalScalerSpec{}, "app"); !cmp.Equal(got, v1alpha1.ContainerPolicy{}) {
		t.Errorf("no policy: %+v, want the zero policy", got)
	}
}
