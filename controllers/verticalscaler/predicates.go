package verticalscaler

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// DeploymentChanged lets through the Deployment events that can change what the controller
// reports or writes: creation and deletion (DeploymentFound), and updates that change the Pod
// template's containers by name or resources (which containers get a recommendation, whether
// they carry it). Everything else is filtered out before the map function: status updates
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

// containersChanged says whether the containers' names, order or resources differ.
func containersChanged(older, newer *appsv1.Deployment) bool {
	a, b := older.Spec.Template.Spec.Containers, newer.Spec.Template.Spec.Containers
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if a[i].Name != b[i].Name || !equality.Semantic.DeepEqual(a[i].Resources, b[i].Resources) {
			return true
		}
	}
	return false
}
