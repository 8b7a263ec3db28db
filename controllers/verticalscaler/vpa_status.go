package verticalscaler

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	vpav1 "github.com/example/switchboard/apis/vpa/v1"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// noPodsMatchedMessage is the Vertical Pod Autoscaler's message of NoPodsMatched.
const noPodsMatchedMessage = "No pods match this VPA object"

// vpaObservation is what one reconcile of a VerticalPodAutoscaler saw and did;
// computeVPAStatus turns it into status.
type vpaObservation struct {
	// problems say why the object is not acted on; empty when it is.
	problems []string
	// scaler is the VerticalScaler made from the object; nil when there is none.
	scaler *v1alpha1.VerticalScaler
	// podsMatched says whether a live Pod of the target exists.
	podsMatched bool
	// now is when the reconcile ran, for the conditions that change.
	now time.Time
}

// computeVPAStatus is the one place a VerticalPodAutoscaler's status is computed, with the
// Vertical Pod Autoscaler recommender's semantics: the recommendation of the VerticalScaler made
// from it, limited to each container's controlled resources; ConfigUnsupported (True, with the
// reason in its message) when it cannot be acted on, absent otherwise; NoPodsMatched (True)
// while no Pod of the target exists, absent otherwise; RecommendationProvided, True once there
// is a recommendation; ConfigDeprecated removed. Conditions of other types are kept as they
// are, and a condition whose status does not change keeps its lastTransitionTime. An object
// that is not acted on keeps the recommendation it has: Switchboard did not write it.
func computeVPAStatus(generation int64, old *vpav1.Status, obs vpaObservation) vpav1.Status {
	out := vpav1.Status{Recommendation: old.Recommendation, ObservedGeneration: &generation}
	unsupported := obs.problems
	if len(unsupported) == 0 {
		if found := targetFound(obs.scaler); found != nil && found.Status == metav1.ConditionFalse {
			unsupported = []string{"Cannot read targetRef. Reason: " + found.Message}
		} else if obs.scaler != nil {
			out.Recommendation = vpaRecommendationOf(obs.scaler)
		}
	}

	conditions := map[string]vpav1.Condition{}
	for _, c := range old.Conditions {
		if c.Type != vpav1.ConditionConfigDeprecated {
			conditions[c.Type] = c
		}
	}
	set := func(t string, ok bool, reason, message string) {
		c := vpav1.Condition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message,
			LastTransitionTime: metav1.NewTime(obs.now).Rfc3339Copy()}
		if ok {
			c.Status = corev1.ConditionTrue
		}
		if before, found := conditions[t]; found && before.Status == c.Status {
			c.LastTransitionTime = before.LastTransitionTime
		}
		conditions[t] = c
	}

	if len(unsupported) > 0 {
		set(vpav1.ConditionConfigUnsupported, true, "", strings.Join(unsupported, "; "))
	} else {
		delete(conditions, vpav1.ConditionConfigUnsupported)
	}
	noPods := len(unsupported) > 0 || (obs.scaler != nil && obs.scaler.Status.TargetSelector != nil && !obs.podsMatched)
	if noPods {
		set(vpav1.ConditionNoPodsMatched, true, vpav1.ConditionNoPodsMatched, noPodsMatchedMessage)
	} else {
		delete(conditions, vpav1.ConditionNoPodsMatched)
	}
	switch {
	case out.Recommendation != nil && len(out.Recommendation.ContainerRecommendations) > 0:
		set(vpav1.ConditionRecommendationProvided, true, "", "")
	case noPods:
		set(vpav1.ConditionRecommendationProvided, false, vpav1.ConditionNoPodsMatched, noPodsMatchedMessage)
	default:
		reason, message := "", ""
		if provided := recommendationProvided(obs.scaler); provided != nil && provided.Status == metav1.ConditionFalse {
			reason, message = provided.Reason, provided.Message
		}
		set(vpav1.ConditionRecommendationProvided, false, reason, message)
	}

	for _, c := range conditions {
		out.Conditions = append(out.Conditions, c)
	}
	slices.SortFunc(out.Conditions, func(a, b vpav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	return out
}

// targetFound is the scaler's TargetFound condition, if it is about its current spec.
func targetFound(scaler *v1alpha1.VerticalScaler) *metav1.Condition {
	if scaler == nil {
		return nil
	}
	c := meta.FindStatusCondition(scaler.Status.Conditions, v1alpha1.ConditionTargetFound)
	if c == nil || c.ObservedGeneration != scaler.Generation {
		return nil
	}
	return c
}

// recommendationProvided is the scaler's RecommendationProvided condition, if any.
func recommendationProvided(scaler *v1alpha1.VerticalScaler) *metav1.Condition {
	if scaler == nil {
		return nil
	}
	return meta.FindStatusCondition(scaler.Status.Conditions, v1alpha1.ConditionRecommendationProvided)
}

// vpaRecommendationOf is the scaler's recommendation as the Vertical Pod Autoscaler writes one:
// per container, only the resources its policy controls; nil when the scaler has none for the
// target its spec names.
func vpaRecommendationOf(scaler *v1alpha1.VerticalScaler) *vpav1.RecommendedPodResources {
	rec := scaler.Status.Recommendation
	if rec == nil || v1alpha1.RecommendationTarget(rec) != scaler.Spec.Target().Key() {
		return nil
	}
	out := &vpav1.RecommendedPodResources{}
	for _, c := range rec.ContainerRecommendations {
		controlled := controlledResources(recommender.ContainerPolicyFor(&scaler.Spec, c.ContainerName))
		out.ContainerRecommendations = append(out.ContainerRecommendations, vpav1.RecommendedContainerResources{
			ContainerName:  c.ContainerName,
			Target:         only(c.Target, controlled),
			LowerBound:     only(c.LowerBound, controlled),
			UpperBound:     only(c.UpperBound, controlled),
			UncappedTarget: only(c.UncappedTarget, controlled),
		})
	}
	if len(out.ContainerRecommendations) == 0 {
		return nil
	}
	return out
}

// only returns the values of list for the resources names; nil when there are none.
func only(list corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	var out corev1.ResourceList
	for _, name := range names {
		if v, ok := list[name]; ok {
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = v.DeepCopy()
		}
	}
	return out
}
