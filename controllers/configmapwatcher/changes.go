package configmapwatcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// configMapsResource is what the ConfigMap watch lists and watches.
var configMapsResource = corev1.SchemeGroupVersion.WithResource("configmaps")

// errResourceVersionGone ends a watch whose resourceVersion the API server no longer has: the
// events since then are lost, and only a new list and a resync can make up for them.
var errResourceVersionGone = errors.New("resourceVersion gone")

// configMapChanges is the controller's source of ConfigMap events: a metadata-only watch of
// ConfigMaps that stores nothing. Each added, changed or deleted ConfigMap enqueues the
// Deployments that reload on it, found through the shared index on the Deployment cache.
//
// An informer would keep every ConfigMap of the cluster in memory (as metadata, but still some
// hundreds of bytes each) only to replay them after a relist. This controller needs none of that state: the hash on
// each Deployment is the record of what it last rolled to, and Reconcile reads the few
// ConfigMaps it needs from the API server. So the watch starts at the collection's current
// resourceVersion, read with a one-item list, and resumes from the last resourceVersion it saw
// (bookmarks keep it fresh) when the connection drops. When the API server no longer has that
// resourceVersion, events were lost: the watch starts over and enqueues every opted-in
// Deployment of the namespace, which is what an informer's relist would amount to.
//
// It is a syncing source: the controller starts its workers only once each namespace's watch
// has its starting resourceVersion. A reconcile therefore reads ConfigMaps at or after that
// version, and any change after it reaches the watch, so no change falls between the two.
type configMapChanges struct {
	client metadata.Interface
	// namespaces are watched one watch each; a single "" watches every namespace.
	namespaces []string
	// deploymentsFor maps a ConfigMap to the requests of the Deployments that reload on it.
	deploymentsFor func(context.Context, client.Object) []reconcile.Request
	// optedIn lists the requests of every opted-in Deployment of a namespace ("" for all).
	optedIn func(ctx context.Context, namespace string) ([]reconcile.Request, error)
	// retry is the backoff between failed lists and watches.
	retry wait.Backoff
	log   logr.Logger

	// started is done for a namespace once its watch has its starting resourceVersion, or once
	// it stopped before that.
	started sync.WaitGroup
}

// newConfigMapChanges returns the ConfigMap source over namespaces (none for all), mapping
// through reader, the manager's cache.
func newConfigMapChanges(reader client.Reader, c metadata.Interface, namespaces []string, log logr.Logger) *configMapChanges {
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	return &configMapChanges{
		client:     c,
		namespaces: namespaces,
		deploymentsFor: func(ctx context.Context, obj client.Object) []reconcile.Request {
			return deploymentsFor(ctx, reader, obj)
		},
		optedIn: func(ctx context.Context, namespace string) ([]reconcile.Request, error) {
			return optedInDeployments(ctx, reader, namespace)
		},
		retry: wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 8, Cap: 30 * time.Second},
		log:   log,
	}
}

// String names the source in controller-runtime's logs.
func (c *configMapChanges) String() string { return "ConfigMap metadata watch (uncached)" }

// Start starts one watch per namespace; they run until ctx ends.
func (c *configMapChanges) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	c.started.Add(len(c.namespaces))
	for _, ns := range c.namespaces {
		go c.run(ctx, ns, queue)
	}
	return nil
}

// WaitForSync returns once every namespace's watch has its starting resourceVersion.
func (c *configMapChanges) WaitForSync(ctx context.Context) error {
	select {
	case <-c.allStarted():
		if ctx.Err() != nil {
			break // the watches stopped with ctx, unsynced
		}
		return nil
	case <-ctx.Done():
	}
	return fmt.Errorf("waiting for the ConfigMap watch to start: %w", context.Cause(ctx))
}

// allStarted returns a channel closed once every namespace's watch has its starting
// resourceVersion or has stopped before it.
func (c *configMapChanges) allStarted() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		c.started.Wait()
		close(done)
	}()
	return done
}

// run watches the ConfigMaps of namespace until ctx ends, starting over from a new list when
// the watch's resourceVersion is gone.
func (c *configMapChanges) run(ctx context.Context, namespace string, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	log := c.log.WithValues("namespace", namespace)
	first := true
	defer func() {
		if first {
			c.started.Done() // stopped before its starting point: WaitForSync must not hang
		}
	}()
	backoff := c.retry
	for ctx.Err() == nil {
		rv, err := c.currentResourceVersion(ctx, namespace)
		if ctx.Err() != nil {
			return // stopping: the error, if any, is the cancellation
		}
		if err != nil {
			log.Error(err, "Listing ConfigMaps failed; retrying")
			sleep(ctx, backoff.Step())
			continue
		}
		if first {
			first = false
			c.started.Done()
		} else if err := c.resync(ctx, namespace, queue); err != nil {
			log.Error(err, "Resyncing after the ConfigMap watch lost events failed; retrying")
			sleep(ctx, backoff.Step())
			continue
		}
		backoff = c.retry
		err = c.follow(ctx, namespace, rv, queue)
		log.V(1).Info("ConfigMap watch starts over", "reason", err)
	}
}

// currentResourceVersion reads the resourceVersion of namespace's ConfigMaps with a list of at
// most one item.
func (c *configMapChanges) currentResourceVersion(ctx context.Context, namespace string) (string, error) {
	list, err := c.client.Resource(configMapsResource).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return "", err
	}
	return list.ResourceVersion, nil
}

// resync enqueues every opted-in Deployment of namespace, for the events a watch lost.
func (c *configMapChanges) resync(ctx context.Context, namespace string, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	requests, err := c.optedIn(ctx, namespace)
	if err != nil {
		return err
	}
	for _, req := range requests {
		queue.Add(req)
	}
	c.log.Info("Enqueued every opted-in Deployment: the ConfigMap watch lost events", "namespace", namespace, "deployments", len(requests))
	return nil
}

// follow watches namespace's ConfigMaps from rv, reconnecting from the last resourceVersion
// seen, until ctx ends or that resourceVersion is gone. It returns why it stopped.
func (c *configMapChanges) follow(ctx context.Context, namespace, rv string, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	backoff := c.retry
	for ctx.Err() == nil {
		w, err := c.client.Resource(configMapsResource).Namespace(namespace).Watch(ctx, metav1.ListOptions{
			ResourceVersion: rv, AllowWatchBookmarks: true})
		switch {
		case err != nil && ctx.Err() != nil:
			return context.Cause(ctx) // stopping
		case resourceVersionGone(err):
			return errResourceVersionGone
		case err != nil:
			c.log.Error(err, "Watching ConfigMaps failed; retrying", "namespace", namespace)
			sleep(ctx, backoff.Step())
			continue
		}
		last := rv
		rv, err = c.drain(ctx, w, rv, queue)
		if errors.Is(err, errResourceVersionGone) {
			return err
		}
		// A watch that ended at once, or with an error, waits before the next: an API server
		// that closes every watch must not get a request loop.
		if err != nil || rv == last {
			c.log.V(1).Info("ConfigMap watch ended; resuming", "namespace", namespace, "resourceVersion", rv, "reason", err)
			sleep(ctx, backoff.Step())
			continue
		}
		backoff = c.retry
	}
	return context.Cause(ctx)
}

// drain handles w's events until it ends, and returns the last resourceVersion seen with the
// reason the watch ended (nil when the API server closed it).
func (c *configMapChanges) drain(ctx context.Context, w watch.Interface, rv string, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) (string, error) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv, context.Cause(ctx)
		case ev, ok := <-w.ResultChan():
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
				return rv, fmt.Errorf("unexpected %T in the ConfigMap watch", ev.Object)
			}
			rv = obj.ResourceVersion
			if ev.Type == watch.Bookmark {
				continue
			}
			for _, req := range c.deploymentsFor(ctx, obj) {
				queue.Add(req)
			}
		}
	}
}

// resourceVersionGone tells whether err says that the API server no longer has the
// resourceVersion a watch asked for.
func resourceVersionGone(err error) bool {
	return apierrors.IsGone(err) || apierrors.IsResourceExpired(err)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
