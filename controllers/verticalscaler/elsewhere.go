package verticalscaler

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
)

// writtenTargets are the targets of a recommendation another recommender wrote, by container,
// when it is about target (or does not say which workload it is about): what the VPA's updater
// and admission controller apply, before the container policies bound them.
func writtenTargets(rec *v1alpha1.Recommendation, target string) map[string]v1alpha1.ContainerRecommendation {
	if rec == nil || (rec.Target != "" || rec.DeploymentName != "") && v1alpha1.RecommendationTarget(rec) != target {
		return nil
	}
	out := map[string]v1alpha1.ContainerRecommendation{}
	for _, c := range rec.ContainerRecommendations {
		if len(c.Target) > 0 {
			out[c.ContainerName] = c
		}
	}
	return out
}

// providedElsewhere is RecommendationProvided of a VerticalScaler whose recommendation the
// recommenders named by names write.
func providedElsewhere(vs *v1alpha1.VerticalScaler, names string) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionRecommendationProvided, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonNoRecommendation, Message: "spec.recommenders name " + names + ", which has written no recommendation for " + vs.Spec.Target().Key() + " yet"}
	if len(writtenTargets(vs.Status.Recommendation, vs.Spec.Target().Key())) > 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonRecommendedElsewhere,
			"spec.recommenders name "+names+": the recommendation in status is theirs, applied as written within the container policies"
	}
	return c
}
