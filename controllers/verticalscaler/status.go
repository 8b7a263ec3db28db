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

	found := obs.deployment != nil
	if found {
		set(v1alpha1.ConditionDeploymentFound, true, v1alpha1.ReasonDeploymentFound, fmt.Sprintf("Deployment %s exists", vs.Spec.DeploymentName))
	} else {
		set(v1alpha1.ConditionDeploymentFound, false, v1alpha1.ReasonDeploymentNotFound, notFound(vs, obs))
	}

	switch {
	case obs.recommendation != nil:
		status.Recommendation = obs.recommendation
	case status.Recommendation != nil && status.Recommendation.DeploymentName != vs.Spec.DeploymentName:
		// Made for the Deployment the VerticalScaler named before: not this one's.
		status.Recommendation = nil
	}
	provided := providedCondition(vs, obs)
	set(provided.Type, provided.Status == metav1.ConditionTrue, provided.Reason, provided.Message)

	applied := appliedCondition(vs, obs)
	set(applied.Type, applied.Status == metav1.ConditionTrue, applied.Reason, applied.Message)
	status.Applied = applied.Status == metav1.ConditionTrue
	if obs.apply != nil && !obs.apply.appliedAt.IsZero() {
		status.LastAppliedTime = &metav1.Time{Time: obs.apply.appliedAt}
	}

	ready, reason, message := readiness(vs, found, obs, provided, applied)
	set(v1alpha1.ConditionReady, ready, reason, message)
	if obs.err == nil {
		status.ObservedGeneration = vs.Generation
	}
	return status
}

// notFound says that the VerticalScaler's Deployment was not found; in a shard, that it may
// exist without the shard's labels, which keep it out of the shard's cache.
func notFound(vs *v1alpha1.VerticalScaler, obs observation) string {
	if obs.shard != "" {
		return fmt.Sprintf("Deployment %s does not exist in namespace %s, or does not match this shard's label selector %q: label it as its VerticalScaler",
			vs.Spec.DeploymentName, vs.Namespace, obs.shard)
	}
	return fmt.Sprintf("Deployment %s does not exist in namespace %s", vs.Spec.DeploymentName, vs.Namespace)
}

// providedCondition is RecommendationProvided: what the latest usage report said, else what the
// status says, else that no usage came yet.
func providedCondition(vs *v1alpha1.VerticalScaler, obs observation) metav1.Condition {
	if obs.report != nil {
		out := obs.report.Provided
		if recommender.MetricsFailure(out.Reason) && vs.Status.Recommendation != nil {
			out.Message += "; the last recommendation is kept"
		}
		return out
	}
	// Kept from status, unless it claims a recommendation this Deployment does not have (one
	// made for the Deployment named before).
	hasRecommendation := vs.Status.Recommendation != nil && vs.Status.Recommendation.DeploymentName == vs.Spec.DeploymentName
	if c := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionRecommendationProvided); c != nil &&
		(c.Status != metav1.ConditionTrue || hasRecommendation) {
		return *c
	}
	return metav1.Condition{Type: v1alpha1.ConditionRecommendationProvided, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonNoUsageYet, Message: "No usage of the Deployment's Pods has been read yet"}
}

// appliedCondition is Applied: whether the Deployment carries the recommendation (Auto mode
// only).
func appliedCondition(vs *v1alpha1.VerticalScaler, obs observation) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionApplied, Status: metav1.ConditionFalse}
	switch {
	case vs.Spec.UpdateMode != v1alpha1.UpdateModeAuto:
		c.Reason, c.Message = v1alpha1.ReasonUpdateModeOff, "updateMode is Off: the recommendation is only reported"
	case obs.deployment == nil:
		c.Reason, c.Message = v1alpha1.ReasonDeploymentNotFound, notFound(vs, obs)
	case obs.recommendation == nil || obs.apply == nil:
		c.Reason, c.Message = v1alpha1.ReasonNoRecommendation, "There is no recommendation to apply yet"
	default:
		c.Reason, c.Message = obs.apply.reason, obs.apply.message
		if obs.apply.reason == v1alpha1.ReasonApplied {
			c.Status = metav1.ConditionTrue
		}
	}
	return c
}

// readiness is Ready: the Deployment exists, its policies fit it, there is a recommendation, and
// in Auto mode the Deployment carries it. Otherwise the first thing missing, in that order.
func readiness(vs *v1alpha1.VerticalScaler, found bool, obs observation, provided, applied metav1.Condition) (bool, string, string) {
	switch {
	case !found:
		return false, v1alpha1.ReasonDeploymentNotFound, notFound(vs, obs)
	case len(obs.policyProblems) > 0:
		return false, v1alpha1.ReasonContainerNotFound, strings.Join(obs.policyProblems, "; ")
	case provided.Status != metav1.ConditionTrue:
		return false, provided.Reason, provided.Message
	case vs.Spec.UpdateMode == v1alpha1.UpdateModeAuto && applied.Status != metav1.ConditionTrue:
		return false, applied.Reason, applied.Message
	}
	return true, v1alpha1.ReasonRecommendationCurrent, "The recommendation is current"
}
