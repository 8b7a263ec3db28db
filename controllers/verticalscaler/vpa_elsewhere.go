package verticalscaler

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/example/switchboard/apis/v1alpha1"
	vpav1 "github.com/example/switchboard/apis/vpa/v1"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// scalerRecommenders are the spec.recommenders of the VerticalScaler made from a
// VerticalPodAutoscaler that names recommenders: none when it is meant for own, whose
// recommendation the manager draws itself; otherwise the recommenders it is meant for (the
// VPA's default one when it names none), whose recommendation the VerticalScaler then applies,
// as the VPA's updater and admission controller apply any recommender's.
func scalerRecommenders(recommenders []*vpav1.RecommenderSelector, own string) []v1alpha1.RecommenderSelector {
	if meantFor(recommenders, own) {
		return nil
	}
	if len(recommenders) == 0 {
		return []v1alpha1.RecommenderSelector{{Name: vpav1.DefaultRecommenderName}}
	}
	out := make([]v1alpha1.RecommenderSelector, 0, len(recommenders))
	for _, r := range recommenders {
		if r != nil {
			out = append(out, v1alpha1.RecommenderSelector{Name: r.Name})
		}
	}
	return out
}

// readVPARecommendation reads the recommendation in a VerticalPodAutoscaler's status; nil when
// it has none or it cannot be read (another recommender's to fix).
func readVPARecommendation(vpa *unstructured.Unstructured) *vpav1.RecommendedPodResources {
	raw, found, err := unstructured.NestedMap(vpa.Object, "status", "recommendation")
	if err != nil || !found {
		return nil
	}
	var out vpav1.RecommendedPodResources
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &out); err != nil {
		return nil
	}
	return &out
}

// scalerRecommendationOf is the recommendation another recommender wrote into a
// VerticalPodAutoscaler's status, as its VerticalScaler's status carries it for target.
func scalerRecommendationOf(rec *vpav1.RecommendedPodResources, target string) *v1alpha1.Recommendation {
	if rec == nil || len(rec.ContainerRecommendations) == 0 {
		return nil
	}
	out := &v1alpha1.Recommendation{Target: target}
	for _, c := range rec.ContainerRecommendations {
		out.ContainerRecommendations = append(out.ContainerRecommendations, v1alpha1.ContainerRecommendation{
			ContainerName: c.ContainerName, Target: c.Target, LowerBound: c.LowerBound, UpperBound: c.UpperBound, UncappedTarget: c.UncappedTarget})
	}
	return out
}

// passRecommendation copies the recommendation another recommender wrote into the
// VerticalPodAutoscaler's status into its VerticalScaler's, which applies it, when they
// differ. The VerticalScaler's status has two writers then, each with a merge patch of its own
// fields: this controller the recommendation, the verticalscaler the rest.
func (r *VPAReconciler) passRecommendation(ctx context.Context, vpa *unstructured.Unstructured, scaler *v1alpha1.VerticalScaler) error {
	if scaler == nil {
		// Just made: its watch brings it back.
		return nil
	}
	want := scalerRecommendationOf(readVPARecommendation(vpa), scaler.Spec.Target().Key())
	if equality.Semantic.DeepEqual(want, scaler.Status.Recommendation) {
		return nil
	}
	before := scaler.DeepCopy()
	scaler.Status.Recommendation = want
	if err := r.Client.Status().Patch(ctx, scaler, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("passing the recommendation of VerticalPodAutoscaler %s to its VerticalScaler: %w", vpa.GetName(), err)
	}
	return nil
}

// warnUnsupported records a warning Event on a VerticalPodAutoscaler of another recommender that
// Switchboard cannot apply: its status is that recommender's to write.
func (r *VPAReconciler) warnUnsupported(vpa *unstructured.Unstructured, problems []string) {
	for _, p := range problems {
		r.Recorder.Eventf(vpa, nil, corev1.EventTypeWarning, vpav1.ConditionConfigUnsupported, "Apply", "%s", p)
	}
}

// RecommendationWrittenElsewhere lets through the updates of an object whose status
// recommendation another recommender writes, when the recommendation changed: for a
// VerticalScaler or a VerticalPodAutoscaler whose spec.recommenders name only recommenders
// other than *own (read when the event comes, after the flags are parsed), the recommendation is
// what the controller applies, so a change of it is news even though the generation is the same.
func RecommendationWrittenElsewhere(own *string) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			before, _ := writtenElsewhere(e.ObjectOld, *own)
			after, elsewhere := writtenElsewhere(e.ObjectNew, *own)
			return elsewhere && !equality.Semantic.DeepEqual(before, after)
		},
	}
}

// writtenElsewhere returns the status recommendation of a VerticalScaler or a
// VerticalPodAutoscaler, and whether recommenders other than own write it.
func writtenElsewhere(obj client.Object, own string) (any, bool) {
	switch o := obj.(type) {
	case *v1alpha1.VerticalScaler:
		return o.Status.Recommendation, recommender.RecommendedElsewhere(&o.Spec, own) != ""
	case *unstructured.Unstructured:
		rec, _, _ := unstructured.NestedFieldNoCopy(o.Object, "status", "recommendation")
		return rec, !meantFor(readRecommenders(o), own)
	}
	return nil, false
}
