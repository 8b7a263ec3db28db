package verticalscaler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/compare"
)

// storedLimitRange is a LimitRange of one item as the API server stores it: for containers, a
// missing default limit is the max, and a missing default request the default limit or else
// the min.
func storedLimitRange(name string, t corev1.LimitType, minimum, maximum corev1.ResourceList) corev1.LimitRange {
	item := corev1.LimitRangeItem{Type: t, Min: minimum, Max: maximum}
	if t == corev1.LimitTypeContainer {
		item.Default = maximum.DeepCopy()
		item.DefaultRequest = item.Default.DeepCopy()
		for k, v := range minimum {
			if _, ok := item.DefaultRequest[k]; !ok {
				item.DefaultRequest = set(item.DefaultRequest, k, v)
			}
		}
	}
	return corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}}}
}

func containerWith(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func recommendationFor(targets map[string]corev1.ResourceList) *v1alpha1.Recommendation {
	rec := &v1alpha1.Recommendation{}
	for _, name := range []string{"a", "b", "c"} {
		if t, ok := targets[name]; ok {
			rec.ContainerRecommendations = append(rec.ContainerRecommendations,
				v1alpha1.ContainerRecommendation{ContainerName: name, Target: t, LowerBound: t.DeepCopy(), UpperBound: t.DeepCopy()})
		}
	}
	return rec
}

// TestDesiredResourcesWithinLimitRanges takes its cases from the LimitRange specs of the VPA's
// own admission controller end-to-end suite (v1.7.1): the Pods must carry what the VPA gives.
func TestDesiredResourcesWithinLimitRanges(t *testing.T) {
	rr := func(requests, limits corev1.ResourceList) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: requests, Limits: limits}
	}
	// Three containers whose requests and limits are 1m, with targets summing to 115m.
	threeContainers := []corev1.Container{containerWith("a", list("1m", "100Mi"), list("1m", "100Mi")),
		containerWith("b", list("1m", "100Mi"), list("1m", "100Mi")), containerWith("c", list("1m", "100Mi"), list("1m", "100Mi"))}
	threeTargets := map[string]corev1.ResourceList{"a": list("4m", "100Mi"), "b": list("21m", "100Mi"), "c": list("90m", "100Mi")}
	for _, tc := range []struct {
		name       string
		ranges     []corev1.LimitRange
		containers []corev1.Container
		targets    map[string]corev1.ResourceList
		want       map[string]corev1.ResourceRequirements
	}{{
		name:       "no LimitRange: the target, limits in proportion",
		containers: []corev1.Container{containerWith("a", list("100m", "100Mi"), list("150m", "200Mi"))},
		targets:    map[string]corev1.ResourceList{"a": list("250m", "200Mi")},
		want:       map[string]corev1.ResourceRequirements{"a": rr(list("250m", "200Mi"), list("375m", "400Mi"))},
	}, {
		name:       "the container max caps the request whose limit meets it",
		ranges:     []corev1.LimitRange{storedLimitRange("max", corev1.LimitTypeContainer, nil, list("300m", "1Gi"))},
		containers: []corev1.Container{containerWith("a", list("100m", "100Mi"), list("150m", "200Mi"))},
		targets:    map[string]corev1.ResourceList{"a": list("250m", "200Mi")},
		want:       map[string]corev1.ResourceRequirements{"a": rr(list("200m", "200Mi"), list("300m", "400Mi"))},
	}, {
		name:       "a container without limits takes the LimitRange's default limit, and its ratio",
		ranges:     []corev1.LimitRange{storedLimitRange("max", corev1.LimitTypeContainer, nil, list("300m", "1Gi"))},
		containers: []corev1.Container{containerWith("a", list("100m", "100Mi"), nil)},
		targets:    map[string]corev1.ResourceList{"a": list("500m", "500Mi")},
		want:       map[string]corev1.ResourceRequirements{"a": rr(list("100m", "100Mi"), list("300m", "1Gi"))},
	}, {
		name:       "the container min raises the request to it, and to the request whose limit meets it",
		ranges:     []corev1.LimitRange{storedLimitRange("min", corev1.LimitTypeContainer, list("50m", "250Mi"), nil)},
		containers: []corev1.Container{containerWith("a", list("100m", "200Mi"), list("150m", "400Mi"))},
		targets:    map[string]corev1.ResourceList{"a": list("250m", "100Mi")},
		want:       map[string]corev1.ResourceRequirements{"a": rr(list("250m", "250Mi"), list("375m", "500Mi"))},
	}, {
		name:   "the Pod max scales every container's, with or without a recommendation",
		ranges: []corev1.LimitRange{storedLimitRange("max", corev1.LimitTypePod, nil, list("400m", "1Gi"))},
		containers: []corev1.Container{containerWith("a", list("100m", "100Mi"), list("100m", "100Mi")),
			containerWith("b", list("400m", "600Mi"), list("400m", "600Mi"))},
		targets: map[string]corev1.ResourceList{"a": list("400m", "600Mi")},
		want: map[string]corev1.ResourceRequirements{"a": rr(list("200m", "512Mi"), list("200m", "512Mi")),
			"b": rr(list("200m", "512Mi"), list("200m", "512Mi"))},
	}, {
		name:   "the Pod max bounds the sum of limits",
		ranges: []corev1.LimitRange{storedLimitRange("max", corev1.LimitTypePod, nil, list("600m", "1Gi"))},
		containers: []corev1.Container{containerWith("a", list("100m", "100Mi"), list("150m", "200Mi")),
			containerWith("b", list("100m", "100Mi"), list("150m", "200Mi"))},
		targets: map[string]corev1.ResourceList{"a": list("250m", "200Mi"), "b": list("250m", "200Mi")},
		want: map[string]corev1.ResourceRequirements{"a": rr(list("200m", "200Mi"), list("300m", "400Mi")),
			"b": rr(list("200m", "200Mi"), list("300m", "400Mi"))},
	}, {
		name:       "the Pod min raises the sum of requests, each rounded up",
		ranges:     []corev1.LimitRange{storedLimitRange("min", corev1.LimitTypePod, list("150m", ""), nil)},
		containers: threeContainers,
		targets:    threeTargets,
		want: map[string]corev1.ResourceRequirements{"a": rr(list("6m", "100Mi"), list("6m", "100Mi")),
			"b": rr(list("28m", "100Mi"), list("28m", "100Mi")), "c": rr(list("118m", "100Mi"), list("118m", "100Mi"))},
	}, {
		name:       "the Pod max lowers the sum of limits, each rounded down",
		ranges:     []corev1.LimitRange{storedLimitRange("max", corev1.LimitTypePod, nil, list("80m", ""))},
		containers: threeContainers,
		targets:    threeTargets,
		want: map[string]corev1.ResourceRequirements{"a": rr(list("2m", "100Mi"), list("2m", "100Mi")),
			"b": rr(list("14m", "100Mi"), list("14m", "100Mi")), "c": rr(list("62m", "100Mi"), list("62m", "100Mi"))},
	}, {
		name:   "the Pod min raises the sum of memory requests; CPU within it stays",
		ranges: []corev1.LimitRange{storedLimitRange("min", corev1.LimitTypePod, list("100m", "500Mi"), nil)},
		containers: []corev1.Container{containerWith("a", list("100m", "200Mi"), list("150m", "400Mi")),
			containerWith("b", list("100m", "200Mi"), list("150m", "400Mi"))},
		targets: map[string]corev1.ResourceList{"a": list("120m", "100Mi"), "b": list("120m", "100Mi")},
		want: map[string]corev1.ResourceRequirements{"a": rr(list("120m", "250Mi"), list("180m", "500Mi")),
			"b": rr(list("120m", "250Mi"), list("180m", "500Mi"))},
	}, {
		name: "of two LimitRanges, the lower max",
		ranges: []corev1.LimitRange{storedLimitRange("high", corev1.LimitTypeContainer, nil, list("2", "")),
			storedLimitRange("low", corev1.LimitTypeContainer, nil, list("1", ""))},
		containers: []corev1.Container{containerWith("a", list("100m", ""), list("100m", ""))},
		targets:    map[string]corev1.ResourceList{"a": list("3", "")},
		want:       map[string]corev1.ResourceRequirements{"a": rr(list("1", ""), list("1", ""))},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1alpha1.VerticalScalerSpec{}
			rec := recommendationFor(tc.targets)
			before := rec.DeepCopy()
			capped, got := desiredResourcesOf(spec, tc.containers, rec, mergeLimitRanges(tc.ranges))
			if diff := cmp.Diff(tc.want, got, compare.Quantities); diff != "" {
				t.Errorf("desired resources (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, rec, compare.Quantities); diff != "" {
				t.Errorf("the recommendation was changed (-before +after):\n%s", diff)
			}
			for _, r := range capped.ContainerRecommendations {
				if d, ok := got[r.ContainerName]; ok {
					if diff := cmp.Diff(r.Target, d.Requests, compare.Quantities); diff != "" {
						t.Errorf("capped target of %s is not the desired request (-target +request):\n%s", r.ContainerName, diff)
					}
				}
			}
		})
	}
}

func TestCapToLimitRangesKeepsThePolicyLast(t *testing.T) {
	// The VPA lets minAllowed win over a LimitRange's max.
	spec := &v1alpha1.VerticalScalerSpec{ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "a", MinAllowed: list("500m", "")}}}
	ranges := mergeLimitRanges([]corev1.LimitRange{storedLimitRange("max", corev1.LimitTypeContainer, nil, list("300m", ""))})
	rec := recommendationFor(map[string]corev1.ResourceList{"a": list("1", "")})
	got, _ := desiredResourcesOf(spec, []corev1.Container{containerWith("a", list("100m", ""), nil)}, rec, ranges)
	if want := resource.MustParse("500m"); got.ContainerRecommendations[0].Target.Cpu().Cmp(want) != 0 {
		t.Errorf("target = %s, want %s", got.ContainerRecommendations[0].Target.Cpu(), want.String())
	}
}

func TestModeOffContainersCountInThePodSumButGetNothing(t *testing.T) {
	spec := &v1alpha1.VerticalScalerSpec{ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "b", Mode: v1alpha1.ContainerModeOff}}}
	ranges := mergeLimitRanges([]corev1.LimitRange{storedLimitRange("max", corev1.LimitTypePod, nil, list("400m", ""))})
	containers := []corev1.Container{containerWith("a", list("100m", ""), list("100m", "")), containerWith("b", list("200m", ""), list("200m", ""))}
	rec := recommendationFor(map[string]corev1.ResourceList{"a": list("400m", "")})
	_, got := desiredResourcesOf(spec, containers, rec, ranges)
	want := map[string]corev1.ResourceRequirements{"a": {Requests: list("266m", ""), Limits: list("266m", "")}}
	if diff := cmp.Diff(want, got, compare.Quantities); diff != "" {
		t.Errorf("desired resources (-want +got):\n%s", diff)
	}
}
