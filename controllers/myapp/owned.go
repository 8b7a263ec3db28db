package myapp

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/metawatch"
)

// OwnedChanges returns the source of the changes of the objects of resource (Deployments or
// Services) over namespaces (none for all) that match labelSelector: a metadata-only watch
// through c that stores nothing (metawatch.Source). Each change and deletion of an object a MyApp controls
// reconciles that MyApp; a creation does not, since the controller created the object itself,
// in the reconcile that saw the result (after a restart, every MyApp's own creation event
// reconciles it anyway).
//
// myapp keeps none of its Deployments and Services in memory: a reconcile reads the two it
// needs from the API server's cache (Reconciler.getOwned). Caching them would cost most of
// myapp's memory per MyApp (README, Performance, has the figures).
func OwnedChanges(mgr ctrl.Manager, c metadata.Interface, namespaces []string, resource schema.GroupVersionResource, labelSelector string) source.Source {
	cache := mgr.GetClient()
	return &metawatch.Source{Client: c, Resource: resource, Namespaces: namespaces, LabelSelector: labelSelector,
		Log: mgr.GetLogger().WithValues("controller", ControllerName),
		Map: func(_ context.Context, eventType watch.EventType, obj *metav1.PartialObjectMetadata) []reconcile.Request {
			if eventType == watch.Added {
				return nil
			}
			return controllerOf(obj)
		},
		Resync: func(ctx context.Context, namespace string) ([]reconcile.Request, error) {
			var apps v1alpha1.MyAppList
			if err := cache.List(ctx, &apps, client.InNamespace(namespace)); err != nil {
				return nil, fmt.Errorf("listing MyApps: %w", err)
			}
			requests := make([]reconcile.Request, 0, len(apps.Items))
			for i := range apps.Items {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&apps.Items[i])})
			}
			return requests, nil
		}}
}

// controllerOf returns the request of the MyApp that controls obj, if one does.
func controllerOf(obj *metav1.PartialObjectMetadata) []reconcile.Request {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "MyApp" {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != v1alpha1.GroupVersion.Group {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}}}
}
