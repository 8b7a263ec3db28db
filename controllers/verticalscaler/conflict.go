package verticalscaler

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/indexers"
)

// olderScalerOf returns the VerticalScaler that sizes vs's target instead of vs: of those that
// name the same workload, the oldest (by creation time, then name) sizes it, so that no
// workload is sized twice, whether its VerticalScalers were written by hand or made from
// VerticalPodAutoscalers. nil when vs is that one.
func (r *Reconciler) olderScalerOf(ctx context.Context, vs *v1alpha1.VerticalScaler) (*v1alpha1.VerticalScaler, error) {
	var list v1alpha1.VerticalScalerList
	if err := r.Client.List(ctx, &list, client.InNamespace(vs.Namespace),
		client.MatchingFields{indexers.VerticalScalerTargetField: vs.Spec.Target().Key()}); err != nil {
		return nil, fmt.Errorf("listing the VerticalScalers of %s: %w", vs.Spec.Target().Key(), err)
	}
	return oldestBefore(vs, list.Items), nil
}

// oldestBefore returns, of scalers, the oldest that names vs's target and is older than vs;
// nil when none is.
func oldestBefore(vs *v1alpha1.VerticalScaler, scalers []v1alpha1.VerticalScaler) *v1alpha1.VerticalScaler {
	key := vs.Spec.Target().Key()
	var oldest *v1alpha1.VerticalScaler
	for i := range scalers {
		other := &scalers[i]
		if other.UID != vs.UID && other.Spec.Target().Key() == key && older(other, vs) && (oldest == nil || older(other, oldest)) {
			oldest = other
		}
	}
	return oldest
}

// older says whether a was created before b, or at the same second with a smaller name.
func older(a, b *v1alpha1.VerticalScaler) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// conflict is the TargetFound problem of a VerticalScaler whose target other sizes.
func conflict(key string, other *v1alpha1.VerticalScaler) *targetProblem {
	by := "VerticalScaler " + other.Name
	if owner := controllerKindOf(other); owner != "" {
		by += " (made from the " + owner + " of that name)"
	}
	return &targetProblem{v1alpha1.ReasonTargetConflict, fmt.Sprintf(
		"%s is sized by %s, which names it too and is older: a workload is sized by one VerticalScaler or VerticalPodAutoscaler only", key, by)}
}

// controllerKindOf is the kind of the controller owner of vs, if any.
func controllerKindOf(vs *v1alpha1.VerticalScaler) string {
	for _, ref := range vs.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return ref.Kind
		}
	}
	return ""
}

// VerticalScalersInConflict is the map function of the VerticalScalers' watch of themselves: a
// VerticalScaler maps to the others of its namespace refused for a conflict (TargetConflict)
// whose refusal it may change: those that name the workload it names now (the one that sizes it
// may be another now), and those that no older VerticalScaler names the workload of any longer
// (it went, or names another workload). Through the cache: an in-memory list of the namespace's
// VerticalScalers, usually a few.
func VerticalScalersInConflict(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		changed, ok := obj.(*v1alpha1.VerticalScaler)
		if !ok {
			return nil
		}
		var list v1alpha1.VerticalScalerList
		if err := reader.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing VerticalScalers of a VerticalScaler's namespace failed")
			return nil
		}
		target := changed.Spec.Target().Key()
		var requests []reconcile.Request
		for i := range list.Items {
			vs := &list.Items[i]
			found := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionTargetFound)
			if vs.UID == changed.UID || found == nil || found.Reason != v1alpha1.ReasonTargetConflict {
				continue
			}
			if vs.Spec.Target().Key() == target || oldestBefore(vs, list.Items) == nil {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(vs)})
			}
		}
		return requests
	}
}
