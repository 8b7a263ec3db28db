package verticalscaler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
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
	rec := &v1alpha1.Recommendation{DeploymentName: "web", ContainerRecommendations: []v1alpha1.ContainerRecommendation{{
		ContainerName: "app", Target: list("500m", ""), UncappedTarget: list("500m", "")}}}
	recommended := &recommender.Report{DeploymentName: "web", Recommendation: rec,
		Provided: metav1.Condition{Type: v1alpha1.ConditionRecommendationProvided, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRecommended}}
	unavailable := &recommender.Report{DeploymentName: "web", Provided: metav1.Condition{Type: v1alpha1.ConditionRecommendationProvided,
		Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonMetricsUnavailable, Message: "no metrics.k8s.io"}}
	d := &appsv1.Deployment{}
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
		{name: "no Deployment, no usage", mode: v1alpha1.UpdateModeOff, obs: observation{},
			want: []brief{{"DeploymentFound", F, v1alpha1.ReasonDeploymentNotFound}, {"RecommendationProvided", F, v1alpha1.ReasonNoUsageYet},
				{"Applied", F, v1alpha1.ReasonUpdateModeOff}, {"Ready", F, v1alpha1.ReasonDeploymentNotFound}},
			wantGen: 2},
		{name: "no Deployment in this shard", mode: v1alpha1.UpdateModeAuto, obs: observation{shard: "sharding.fluxcd.io/key=shard1"},
			want: []brief{{"DeploymentFound", F, v1alpha1.ReasonDeploymentNotFound}, {"RecommendationProvided", F, v1alpha1.ReasonNoUsageYet},
				{"Applied", F, v1alpha1.ReasonDeploymentNotFound}, {"Ready", F, v1alpha1.ReasonDeploymentNotFound}},
			wantGen: 2, wantInText: `or does not match this shard's label selector "sharding.fluxcd.io/key=shard1": label it as its VerticalScaler`},
		{name: "Off with a recommendation", mode: v1alpha1.UpdateModeOff,
			obs: observation{deployment: d, report: recommended, recommendation: rec},
			want: []brief{{"DeploymentFound", T, v1alpha1.ReasonDeploymentFound}, {"RecommendationProvided", T, v1alpha1.ReasonRecommended},
				{"Applied", F, v1alpha1.ReasonUpdateModeOff}, {"Ready", T, v1alpha1.ReasonRecommendationCurrent}},
			wantRec: true, wantGen: 2},
		{name: "Auto, applied now", mode: v1alpha1.UpdateModeAuto,
			obs: observation{deployment: d, report: recommended, recommendation: rec, apply: &applyState{reason: v1alpha1.ReasonApplied, appliedAt: now}},
			want: []brief{{"DeploymentFound", T, v1alpha1.ReasonDeploymentFound}, {"RecommendationProvided", T, v1alpha1.ReasonRecommended},
				{"Applied", T, v1alpha1.ReasonApplied}, {"Ready", T, v1alpha1.ReasonRecommendationCurrent}},
			wantRec: true, wantApply: true, wantGen: 2},
		{name: "Auto, waiting for the minimum interval", mode: v1alpha1.UpdateModeAuto,
			obs: observation{deployment: d, report: recommended, recommendation: rec, apply: &applyState{reason: v1alpha1.ReasonWaitingForMinApplyInterval, wait: time.Minute}},
			want: []brief{{"DeploymentFound", T, v1alpha1.ReasonDeploymentFound}, {"RecommendationProvided", T, v1alpha1.ReasonRecommended},
				{"Applied", F, v1alpha1.ReasonWaitingForMinApplyInterval}, {"Ready", F, v1alpha1.ReasonWaitingForMinApplyInterval}},
			wantRec: true, wantGen: 2},
		{name: "Auto, apply failed: observedGeneration stays", mode: v1alpha1.UpdateModeAuto,
			status: v1alpha1.VerticalScalerStatus{ObservedGeneration: 1},
			obs:    observation{deployment: d, report: recommended, recommendation: rec, apply: &applyState{reason: v1alpha1.ReasonApplyFailed}, err: errors.New("boom")},
			want: []brief{{"DeploymentFound", T, v1alpha1.ReasonDeploymentFound}, {"RecommendationProvided", T, v1alpha1.ReasonRecommended},
				{"Applied", F, v1alpha1.ReasonApplyFailed}, {"Ready", F, v1alpha1.ReasonApplyFailed}},
			wantRec: true, wantGen: 1},
		{name: "metrics unavailable keeps the recommendation", mode: v1alpha1.UpdateModeOff,
			status: v1alpha1.VerticalScalerStatus{Recommendation: rec},
			obs:    observation{deployment: d, report: unavailable, recommendation: rec},
			want: []brief{{"DeploymentFound", T, v1alpha1.ReasonDeploymentFound}, {"RecommendationProvided", F, v1alpha1.ReasonMetricsUnavailable},
				{"Applied", F, v1alpha1.ReasonUpdateModeOff}, {"Ready", F, v1alpha1.ReasonMetricsUnavailable}},
			wantRec: true, wantGen: 2, wantInText: "no metrics.k8s.io; the last recommendation is kept"},
		{name: "metrics API missing keeps the recommendation", mode: v1alpha1.UpdateModeOff,
			status: v1alpha1.VerticalScalerStatus{Recommendation: rec},
			obs: observation{deployment: d, recommendation: rec, report: &recommender.Report{DeploymentName: "web", Provided: metav1.Condition{
				Type: v1alpha1.ConditionRecommendationProvided, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonMetricsAPIMissing,
				Message: "the cluster does not serve metrics.k8s.io (is metrics-server installed?)"}}},
			want: []brief{{"DeploymentFound", T, v1alpha1.ReasonDeploymentFound}, {"RecommendationProvided", F, v1alpha1.ReasonMetricsAPIMissing},
				{"Applied", F, v1alpha1.ReasonUpdateModeOff}, {"Ready", F, v1alpha1.ReasonMetricsAPIMissing}},
			wantRec: true, wantGen: 2, wantInText: "(is metrics-server installed?); the last recommendation is kept"},
		{name: "slow metrics keep the recommendation, and the apply goes on", mode: v1alpha1.UpdateModeAuto,
			status: v1alpha1.VerticalScalerStatus{Recommendation: rec},
			obs: observation{deployment: d, recommendation: rec, apply: &applyState{reason: v1alpha1.ReasonApplied, appliedAt: now},
				report: &recommender.Report{DeploymentName: "web", Provided: metav1.Condition{Type: v1alpha1.ConditionRecommendationProvided,
					Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonMetricsTimeout, Message: "reading usage took too long"}}},
			want: []brief{{"DeploymentFound", T, v1alpha1.ReasonDeploymentFound}, {"RecommendationProvided", F, v1alpha1.ReasonMetricsTimeout},
				{"Applied", T, v1alpha1.ReasonApplied}, {"Ready", F, v1alpha1.ReasonMetricsTimeout}},
			wantRec: true, wantApply: true, wantGen: 2, wantInText: "reading usage took too long; the last recommendation is kept"},
		{name: "pointed at another Deployment: the old recommendation goes", mode: v1alpha1.UpdateModeOff,
			status: v1alpha1.VerticalScalerStatus{Recommendation: &v1alpha1.Recommendation{DeploymentName: "old"}, Conditions: []metav1.Condition{recommended.Provided}},
			obs:    observation{deployment: d},
			want: []brief{{"RecommendationProvided", F, v1alpha1.ReasonNoUsageYet}, {"DeploymentFound", T, v1alpha1.ReasonDeploymentFound},
				{"Applied", F, v1alpha1.ReasonUpdateModeOff}, {"Ready", F, v1alpha1.ReasonNoUsageYet}},
			wantRec: false, wantGen: 2},
		{name: "policy for a missing container", mode: v1alpha1.UpdateModeOff,
			obs: observation{deployment: d, report: recommended, recommendation: rec, policyProblems: []string{"spec.containerPolicies[0].containerName: x"}},
			want: []brief{{"DeploymentFound", T, v1alpha1.ReasonDeploymentFound}, {"RecommendationProvided", T, v1alpha1.ReasonRecommended},
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
	obs := observation{deployment: &appsv1.Deployment{}}
	first := computeStatus(vs, obs)
	vs.Status = first
	if diff := cmp.Diff(first, computeStatus(vs, obs)); diff != "" {
		t.Errorf("a second pass over the same world changed status (-first +second):\n%s", diff)
	}
}
