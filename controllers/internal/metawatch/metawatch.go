// Package metawatch follows the objects of one resource, metadata only, and stores none of
// them: what a controller needs when an event should reconcile something but the objects
// themselves need not stay in memory (the configmapwatcher's ConfigMaps and Secrets, myapp's
// Deployments and Services), because the controller reads the few it needs from the API server
// when it reconciles.
//
// An informer would keep every object (as metadata, still some hundreds of bytes each) only to
// replay them after a relist. So a watch starts at the collection's current resourceVersion,
// read with a one-item list, and resumes from the last resourceVersion it saw (bookmarks keep it
// fresh) when the connection drops. When the API server no longer has that resourceVersion,
// events were lost: the watch starts over from a new list and says so (Watch.OnLost), and the
// controller enqueues what an informer's relist would have: everything.
package metawatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// errResourceVersionGone ends a watch whose resourceVersion the API server no longer has: the
// events since then are lost, and only a new list and a resync can make up for them.
var errResourceVersionGone = errors.New("resourceVersion gone")

// DefaultRetry is the backoff between failed lists and watches.
var DefaultRetry = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 8, Cap: 30 * time.Second}

// Watch follows the objects of Resource in Namespace ("" for every namespace) that match
// LabelSelector and FieldSelector (empty for all), metadata only, storing nothing.
type Watch struct {
	Client        metadata.Interface
	Resource      schema.GroupVersionResource
	Namespace     string
	LabelSelector string
	FieldSelector string
	// Retry is the backoff between failed lists and watches.
	Retry wait.Backoff
	Log   logr.Logger
	// OnEvent is called with every object added, changed or deleted.
	OnEvent func(ctx context.Context, eventType watch.EventType, obj *metav1.PartialObjectMetadata)
	// OnLost is called when events were lost, once the watch has a new starting point: each
	// change since is then seen, and OnLost makes up for those before. An error is logged and
	// OnLost called again after a new list.
	OnLost func(ctx context.Context) error
}

// Run watches until ctx ends, starting over from a new list when the watch's resourceVersion
// is gone. started is called once Run has its first starting point, or when it stops before:
// from then on every change reaches OnEvent.
func (w *Watch) Run(ctx context.Context, started func()) {
	first := true
	defer func() {
		if first {
			started() // stopped before its starting point: nobody must wait forever
		}
	}()
	backoff := w.Retry
	for ctx.Err() == nil {
		rv, err := w.currentResourceVersion(ctx)
		if ctx.Err() != nil {
			return // stopping: the error, if any, is the cancellation
		}
		if err != nil {
			w.Log.Error(err, "Listing "+w.Resource.Resource+" failed; retrying")
			Sleep(ctx, backoff.Step())
			continue
		}
		if first {
			first = false
			started()
		} else if err := w.OnLost(ctx); err != nil {
			w.Log.Error(err, "Making up for the events the "+w.Resource.Resource+" watch lost failed; retrying")
			Sleep(ctx, backoff.Step())
			continue
		}
		backoff = w.Retry
		err = w.follow(ctx, rv)
		w.Log.V(1).Info(w.Resource.Resource+" watch starts over", "reason", err)
	}
}

// currentResourceVersion reads the resourceVersion of the collection with a list of at most one
// item.
func (w *Watch) currentResourceVersion(ctx context.Context) (string, error) {
	list, err := w.Client.Resource(w.Resource).Namespace(w.Namespace).List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: w.LabelSelector, FieldSelector: w.FieldSelector})
	if err != nil {
		return "", err
	}
	return list.ResourceVersion, nil
}

// follow watches from rv, reconnecting from the last resourceVersion seen, until ctx ends or
// that resourceVersion is gone. It returns why it stopped.
func (w *Watch) follow(ctx context.Context, rv string) error {
	backoff := w.Retry
	for ctx.Err() == nil {
		watcher, err := w.Client.Resource(w.Resource).Namespace(w.Namespace).Watch(ctx, metav1.ListOptions{
			ResourceVersion: rv, AllowWatchBookmarks: true, LabelSelector: w.LabelSelector, FieldSelector: w.FieldSelector})
		switch {
		case err != nil && ctx.Err() != nil:
			return context.Cause(ctx) // stopping
		case resourceVersionGone(err):
			return errResourceVersionGone
		case err != nil:
			w.Log.Error(err, "Watching "+w.Resource.Resource+" failed; retrying", "namespace", w.Namespace)
			Sleep(ctx, backoff.Step())
			continue
		}
		last := rv
		rv, err = w.drain(ctx, watcher, rv)
		if errors.Is(err, errResourceVersionGone) {
			return err
		}
		// A watch that ended at once, or with an error, waits before the next: an API server
		// that closes every watch must not get a request loop.
		if err != nil || rv == last {
			w.Log.V(1).Info(w.Resource.Resource+" watch ended; resuming", "namespace", w.Namespace, "resourceVersion", rv, "reason", err)
			Sleep(ctx, backoff.Step())
			continue
		}
		backoff = w.Retry
	}
	return context.Cause(ctx)
}

// drain handles the watcher's events until it ends, and returns the last resourceVersion seen
// with the reason the watch ended (nil when the API server closed it).
func (w *Watch) drain(ctx context.Context, watcher watch.Interface, rv string) (string, error) {
	defer watcher.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv, context.Cause(ctx)
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return rv, nil
			}
			if ev.Type == watch.Error {
				err := apierrors.FromObject(ev.Object)
				if resourceVersionGone(err) {
					return rv, errResourceVersionGone
				}
				return rv, err
			}
			obj, ok := ev.Object.(*metav1.PartialObjectMetadata)
			if !ok {
				return rv, fmt.Errorf("unexpected %T in the %s watch", ev.Object, w.Resource.Resource)
			}
			rv = obj.ResourceVersion
			if ev.Type != watch.Bookmark {
				w.OnEvent(ctx, ev.Type, obj)
			}
		}
	}
}

// resourceVersionGone tells whether err says that the API server no longer has the
// resourceVersion a watch asked for.
func resourceVersionGone(err error) bool {
	return apierrors.IsGone(err) || apierrors.IsResourceExpired(err)
}

// Sleep waits d or until ctx ends: the pause of a retry loop that must stop with its context.
func Sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Source is a controller's source of the events of Resource's objects over Namespaces (none for
// every namespace): one Watch per namespace, whose events Map turns into the requests to
// enqueue. Its workers start only once every namespace's watch has its starting point
// (WaitForSync), so a change either reaches the queue or happened before the controller's first
// reconcile of what it maps to.
type Source struct {
	Client        metadata.Interface
	Resource      schema.GroupVersionResource
	Namespaces    []string
	LabelSelector string
	Log           logr.Logger
	// Map returns the requests an event of obj enqueues; none for an event to drop.
	Map func(ctx context.Context, eventType watch.EventType, obj *metav1.PartialObjectMetadata) []reconcile.Request
	// Resync returns the requests to enqueue when the events of namespace ("" for all) were
	// lost: every primary object there that an event could have mapped to.
	Resync func(ctx context.Context, namespace string) ([]reconcile.Request, error)

	synced chan struct{}
}

// String names the source in controller-runtime's logs.
func (s *Source) String() string {
	return s.Resource.Resource + " metadata watch (uncached)"
}

// Start runs one watch per namespace until ctx ends, into queue.
func (s *Source) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	namespaces := s.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	s.synced = make(chan struct{})
	var started sync.WaitGroup
	started.Add(len(namespaces))
	for _, ns := range namespaces {
		w := &Watch{Client: s.Client, Resource: s.Resource, Namespace: ns, LabelSelector: s.LabelSelector, Retry: DefaultRetry,
			Log: s.Log.WithValues("watch", s.Resource.Resource, "namespace", ns),
			OnEvent: func(ctx context.Context, eventType watch.EventType, obj *metav1.PartialObjectMetadata) {
				for _, req := range s.Map(ctx, eventType, obj) {
					queue.Add(req)
				}
			},
			OnLost: func(ctx context.Context) error {
				requests, err := s.Resync(ctx, ns)
				if err != nil {
					return err
				}
				for _, req := range requests {
					queue.Add(req)
				}
				s.Log.Info("Enqueued every object the "+s.Resource.Resource+" watch could have reached: it lost events",
					"namespace", ns, "requests", len(requests))
				return nil
			}}
		go w.Run(ctx, started.Done)
	}
	go func() {
		started.Wait()
		close(s.synced)
	}()
	return nil
}

// WaitForSync returns once every namespace's watch has its starting resourceVersion.
func (s *Source) WaitForSync(ctx context.Context) error {
	return WaitStarted(ctx, s.synced, s.Resource.Resource)
}

// WaitStarted returns nil once started is closed (the watches of what names have their
// starting points), and an error when ctx ends first: a source's WaitForSync.
func WaitStarted(ctx context.Context, started <-chan struct{}, what string) error {
	select {
	case <-started:
		if ctx.Err() == nil {
			return nil
		}
	case <-ctx.Done():
	}
	return fmt.Errorf("waiting for the %s watch to start: %w", what, context.Cause(ctx))
}
