package verticalscaler

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/compare"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
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

func TestUnknownContainers(t *testing.T) {
	spec := &v1alpha1.VerticalScalerSpec{ContainerPolicies: []v1alpha1.ContainerPolicy{
		{ContainerName: "*"}, {ContainerName: "app"}, {ContainerName: "ghost"},
	}}
	always := corev1.ContainerRestartPolicyAlways
	spec.ContainerPolicies = append(spec.ContainerPolicies, v1alpha1.ContainerPolicy{ContainerName: "proxy"}, v1alpha1.ContainerPolicy{ContainerName: "migrate"})
	got := unknownContainers(spec, &corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "sidecar"}},
		InitContainers: []corev1.Container{{Name: "migrate"}, {Name: "proxy", RestartPolicy: &always}}})
	want := []string{`spec.containerPolicies[2].containerName: the target's Pod template has no container "ghost"`,
		`spec.containerPolicies[4].containerName: "migrate" is an init container, which gets no recommendation ` +
			`(it runs to completion before the containers start); native sidecars, with restartPolicy Always, do`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRecommend(t *testing.T) {
	spec := &v1alpha1.VerticalScalerSpec{DeploymentName: "web", ContainerPolicies: []v1alpha1.ContainerPolicy{
		{ContainerName: "app", MinAllowed: list("1", ""), MaxAllowed: list("2", "1Gi")},
	}}
	first := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	estimates := map[string]v1alpha1.ContainerRecommendation{
		"app": {ContainerName: "app", Target: list("500m", "2Gi"), LowerBound: list("100m", "1Gi"), UpperBound: list("3", "4Gi"),
			Samples: 60, FirstSampleTime: &first},
		"gone": {ContainerName: "gone", Target: list("1", "1Gi")},
	}
	containers := []corev1.Container{{Name: "sidecar"}, {Name: "app"}}
	policy := &v1alpha1.RecommenderPolicy{TargetPercentile: new(int32(95))}
	// Bounded by the policy, with what it rests on and the recommender policy it was drawn with.
	want := &v1alpha1.Recommendation{Target: "Deployment.apps/web", DeploymentName: "web", Policy: policy, ContainerRecommendations: []v1alpha1.ContainerRecommendation{{
		ContainerName: "app", Target: list("1", "1Gi"), LowerBound: list("1", "1Gi"), UpperBound: list("2", "1Gi"),
		UncappedTarget: list("500m", "2Gi"), Samples: 60, FirstSampleTime: &first,
	}}}
	if diff := cmp.Diff(want, recommend(spec, "Deployment.apps/web", containers, policy, estimates), compare.Quantities); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := recommend(spec, "Deployment.apps/web", []corev1.Container{{Name: "sidecar"}}, policy, estimates); got != nil {
		t.Errorf("no container with an estimate: %+v, want nil", got)
	}
	// A container whose policy's mode is Off gets none, estimate or not.
	off := spec.DeepCopy()
	off.ContainerPolicies[0].Mode = v1alpha1.ContainerModeOff
	if got := recommend(off, "Deployment.apps/web", containers, policy, estimates); got != nil {
		t.Errorf("the only container with an estimate is Off: %+v, want nil", got)
	}

	// Estimates kept in status are the uncapped targets, bounded again by today's policies.
	kept := estimatesOf(want, "Deployment.apps/web")
	if diff := cmp.Diff(list("500m", "2Gi"), kept["app"].Target, compare.Quantities); diff != "" {
		t.Errorf("estimate from status (-want +got):\n%s", diff)
	}
	// A recommendation made for the Deployment named before gives nothing for another one.
	if got := estimatesOf(want, "Deployment.apps/api"); got != nil {
		t.Errorf("estimates of web's recommendation used for api: %v", got)
	}
	// A recommendation written before targets names its Deployment only.
	if got := estimatesOf(&v1alpha1.Recommendation{DeploymentName: "web", ContainerRecommendations: want.ContainerRecommendations},
		"Deployment.apps/web"); len(got) != 1 {
		t.Errorf("estimates of a recommendation written before targets: %v, want app's", got)
	}
	if got := estimatesOf(want, "StatefulSet.apps/web"); got != nil {
		t.Errorf("estimates of web's recommendation used for api: %v", got)
	}
}

// TestHistoryBehindStatusKeepsTheStatus: a usage history read back from a checkpoint older than
// the status (the leader that wrote the status was killed before its next checkpoint) rests on
// fewer samples; its recommendation does not replace the status's until it has as many, and
// RecommendationProvided says so. One of another target, or with as many samples, replaces it.
func TestHistoryBehindStatusKeepsTheStatus(t *testing.T) {
	at := func(target string, samples int64, cpu string) *v1alpha1.Recommendation {
		return &v1alpha1.Recommendation{Target: target, ContainerRecommendations: []v1alpha1.ContainerRecommendation{{
			ContainerName: "app", Target: list(cpu, ""), UncappedTarget: list(cpu, ""), Samples: samples}}}
	}
	const web = "Deployment.apps/web"
	for _, tc := range []struct {
		name              string
		status, report    *v1alpha1.Recommendation
		wantCPU, wantNote string
	}{
		{"behind: the status is kept", at(web, 12, "300m"), at(web, 10, "250m"), "300m", "app: 10 samples, the status's 12"},
		{"as many: the report replaces it", at(web, 12, "300m"), at(web, 12, "250m"), "250m", ""},
		{"more: the report replaces it", at(web, 12, "300m"), at(web, 13, "250m"), "250m", ""},
		{"another target: the report replaces it", at("StatefulSet.apps/db", 12, "300m"), at(web, 1, "250m"), "250m", ""},
		{"no status yet", nil, at(web, 1, "250m"), "250m", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := &v1alpha1.VerticalScaler{Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web"},
				Status: v1alpha1.VerticalScalerStatus{Recommendation: tc.status}}
			provided := metav1.Condition{Type: v1alpha1.ConditionRecommendationProvided, Status: metav1.ConditionTrue,
				Reason: v1alpha1.ReasonRecommended, Message: "Recommended"}
			obs := observation{target: &workload{key: web}, report: &recommender.Report{Target: web, Recommendation: tc.report, Provided: provided}}
			(&Reconciler{}).recommend(vs, &obs)
			if obs.recommendation == nil || len(obs.recommendation.ContainerRecommendations) != 1 {
				t.Fatalf("recommendation %+v", obs.recommendation)
			}
			if got := obs.recommendation.ContainerRecommendations[0].Target[corev1.ResourceCPU]; got.String() != tc.wantCPU {
				t.Errorf("cpu %s, want %s", got.String(), tc.wantCPU)
			}
			if obs.behind != tc.wantNote {
				t.Errorf("behind %q, want %q", obs.behind, tc.wantNote)
			}
			c := providedCondition(vs, obs)
			if kept := strings.Contains(c.Message, "which is kept until the history catches up"); kept != (tc.wantNote != "") {
				t.Errorf("RecommendationProvided says %q", c.Message)
			}
		})
	}
}
