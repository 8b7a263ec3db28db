package verticalscaler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/example/switchboard/apis/v1alpha1"
	vpav1 "github.com/example/switchboard/apis/vpa/v1"
	"github.com/example/switchboard/controllers/internal/compare"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

func TestScalerRecommenders(t *testing.T) {
	for _, tc := range []struct {
		name         string
		recommenders []*vpav1.RecommenderSelector
		own          string
		want         []v1alpha1.RecommenderSelector
	}{
		{name: "none, own is the default", own: "default"},
		{name: "none, own is another", own: "mine", want: []v1alpha1.RecommenderSelector{{Name: "default"}}},
		{name: "names own among others", recommenders: named("x", "mine"), own: "mine"},
		{name: "names others", recommenders: named("x", "y"), own: "mine", want: []v1alpha1.RecommenderSelector{{Name: "x"}, {Name: "y"}}},
	} {
		if diff := cmp.Diff(tc.want, scalerRecommenders(tc.recommenders, tc.own)); diff != "" {
			t.Errorf("%s: scalerRecommenders (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestRecommendedElsewhere(t *testing.T) {
	for _, tc := range []struct {
		recommenders []v1alpha1.RecommenderSelector
		want         string
	}{
		{want: ""},
		{recommenders: []v1alpha1.RecommenderSelector{{Name: "mine"}}, want: ""},
		{recommenders: []v1alpha1.RecommenderSelector{{Name: "x"}, {Name: "mine"}}, want: ""},
		{recommenders: []v1alpha1.RecommenderSelector{{Name: "x"}, {Name: "y"}}, want: "x, y"},
	} {
		spec := &v1alpha1.VerticalScalerSpec{Recommenders: tc.recommenders}
		if got := recommender.RecommendedElsewhere(spec, "mine"); got != tc.want {
			t.Errorf("RecommendedElsewhere(%+v) = %q, want %q", tc.recommenders, got, tc.want)
		}
	}
}

// TestWrittenTargets: what another recommender wrote is applied by its targets, whether or not
// it says which workload it is about, but never to another workload; containers without a
// target have nothing to apply.
func TestWrittenTargets(t *testing.T) {
	rec := func(target string) *v1alpha1.Recommendation {
		return &v1alpha1.Recommendation{Target: target, ContainerRecommendations: []v1alpha1.ContainerRecommendation{
			{ContainerName: "app", Target: list("250m", "200Mi")}, {ContainerName: "empty"}}}
	}
	want := map[string]v1alpha1.ContainerRecommendation{"app": {ContainerName: "app", Target: list("250m", "200Mi")}}
	for name, r := range map[string]*v1alpha1.Recommendation{"unsaid": rec(""), "this workload": rec("Deployment.apps/web")} {
		if diff := cmp.Diff(want, writtenTargets(r, "Deployment.apps/web"), compare.Quantities); diff != "" {
			t.Errorf("%s: writtenTargets (-want +got):\n%s", name, diff)
		}
	}
	if got := writtenTargets(rec("Deployment.apps/other"), "Deployment.apps/web"); got != nil {
		t.Errorf("a recommendation for another workload: writtenTargets = %v, want none", got)
	}
	if got := writtenTargets(nil, "Deployment.apps/web"); got != nil {
		t.Errorf("no recommendation: writtenTargets = %v, want none", got)
	}
}

// TestEstimatesOfSkipAnotherRecommendersTargets: a recommendation another recommender wrote has
// no uncapped target of this one's to go on.
func TestEstimatesOfSkipAnotherRecommendersTargets(t *testing.T) {
	rec := &v1alpha1.Recommendation{Target: "Deployment.apps/web", ContainerRecommendations: []v1alpha1.ContainerRecommendation{
		{ContainerName: "theirs", Target: list("250m", "")},
		{ContainerName: "ours", Target: list("300m", ""), UncappedTarget: list("200m", "")}}}
	got := estimatesOf(rec, "Deployment.apps/web")
	if len(got) != 1 || !cmp.Equal(list("200m", ""), got["ours"].Target, compare.Quantities) {
		t.Errorf("estimatesOf = %+v, want ours only, at its uncapped target", got)
	}
}

func TestRecommendationWrittenElsewhere(t *testing.T) {
	own := "mine"
	p := RecommendationWrittenElsewhere(&own)
	scaler := func(recommenders []v1alpha1.RecommenderSelector, cpu string) *v1alpha1.VerticalScaler {
		vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: v1alpha1.VerticalScalerSpec{Recommenders: recommenders}}
		vs.Status.Recommendation = &v1alpha1.Recommendation{ContainerRecommendations: []v1alpha1.ContainerRecommendation{{ContainerName: "app", Target: list(cpu, "")}}}
		return vs
	}
	others := []v1alpha1.RecommenderSelector{{Name: "x"}}
	vpa := func(recommenders []any, cpu string) *unstructured.Unstructured {
		u := NewVerticalPodAutoscaler()
		u.Object["spec"] = map[string]any{}
		if recommenders != nil {
			u.Object["spec"] = map[string]any{"recommenders": recommenders}
		}
		u.Object["status"] = map[string]any{"recommendation": map[string]any{"containerRecommendations": []any{
			map[string]any{"containerName": "app", "target": map[string]any{"cpu": cpu}}}}}
		return u
	}
	for _, tc := range []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{name: "scaler of another recommender, recommendation changed", old: scaler(others, "1"), new: scaler(others, "2"), want: true},
		{name: "scaler of another recommender, nothing changed", old: scaler(others, "1"), new: scaler(others, "1")},
		{name: "own scaler, recommendation changed", old: scaler(nil, "1"), new: scaler(nil, "2")},
		{name: "VPA of another recommender, recommendation changed", old: vpa([]any{map[string]any{"name": "x"}}, "1"), new: vpa([]any{map[string]any{"name": "x"}}, "2"), want: true},
		{name: "VPA naming none, own is not the default", old: vpa(nil, "1"), new: vpa(nil, "2"), want: true},
		{name: "VPA naming own, recommendation changed", old: vpa([]any{map[string]any{"name": "mine"}}, "1"), new: vpa([]any{map[string]any{"name": "mine"}}, "2")},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: Update = %t, want %t", tc.name, got, tc.want)
		}
	}
	if p.Create(event.CreateEvent{Object: scaler(others, "1")}) {
		t.Error("a creation passed: GenerationChangedPredicate, beside it, lets it through")
	}
}
