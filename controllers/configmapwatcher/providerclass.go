package configmapwatcher

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/example/switchboard/internal/podrefs"
)

// This file is Reloader's --enable-csi-integration. The Secrets Store CSI driver mounts the
// objects a SecretProviderClass names from an external store, and writes, for each Pod and
// SecretProviderClass it mounted, a SecretProviderClassPodStatus with the version of each object
// mounted; with secret rotation on, it updates those versions when the store's change. The
// SecretProviderClass itself does not change. So a SecretProviderClass's data here is the
// versions its namespace's SecretProviderClassPodStatus objects report, per object id, and its
// own annotations (Reloader's ignore and match) are read from the SecretProviderClass.
//
// The record keeps, per object id, a digest of one version. The Pods of a workload are rotated
// one by one, so a namespace may report two versions of an object for a while: the one recorded
// counts while some Pod still reports it, and the workload rolls once none does. That is one roll
// per change of the store, as Reloader's (which rolls on the first Pod's update and skips the
// others, whose hash its mark already carries). A SecretProviderClass no Pod mounts (the
// workload just created, or scaled to zero) is left out of the record, so that a Pod's first
// mount rolls nothing, as Reloader ignores the creation of a SecretProviderClassPodStatus.

// The Secrets Store CSI driver's kinds, as its CRDs (secrets-store.csi.x-k8s.io/v1) serve them.
var (
	providerClassGVK  = schema.GroupVersionKind{Group: "secrets-store.csi.x-k8s.io", Version: "v1", Kind: "SecretProviderClass"}
	providerStatusGVK = schema.GroupVersionKind{Group: "secrets-store.csi.x-k8s.io", Version: "v1", Kind: "SecretProviderClassPodStatus"}
)

// ProviderStatusObject is an empty SecretProviderClassPodStatus, read as an unstructured object:
// the driver's API is not among the manager's dependencies.
func ProviderStatusObject() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(providerStatusGVK)
	return obj
}

// No RBAC marker: the chart grants reading SecretProviderClasses and SecretProviderClassPodStatuses
// only with controllers.configmapwatcher.csiIntegration (--enable-csi-integration).

// providerObjects are the versions of a SecretProviderClass's objects, by object id, as the
// SecretProviderClassPodStatus objects of a namespace report them: the set of versions of each.
type providerObjects map[string]map[string]bool

// providerStatus is what the configmapwatcher reads of one SecretProviderClassPodStatus: the
// SecretProviderClass it is about and the version of each object mounted.
type providerStatus struct {
	class   string
	objects map[string]string
}

// providerStatusOf reads a SecretProviderClassPodStatus; an object it cannot read has no class.
func providerStatusOf(obj client.Object) providerStatus {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return providerStatus{}
	}
	class, _, _ := unstructured.NestedString(u.Object, "status", "secretProviderClassName")
	objects, _, _ := unstructured.NestedSlice(u.Object, "status", "objects")
	out := providerStatus{class: class, objects: map[string]string{}}
	for _, o := range objects {
		m, ok := o.(map[string]any)
		if !ok {
			continue
		}
		id, _ := m["id"].(string)
		version, _ := m["version"].(string)
		out.objects[id] = version
	}
	return out
}

// equal says whether two statuses report the same class and versions: anything else of a
// SecretProviderClassPodStatus (its mount state, labels) changes no data.
func (p providerStatus) equal(q providerStatus) bool {
	return p.class == q.class && maps.Equal(p.objects, q.objects)
}

// readProviderStatuses returns, per SecretProviderClass named by a SecretProviderClassPodStatus
// of namespace, the versions of its objects, from reader (the manager's cache).
func readProviderStatuses(ctx context.Context, reader client.Reader, namespace string) (map[string]providerObjects, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(providerStatusGVK.GroupVersion().WithKind(providerStatusGVK.Kind + "List"))
	if err := reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing SecretProviderClassPodStatuses: %w", err)
	}
	out := map[string]providerObjects{}
	for i := range list.Items {
		if !list.Items[i].GetDeletionTimestamp().IsZero() {
			continue // its Pod is gone
		}
		status := providerStatusOf(&list.Items[i])
		if status.class == "" {
			continue
		}
		if out[status.class] == nil {
			out[status.class] = providerObjects{}
		}
		for id, version := range status.objects {
			if out[status.class][id] == nil {
				out[status.class][id] = map[string]bool{}
			}
			out[status.class][id][version] = true
		}
	}
	return out, nil
}

// readProviderClassAnnotations reads the annotations of a SecretProviderClass, where Reloader reads
// its ignore and match annotations; none when it is missing (the driver's statuses still count,
// as Reloader's).
func readProviderClassAnnotations(ctx context.Context, reader client.Reader, namespace, name string) (map[string]string, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(providerClassGVK)
	err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading SecretProviderClass %s: %w", name, err)
	}
	return obj.GetAnnotations(), nil
}

// versionDigests is the record of a SecretProviderClass: per object id, the digest of the
// version recorded (before) while some Pod still reports it, else of one version reported (the
// smallest digest, so that the choice does not depend on the order of a list).
func (k *digestKey) versionDigests(src podrefs.Source, objects providerObjects, before map[string]string) map[string]string {
	out := map[string]string{}
	for id, versions := range objects {
		var digests []string
		for version := range versions {
			digests = append(digests, k.valueDigest(src, "objects", id, []byte(version)))
		}
		if slices.Contains(digests, before[id]) {
			out[id] = before[id]
			continue
		}
		out[id] = slices.Min(digests)
	}
	return out
}

// providerStatusHandler maps the changes of SecretProviderClassPodStatus objects to the
// workloads that roll on their SecretProviderClass (workloadsFor): a creation, an update that
// changes the versions reported, and a deletion (a Pod gone may have been the last to report
// the recorded version). A creation is a Pod's first mount, which rolls nothing, but its
// reconcile records the versions mounted: the driver mounts as the Pod starts, which may be
// after the workload's last event, and without that record the next rotation would be taken
// for the first mount and roll nothing (Reloader rolls on it).
func providerStatusHandler(workloadsFor func(ctx context.Context, namespace string, src podrefs.Source) []mappedWorkload) handler.TypedEventHandler[*unstructured.Unstructured, reconcile.Request] {
	enqueue := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		class := providerStatusOf(obj).class
		if class == "" {
			return
		}
		for _, w := range workloadsFor(ctx, obj.GetNamespace(), podrefs.Source{Kind: podrefs.SecretProviderClass, Name: class}) {
			q.Add(w.Request)
		}
	}
	return handler.TypedFuncs[*unstructured.Unstructured, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			before, after := providerStatusOf(e.ObjectOld), providerStatusOf(e.ObjectNew)
			if before.equal(after) {
				return
			}
			enqueue(ctx, e.ObjectNew, q)
			if before.class != after.class {
				enqueue(ctx, e.ObjectOld, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
	}
}
