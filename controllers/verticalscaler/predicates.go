package verticalscaler

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// DeploymentChanged lets through the Deployment events that can change what the controller
// reports or writes: creation and deletion (DeploymentFound), and updates that change the Pod
// template's containers or init containers by name, resources or restart policy (which
// containers get a recommendation, whether they carry it). Everything else is filtered out before the map function: status updates
// (several per rollout), scaling, and changes to images, labels or annotations, the bulk of a
// busy cluster's Deployment events.
func DeploymentChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			older, ok1 := e.ObjectOld.(*appsv1.Deployment)
			newer, ok2 := e.ObjectNew.(*appsv1.Deployment)
			if !ok1 || !ok2 {
				return true
			}
			return containersChanged(older, newer)
		},
	}
}

// containersChanged says whether the containers' or init containers' names, order, resources
// or restart policies differ: an init container becomes a native sidecar, recommended, by its
// restart policy.
func containersChanged(older, newer *appsv1.Deployment) bool {
	return listChanged(older.Spec.Template.Spec.Containers, newer.Spec.Template.Spec.Containers) ||
		listChanged(older.Spec.Template.Spec.InitContainers, newer.Spec.Template.Spec.InitContainers)
}

func listChanged(a, b []corev1.Container) bool {
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if a[i].Name != b[i].Name || !equality.Semantic.DeepEqual(a[i].Resources, b[i].Resources) ||
			!equality.Semantic.DeepEqual(a[i].RestartPolicy, b[i].RestartPolicy) {
			return true
		}
	}
	return false
}
