package verticalscaler

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	vpav1 "github.com/example/switchboard/apis/vpa/v1"
)

// +kubebuilder:rbac:groups=autoscaling.k8s.io,resources=verticalpodautoscalercheckpoints,verbs=list;watch;delete

// NewVerticalPodAutoscalerCheckpoint returns an empty VerticalPodAutoscalerCheckpoint, the VPA
// recommender's history of one container, read as an unstructured object.
func NewVerticalPodAutoscalerCheckpoint() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(vpav1.GroupVersion.WithKind(vpav1.CheckpointKind))
	return u
}

// checkpointOwner is the name of the VerticalPodAutoscaler whose history a
// VerticalPodAutoscalerCheckpoint holds; "" when it names none.
func checkpointOwner(checkpoint *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(checkpoint.Object, "spec", "vpaObjectName")
	return name
}

// VerticalPodAutoscalerOfCheckpoint maps a VerticalPodAutoscalerCheckpoint to the
// VerticalPodAutoscaler whose history it holds (spec.vpaObjectName), so that the reconcile of
// one that no longer exists collects its checkpoints, as the VPA's recommender does: whenever
// one is left, at start included, not only when the VerticalPodAutoscaler's deletion is seen.
func VerticalPodAutoscalerOfCheckpoint(client.Reader) handler.MapFunc {
	return func(_ context.Context, obj client.Object) []reconcile.Request {
		checkpoint, ok := obj.(*unstructured.Unstructured)
		if !ok || checkpointOwner(checkpoint) == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: checkpoint.GetNamespace(), Name: checkpointOwner(checkpoint)}}}
	}
}

// TrimVPACheckpoint keeps in the cache only what mapping a VerticalPodAutoscalerCheckpoint and
// deleting it need: its name, namespace, UID and spec, not the histograms of its status, which
// the usage poller reads uncached once.
func TrimVPACheckpoint(obj any) (any, error) {
	checkpoint, ok := obj.(*unstructured.Unstructured)
	if !ok || checkpoint.GetKind() != vpav1.CheckpointKind {
		return obj, nil
	}
	out := NewVerticalPodAutoscalerCheckpoint()
	out.SetNamespace(checkpoint.GetNamespace())
	out.SetName(checkpoint.GetName())
	out.SetUID(checkpoint.GetUID())
	out.SetResourceVersion(checkpoint.GetResourceVersion())
	if spec, found, _ := unstructured.NestedMap(checkpoint.Object, "spec"); found {
		out.Object["spec"] = spec
	}
	return out, nil
}

// collectCheckpoints deletes the VerticalPodAutoscalerCheckpoints of the VerticalPodAutoscaler
// key, which no longer exists: nothing reads them any more.
func (r *VPAReconciler) collectCheckpoints(ctx context.Context, key types.NamespacedName) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(vpav1.GroupVersion.WithKind(vpav1.CheckpointKind + "List"))
	if err := r.Client.List(ctx, list, client.InNamespace(key.Namespace)); err != nil {
		return fmt.Errorf("listing the VerticalPodAutoscalerCheckpoints of %s: %w", key.Name, err)
	}
	for i := range list.Items {
		checkpoint := &list.Items[i]
		if checkpointOwner(checkpoint) != key.Name {
			continue
		}
		uid := checkpoint.GetUID()
		if err := r.Client.Delete(ctx, checkpoint, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting VerticalPodAutoscalerCheckpoint %s of the deleted VerticalPodAutoscaler %s: %w", checkpoint.GetName(), key.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Deleted the checkpoint of a VerticalPodAutoscaler that no longer exists", "checkpoint", checkpoint.GetName())
	}
	return nil
}
