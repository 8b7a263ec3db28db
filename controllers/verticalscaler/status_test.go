package verticalscaler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// brief is a condition without its times and message.
type brief struct{ Type, Status, Reason string }

func briefs(conditions []metav1.Condition) []brief {
	var out []brief
	for _, c := range conditions {
		out = append(out, brief{c.Type, string(c.Status), c.Reason})
	}
	return out
}

func TestComputeStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rec := &v1alpha1.Recommendation{Target: "Deployment.apps/web", ContainerRecommendations: []v1alpha1.ContainerRecommendation{{
		ContainerName: "app", Target: list("500m", ""), UncappedTarget: list("500m", "")}}}
	recommended := &recommender.Report{Target: "Deployment.apps/web", Recommendation: rec,
		Provided: metav1.Condition{Type: v1alpha1.ConditionRecommendationProvided, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRecommended}}
	unavailable := &recommender.Report{Target: "Deployment.apps/web", Provided: metav1.Condition{Type: v1alpha1.ConditionRecommendationProvided,
		Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonMetricsUnavailable, Message: "no metrics.k8s.io"}}
	d := &workload{key: "Deployment.apps/web", selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	missing := &targetProblem{v1alpha1.ReasonTargetNotFound, "Deployment.apps/web does not exist in namespace ns"}
	const (
		T = "True"
		F = "False"
	)
	for _, tc := range []struct {
		name       string
		mode       v1alpha1.UpdateMode
		status     v1alpha1.VerticalScalerStatus
		obs        observation
		want       []brief
		wantRec    bool
		wantApply  bool
		wantGen    int64
		wantInText string
	}{
		{name: "no Deployment, no usage", mode: v1alpha1.UpdateModeOff, obs: observation{problem: missing},
			want: []brief{{"TargetFound", F, v1alpha1.ReasonTargetNotFound}, {"RecommendationProvided", F, v1alpha1.ReasonNoUsageYet},
				{"Applied", F, v1alpha1.ReasonUpdateModeOff}, {"Ready", F, v1alpha1.ReasonTargetNotFound}},
			wantGen: 2, wantInText: "Deployment.apps/web does not exist in namespace ns"},
		{name: "an unsupported target in Auto", mode: v1alpha1.UpdateModeAuto,
			obs: observation{problem: &targetProblem{v1alpha1.ReasonTargetUnsupported, "no kind Widget"}},
			want: []brief{{"TargetFound", F, v1alpha1.ReasonTargetUnsupported}, {"RecommendationProvided", F, v1alpha1.ReasonNoUsageYet},
				{"Applied", F, v1alpha1.ReasonTargetUnsupported}, {"Ready", F, v1alpha1.ReasonTargetUnsupported}},
			wantGen: 2, wantInText: "no kind Widget"},
		{name: "upgraded from DeploymentFound", mode: v1alpha1.UpdateModeOff,
			status: v1alpha1.VerticalScalerStatus{Recommendation: &v1alpha1.Recommendation{DeploymentName: "web"}, Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionDeploymentFound, Status: metav1.ConditionTrue, Reason: "DeploymentFound"}, recommended.Provided}},
			obs: observation{target: d},
			want: []brief{{"RecommendationProvided", T, v1alpha1.ReasonRecommended}, {"TargetFound", T, v1alpha1.ReasonTargetFound},
				{"Applied", F, v1alpha1.ReasonUpdateModeOff}, {"Ready", T, v1alpha1.ReasonRecommendationCurrent}},
			wantRec: true, wantGen: 2},
		{name: "Off with a recommendation", mode: v1alpha1.UpdateModeOff,
			obs: observation{target: d, report: recommended, recommendation: rec},
			want: []brief{{"TargetFound", T, v1alpha1.ReasonTargetFound}, {"RecommendationProvided", T, v1alpha1.ReasonRecommended},
				{"Applied", F, v1alpha1.ReasonUpdateModeOff}, {"Ready", T, v1alpha1.ReasonRecommendationCurrent}},
			wantRec: true, wantGen: 2},
		{name: "Auto, applied now", mode: v1alpha1.UpdateModeAuto,
			obs: observation{target: d, report: recommended, recommendation: rec, apply: &applyState{reason: v1alpha1.ReasonApplied, appliedAt: now}},
			want: []brief{{"TargetFound", T, v1alpha1.ReasonTargetFound}, {"RecommendationProvided", T, v1alpha1.ReasonRecommended},
				{"Applied", T, v1alpha1.ReasonApplied}, {"Ready", T, v1alpha1.ReasonRecommendationCurrent}},
			wantRec: true, wantApply: true, wantGen: 2},
		{name: "Auto, waiting for the minimum interval", mode: v1alpha1.UpdateModeAuto,
			obs: observation{target: d, report: recommended, recommendation: rec, apply: &applyState{reason: v1alpha1.ReasonWaitingForMinApplyInterval, wait: time.Minute}},
			want: []brief{{"TargetFound", T, v1alpha1.ReasonTargetFound}, {"RecommendationProvided", T, v1alpha1.ReasonRecommended},
				{"Applied", F, v1alpha1.ReasonWaitingForMinApplyInterval}, {"Ready", F, v1alpha1.ReasonWaitingForMinApplyInterval}},
			wantRec: true, wantGen: 2},
		{name: "Auto, apply failed: observedGeneration stays", mode: v1alpha1.UpdateModeAuto,
			status: v1alpha1.VerticalScalerStatus{ObservedGeneration: 1},
			obs:    observation{target: d, report: recommended, recommendation: rec, apply: &applyState{reason: v1alpha1.ReasonApplyFailed}, err: errors.New("boom")},
			want: []brief{{"TargetFound", T, v1alpha1.ReasonTargetFound}, {"RecommendationProvided", T, v1alpha1.ReasonRecommended},
				{"Applied", F, v1alpha1.ReasonApplyFailed}, {"Ready", F, v1alpha1.ReasonApplyFailed}},
			wantRec: true, wantGen: 1},
		{name: "metrics unavailable keeps the recommendation", mode: v1alpha1.UpdateModeOff,
			status: v1alpha1.VerticalScalerStatus{Recommendation: rec},
			obs:    observation{target: d, report: unavailable, recommendation: rec},
			want: []brief{{"TargetFound", T, v1alpha1.ReasonTargetFound}, {"RecommendationProvided", F, v1alpha1.ReasonMetricsUnavailable},
				{"Applied", F, v1alpha1.ReasonUpdateModeOff}, {"Ready", F, v1alpha1.ReasonMetricsUnavailable}},
			wantRec: true, wantGen: 2, wantInText: "no metrics.k8s.io; the last recommendation is kept"},
		{name: "metrics API missing keeps the recommendation", mode: v1alpha1.UpdateModeOff,
			status: v1alpha1.VerticalScalerStatus{Recommendation: rec},
			obs: observation{target: d, recommendation: rec, report: &recommender.Report{Target: "Deployment.apps/web", Provided: metav1.Condition{
				Type: v1alpha1.ConditionRecommendationProvided, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonMetricsAPIMissing,
				Message: "the cluster does not serve metrics.k8s.io (is metrics-server installed?)"}}},
			want: []brief{{"TargetFound", T, v1alpha1.ReasonTargetFound}, {"RecommendationProvided", F, v1alpha1.ReasonMetricsAPIMissing},
				{"Applied", F, v1alpha1.ReasonUpdateModeOff}, {"Ready", F, v1alpha1.ReasonMetricsAPIMissing}},
			wantRec: true, wantGen: 2, wantInText: "(is metrics-server installed?); the last recommendation is kept"},
		{name: "slow metrics keep the recommendation, and the apply goes on", mode: v1alpha1.UpdateModeAuto,
			status: v1alpha1.VerticalScalerStatus{Recommendation: rec},
			obs: observation{target: d, recommendation: rec, apply: &applyState{reason: v1alpha1.ReasonApplied, appliedAt: now},
				report: &recommender.Report{Target: "Deployment.apps/web", Provided: metav1.Condition{Type: v1alpha1.ConditionRecommendationProvided,
					Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonMetricsTimeout, Message: "reading usage took too long"}}},
			want: []brief{{"TargetFound", T, v1alpha1.ReasonTargetFound}, {"RecommendationProvided", F, v1alpha1.ReasonMetricsTimeout},
				{"Applied", T, v1alpha1.ReasonApplied}, {"Ready", F, v1alpha1.ReasonMetricsTimeout}},
			wantRec: true, wantApply: true, wantGen: 2, wantInText: "reading usage took too long; the last recommendation is kept"},
		{name: "pointed at another Deployment: the old recommendation goes", mode: v1alpha1.UpdateModeOff,
			status: v1alpha1.VerticalScalerStatus{Recommendation: &v1alpha1.Recommendation{Target: "Deployment.apps/old"}, Conditions: []metav1.Condition{recommended.Provided}},
			obs:    observation{target: d},
			want: []brief{{"RecommendationProvided", F, v1alpha1.ReasonNoUsageYet}, {"TargetFound", T, v1alpha1.ReasonTargetFound},
				{"Applied", F, v1alpha1.ReasonUpdateModeOff}, {"Ready", F, v1alpha1.ReasonNoUsageYet}},
			wantRec: false, wantGen: 2},
		{name: "policy for a missing container", mode: v1alpha1.UpdateModeOff,
			obs: observation{target: d, report: recommended, recommendation: rec, policyProblems: []string{"spec.containerPolicies[0].containerName: x"}},
			want: []brief{{"TargetFound", T, v1alpha1.ReasonTargetFound}, {"RecommendationProvided", T, v1alpha1.ReasonRecommended},
				{"Applied", F, v1alpha1.ReasonUpdateModeOff}, {"Ready", F, v1alpha1.ReasonContainerNotFound}},
			wantRec: true, wantGen: 2, wantInText: "spec.containerPolicies[0].containerName: x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Generation: 2},
				Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web", UpdateMode: tc.mode}, Status: tc.status}
			got := computeStatus(vs, tc.obs)
			if diff := cmp.Diff(tc.want, briefs(got.Conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if (got.Recommendation != nil) != tc.wantRec {
				t.Errorf("recommendation = %v, want one: %v", got.Recommendation, tc.wantRec)
			}
			if got.Applied != tc.wantApply || (got.LastAppliedTime != nil) != tc.wantApply {
				t.Errorf("applied %v lastAppliedTime %v, want %v", got.Applied, got.LastAppliedTime, tc.wantApply)
			}
			if got.ObservedGeneration != tc.wantGen {
				t.Errorf("observedGeneration = %d, want %d", got.ObservedGeneration, tc.wantGen)
			}
			if found := tc.obs.target != nil; (got.Target == "Deployment.apps/web") != found || (got.TargetSelector != nil) != found {
				t.Errorf("target %q selector %v, want them set: %v", got.Target, got.TargetSelector, found)
			}
			if tc.wantInText != "" && !strings.Contains(messages(got.Conditions), tc.wantInText) {
				t.Errorf("no condition says %q: %v", tc.wantInText, got.Conditions)
			}
		})
	}
}

func messages(conditions []metav1.Condition) string {
	var out []string
	for _, c := range conditions {
		out = append(out, c.Message)
	}
	return strings.Join(out, "\n")
}

func TestComputeStatusIsStable(t *testing.T) {
	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web"}}
	obs := observation{target: &workload{key: "Deployment.apps/web", selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	first := computeStatus(vs, obs)
	vs.Status = first
	if diff := cmp.Diff(first, computeStatus(vs, obs)); diff != "" {
		t.Errorf("a second pass over the same world changed status (-first +second):\n%s", diff)
	}
}

// TestNotInCacheNamesTheShard: with --watch-label-selector, a workload missing from the cache
// may be one outside the shard, and the condition says how to bring it in.
func TestNotInCacheNamesTheShard(t *testing.T) {
	for _, tc := range []struct{ shard, want string }{
		{"", "Deployment.apps/web does not exist in namespace ns"},
		{"sharding.fluxcd.io/key=shard1", `Deployment.apps/web does not exist in namespace ns, or does not match this shard's label selector "sharding.fluxcd.io/key=shard1": label it as its VerticalScaler`},
	} {
		got := (&Reconciler{Shard: tc.shard}).notInCache("Deployment.apps/web", "ns")
		if diff := cmp.Diff(tc.want, got.message); diff != "" || got.reason != v1alpha1.ReasonTargetNotFound {
			t.Errorf("shard %q: reason %s, message (-want +got):\n%s", tc.shard, got.reason, diff)
		}
	}
}
