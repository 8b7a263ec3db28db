package verticalscaler

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// computeStatus is the one place a VerticalScaler's status is computed, from what one reconcile
// observed and did. What it cannot see this time (the recommendation, the
// RecommendationProvided condition when no usage report came since the manager started) it
// keeps from the current status.
func computeStatus(vs *v1alpha1.VerticalScaler, obs observation) v1alpha1.VerticalScalerStatus {
	status := *vs.Status.DeepCopy()
	set := func(t string, ok bool, reason, message string) {
		c := metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: vs.Generation}
		if ok {
			c.Status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&status.Conditions, c)
	}

	// Written by a release before targets: TargetFound replaces it.
	meta.RemoveStatusCondition(&status.Conditions, v1alpha1.ConditionDeploymentFound)
	found := obs.target != nil
	if found {
		set(v1alpha1.ConditionTargetFound, true, v1alpha1.ReasonTargetFound, fmt.Sprintf("%s exists", obs.target.key))
		status.Target, status.TargetSelector = obs.target.key, obs.target.selector
	} else {
		set(v1alpha1.ConditionTargetFound, false, obs.problem.reason, obs.problem.message)
		status.Target, status.TargetSelector = "", nil
	}

	switch {
	case obs.elsewhere != "":
		// Another recommender's to write: left as it wrote it.
	case obs.recommendation != nil:
		status.Recommendation = obs.recommendation
	case status.Recommendation != nil && v1alpha1.RecommendationTarget(status.Recommendation) != vs.Spec.Target().Key():
		// Made for the workload the VerticalScaler named before: not this one's.
		status.Recommendation = nil
	}
	status.PodResources = obs.podResources
	provided := providedCondition(vs, obs)
	set(provided.Type, provided.Status == metav1.ConditionTrue, provided.Reason, provided.Message)

	applied := appliedCondition(vs, obs)
	set(applied.Type, applied.Status == metav1.ConditionTrue, applied.Reason, applied.Message)
	status.Applied = applied.Status == metav1.ConditionTrue
	if obs.apply != nil && !obs.apply.appliedAt.IsZero() {
		status.LastAppliedTime = &metav1.Time{Time: obs.apply.appliedAt}
	}

	ready, reason, message := readiness(vs, obs, provided, applied)
	set(v1alpha1.ConditionReady, ready, reason, message)
	if obs.err == nil {
		status.ObservedGeneration = vs.Generation
	}
	return status
}

// providedCondition is RecommendationProvided: what the latest usage report said, else what the
// status says, else that no usage came yet.
func providedCondition(vs *v1alpha1.VerticalScaler, obs observation) metav1.Condition {
	if obs.elsewhere != "" {
		return providedElsewhere(vs, obs.elsewhere)
	}
	if obs.report != nil {
		out := obs.report.Provided
		switch {
		case recommender.MetricsFailure(out.Reason) && vs.Status.Recommendation != nil:
			out.Message += "; the last recommendation is kept"
		case obs.behind != "":
			out.Message += "; the usage history read back from its checkpoint is behind the recommendation in status (" +
				obs.behind + "), which is kept until the history catches up"
		}
		return out
	}
	// Kept from status, unless it claims a recommendation this target does not have (one made
	// for the workload named before), or one another recommender wrote before spec.recommenders
	// named this one.
	hasRecommendation := v1alpha1.RecommendationTarget(vs.Status.Recommendation) == vs.Spec.Target().Key()
	if c := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionRecommendationProvided); c != nil &&
		c.Reason != v1alpha1.ReasonRecommendedElsewhere && (c.Status != metav1.ConditionTrue || hasRecommendation) {
		return *c
	}
	return metav1.Condition{Type: v1alpha1.ConditionRecommendationProvided, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonNoUsageYet, Message: "No usage of the target's Pods has been read yet"}
}

// appliedCondition is Applied: whether the target carries the recommendation (in a mode that
// applies it).
func appliedCondition(vs *v1alpha1.VerticalScaler, obs observation) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionApplied, Status: metav1.ConditionFalse}
	switch {
	case vs.Spec.UpdateMode == v1alpha1.UpdateModeOff || vs.Spec.UpdateMode == "":
		c.Reason, c.Message = v1alpha1.ReasonUpdateModeOff, "updateMode is Off: the recommendation is only reported"
	case obs.target == nil:
		c.Reason, c.Message = obs.problem.reason, obs.problem.message
	case obs.recommendation == nil || obs.apply == nil:
		c.Reason, c.Message = v1alpha1.ReasonNoRecommendation, "There is no recommendation to apply yet"
	default:
		c.Reason, c.Message = obs.apply.reason, obs.apply.message
		if obs.apply.reason == v1alpha1.ReasonApplied || obs.apply.reason == v1alpha1.ReasonAppliedAtAdmission {
			c.Status = metav1.ConditionTrue
		}
	}
	return c
}

// readiness is Ready: the target exists, its policies fit it, there is a recommendation, and
// in a mode that applies it the target carries it. Otherwise the first thing missing, in that
// order.
func readiness(vs *v1alpha1.VerticalScaler, obs observation, provided, applied metav1.Condition) (bool, string, string) {
	switch {
	case obs.target == nil:
		return false, obs.problem.reason, obs.problem.message
	case len(obs.policyProblems) > 0:
		return false, v1alpha1.ReasonContainerNotFound, strings.Join(obs.policyProblems, "; ")
	case provided.Status != metav1.ConditionTrue:
		return false, provided.Reason, provided.Message
	case vs.Spec.UpdateMode != v1alpha1.UpdateModeOff && vs.Spec.UpdateMode != "" && applied.Status != metav1.ConditionTrue:
		return false, applied.Reason, applied.Message
	}
	return true, v1alpha1.ReasonRecommendationCurrent, "The recommendation is current"
}
