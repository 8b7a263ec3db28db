package verticalscaler

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// WorkloadChanged lets through the events of a workload of kind that can change what the
// controller reports or writes: creation and deletion (TargetFound, also when a relisting
// informer shows them as an update of another UID), and updates that change
// how its Pods are selected (its selector, or the Pod template's labels a CronJob's Pods are
// selected by), or the Pod template's containers or init containers by name, resources or
// restart policy (which containers get a recommendation, whether they carry it). Everything
// else is filtered out before the map function: status updates (several per rollout),
// scaling, and changes to images or annotations, the bulk of a busy cluster's workload events.
func WorkloadChanged(kind TemplateKind) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			// A workload deleted and created again under its name, which the informer shows as
			// an update when its watch restarted in between, is news whatever its spec.
			if e.ObjectOld == nil || e.ObjectNew == nil || e.ObjectOld.GetUID() != e.ObjectNew.GetUID() {
				return true
			}
			older, newer := kind.Template(e.ObjectOld), kind.Template(e.ObjectNew)
			oldSelector, oldErr := kind.Selector(e.ObjectOld)
			newSelector, newErr := kind.Selector(e.ObjectNew)
			return (oldErr == nil) != (newErr == nil) || !equality.Semantic.DeepEqual(oldSelector, newSelector) ||
				containersChanged(&older.Spec, &newer.Spec)
		},
	}
}

// containersChanged says whether the containers' or init containers' names, order, resources
// or restart policies differ: an init container becomes a native sidecar, recommended, by its
// restart policy.
func containersChanged(older, newer *corev1.PodSpec) bool {
	return listChanged(older.Containers, newer.Containers) || listChanged(older.InitContainers, newer.InitContainers)
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
