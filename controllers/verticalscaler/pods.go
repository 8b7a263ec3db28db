package verticalscaler

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/example/switchboard/apis/v1alpha1"
)

// TrimPod keeps of a Pod what the verticalscaler reads, when it alone watches Pods: the cache
// holds every Pod of the cluster (or of the watched namespaces), so each byte kept counts. It
// keeps the metadata that names and selects the Pod (and that an Event about it refers to:
// its UID and resourceVersion), its creation time (a Pod created since the admission policy was
// to size new Pods shows whether it does: admissionSizing), the usage annotations of the pod-annotations usage source, the
// containers' and native sidecars' names, resources and restart policies, the node, and of the
// status the phase, the Ready condition's status, the resize conditions, and each container's
// OOM kills, restarts and running resources. Nothing reads the rest: owners, generations, images, readiness per container, allocated resources, when a container started.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			Labels: pod.Labels, CreationTimestamp: pod.CreationTimestamp, DeletionTimestamp: pod.DeletionTimestamp},
		Spec: corev1.PodSpec{NodeName: pod.Spec.NodeName, Containers: trimContainers(pod.Spec.Containers),
			InitContainers: trimContainers(pod.Spec.InitContainers)},
		Status: corev1.PodStatus{Phase: pod.Status.Phase,
			ContainerStatuses: trimStatuses(pod.Status.ContainerStatuses), InitContainerStatuses: trimStatuses(pod.Status.InitContainerStatuses)},
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, v1alpha1.UsageAnnotationPrefix) {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	for _, c := range pod.Status.Conditions {
		switch c.Type {
		case corev1.PodReady:
			// Only whether the Pod is available.
			out.Status.Conditions = append(out.Status.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status})
		case corev1.PodResizePending, corev1.PodResizeInProgress:
			// Why a resize waits, and since when: it times out.
			out.Status.Conditions = append(out.Status.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status,
				Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime})
		}
	}
	return out, nil
}

func trimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, 0, len(cs))
	for _, c := range cs {
		out = append(out, corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy})
	}
	return out
}

// trimStatuses keeps of each container status its name, restarts, running resources and of its
// states only an OOM kill's reason and time, which the usage poller counts.
func trimStatuses(ss []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(ss) == 0 {
		return nil
	}
	terminated := func(s corev1.ContainerState) corev1.ContainerState {
		if s.Terminated == nil {
			return corev1.ContainerState{}
		}
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: s.Terminated.Reason, FinishedAt: s.Terminated.FinishedAt}}
	}
	out := make([]corev1.ContainerStatus, 0, len(ss))
	for _, s := range ss {
		out = append(out, corev1.ContainerStatus{Name: s.Name, RestartCount: s.RestartCount,
			State: terminated(s.State), LastTerminationState: terminated(s.LastTerminationState), Resources: s.Resources})
	}
	return out
}

// VerticalScalersOfPod is the map function of the Pod watch: a Pod maps to the VerticalScalers
// of its namespace whose mode changes running Pods and whose recorded target selector selects
// it, through the cache (an in-memory list of the namespace's VerticalScalers, usually a few).
func VerticalScalersOfPod(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list v1alpha1.VerticalScalerList
		if err := reader.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing VerticalScalers of a Pod's namespace failed")
			return nil
		}
		var requests []reconcile.Request
		for i := range list.Items {
			vs := &list.Items[i]
			if !changesRunningPods(vs) || vs.Status.TargetSelector == nil {
				continue
			}
			selector, err := metav1.LabelSelectorAsSelector(vs.Status.TargetSelector)
			if err != nil || !selector.Matches(labels.Set(obj.GetLabels())) {
				continue
			}
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(vs)})
		}
		return requests
	}
}

// PodChanged lets through the Pod events that can change what the controller does to a
// workload's running Pods: creation and deletion, and updates of the labels (which workload
// selects it), the phase, readiness, the resize conditions, and the containers' requested or
// running resources and restarts. Usage and OOM kills reach the poller, not the controller.
func PodChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			older, ok1 := e.ObjectOld.(*corev1.Pod)
			newer, ok2 := e.ObjectNew.(*corev1.Pod)
			if !ok1 || !ok2 {
				return true
			}
			return !equality.Semantic.DeepEqual(older.Labels, newer.Labels) || older.DeletionTimestamp != newer.DeletionTimestamp ||
				older.Status.Phase != newer.Status.Phase || !equality.Semantic.DeepEqual(older.Status.Conditions, newer.Status.Conditions) ||
				containersChanged(&older.Spec, &newer.Spec) || statusResourcesChanged(older.Status.ContainerStatuses, newer.Status.ContainerStatuses)
		},
	}
}

func statusResourcesChanged(a, b []corev1.ContainerStatus) bool {
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].RestartCount != b[i].RestartCount || !equality.Semantic.DeepEqual(a[i].Resources, b[i].Resources) {
			return true
		}
	}
	return false
}
