package shards

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// MetadataClient wraps c so that the lists and watches of the resources namespaced says are
// namespaced carry the Filter's selector and are filtered by its ranges, as the informers'
// are: for the watches that store nothing (package metawatch). A change of ranges ends their
// open watches as expired, so that each starts over from a new list with the new ranges. Gets,
// patches and deletes pass through unchanged.
func (f *Filter) MetadataClient(c metadata.Interface, namespaced func(schema.GroupVersionResource) bool) metadata.Interface {
	return &filteredMetadata{filter: f, next: c, namespaced: namespaced}
}

type filteredMetadata struct {
	filter     *Filter
	next       metadata.Interface
	namespaced func(schema.GroupVersionResource) bool
}

func (m *filteredMetadata) Resource(resource schema.GroupVersionResource) metadata.Getter {
	next := m.next.Resource(resource)
	if !m.namespaced(resource) {
		return next
	}
	return &filteredGetter{filteredResource: newFilteredResource(m.filter, next), next: next}
}

// filteredGetter is a filtered resource over every namespace, which gives filtered resources
// of one namespace.
type filteredGetter struct {
	*filteredResource
	next metadata.Getter
}

func (g *filteredGetter) Namespace(namespace string) metadata.ResourceInterface {
	return newFilteredResource(g.lw.filter, g.next.Namespace(namespace))
}

// filteredResource lists and watches through the Filter.
type filteredResource struct {
	metadata.ResourceInterface
	lw *filteredListerWatcher
}

func newFilteredResource(f *Filter, next metadata.ResourceInterface) *filteredResource {
	return &filteredResource{ResourceInterface: next, lw: &filteredListerWatcher{filter: f, next: &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			return next.List(ctx, options)
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return next.Watch(ctx, options)
		},
	}}}
}

func (r *filteredResource) List(ctx context.Context, options metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	obj, err := r.lw.ListWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*metav1.PartialObjectMetadataList)
	if !ok {
		return nil, fmt.Errorf("filtering a metadata list by shard: got %T", obj)
	}
	return list, nil
}

func (r *filteredResource) Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return r.lw.WatchWithContext(ctx, options)
}
