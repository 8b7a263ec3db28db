package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// termManager is the manager a group's controllers are built on for one term of leading the
// group: the real manager, except that what the builder adds is kept for the term to run (a
// controller-runtime controller cannot be started twice, so each term builds fresh ones from
// the same table rows), and that the event handlers its sources add to the shared informers are
// recorded, to be removed when the term ends.
type termManager struct {
	ctrl.Manager
	cache *termCache

	mu        sync.Mutex
	runnables []manager.Runnable
}

func newTermManager(mgr ctrl.Manager) *termManager {
	return &termManager{Manager: mgr, cache: &termCache{Cache: mgr.GetCache()}}
}

// Add keeps r for the term instead of adding it to the manager, which has started long ago.
func (m *termManager) Add(r manager.Runnable) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnables = append(m.runnables, r)
	return nil
}

// GetCache returns the shared cache, recording the event handlers added to its informers.
func (m *termManager) GetCache() cache.Cache { return m.cache }

// GetControllerOptions skips the check that controller names are unique in the process: every
// term builds the group's controllers again under the same names. The table's names are
// unique, which TestTableIsWellFormed checks.
func (m *termManager) GetControllerOptions() config.Controller {
	opts := m.Manager.GetControllerOptions()
	opts.SkipNameValidation = new(true)
	return opts
}

// run starts every runnable the term's controllers added and waits until all have returned:
// until ctx ends, or one fails, which stops the others. It then removes the term's event
// handlers from the shared informers.
func (m *termManager) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.mu.Lock()
	runnables := m.runnables
	m.mu.Unlock()
	errs := make(chan error, len(runnables))
	for _, r := range runnables {
		go func() {
			err := r.Start(ctx)
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	var all []error
	for range runnables {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	return errors.Join(append(all, m.cache.removeHandlers())...)
}

// termCache is the shared cache, recording every event handler added through it.
type termCache struct {
	cache.Cache

	mu       sync.Mutex
	handlers []handlerRegistration
}

type handlerRegistration struct {
	informer     cache.Informer
	registration toolscache.ResourceEventHandlerRegistration
}

// GetInformer returns the shared informer of obj's kind, recording its event handlers.
func (c *termCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return &termInformer{Informer: i, cache: c}, nil
}

// GetInformerForKind returns the shared informer of gvk, recording its event handlers.
func (c *termCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return &termInformer{Informer: i, cache: c}, nil
}

func (c *termCache) record(i cache.Informer, reg toolscache.ResourceEventHandlerRegistration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers = append(c.handlers, handlerRegistration{informer: i, registration: reg})
}

// removeHandlers removes every recorded event handler: controller-runtime's Kind source never
// removes its own, and a handler left behind would keep mapping events for a stopped queue.
func (c *termCache) removeHandlers() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, h := range c.handlers {
		if err := h.informer.RemoveEventHandler(h.registration); err != nil {
			errs = append(errs, fmt.Errorf("removing an event handler: %w", err))
		}
	}
	c.handlers = nil
	return errors.Join(errs...)
}

// termInformer is a shared informer whose added event handlers its termCache records.
type termInformer struct {
	cache.Informer
	cache *termCache
}

func (i *termInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := i.Informer.AddEventHandler(h)
	if err == nil {
		i.cache.record(i.Informer, reg)
	}
	return reg, err
}

func (i *termInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := i.Informer.AddEventHandlerWithResyncPeriod(h, resync)
	if err == nil {
		i.cache.record(i.Informer, reg)
	}
	return reg, err
}

func (i *termInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := i.Informer.AddEventHandlerWithOptions(h, opts)
	if err == nil {
		i.cache.record(i.Informer, reg)
	}
	return reg, err
}

// The work queue's gauges of what is in it now, as controller-runtime registers them
// (pkg/internal/metrics/workqueue.go). A queue shut down with requests in it leaves them up,
// and the next term's queue of the same name would count on from there; resetQueueGauges
// clears them. Registering a collector with the same description returns the registered one.
var queueGauges = []struct {
	opts   prometheus.GaugeOpts
	labels []string
}{
	{prometheus.GaugeOpts{Subsystem: metrics.WorkQueueSubsystem, Name: metrics.DepthKey,
		Help: "Current depth of workqueue by workqueue and priority"}, []string{"name", "controller", "priority"}},
	{prometheus.GaugeOpts{Subsystem: metrics.WorkQueueSubsystem, Name: metrics.UnfinishedWorkKey,
		Help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases."},
		[]string{"name", "controller"}},
	{prometheus.GaugeOpts{Subsystem: metrics.WorkQueueSubsystem, Name: metrics.LongestRunningProcessorKey,
		Help: "How many seconds has the longest running processor for workqueue been running."}, []string{"name", "controller"}},
}

// resetQueueGauges drops the work-queue gauges of controller, whose queue has shut down.
func resetQueueGauges(controller string) error {
	for _, g := range queueGauges {
		name := g.opts.Subsystem + "_" + g.opts.Name
		err := metrics.Registry.Register(prometheus.NewGaugeVec(g.opts, g.labels))
		var already prometheus.AlreadyRegisteredError
		switch {
		case err == nil:
			// Nothing was registered under this description: take the probe back out.
			metrics.Registry.Unregister(prometheus.NewGaugeVec(g.opts, g.labels))
			return fmt.Errorf("controller-runtime's gauge %s is not registered as expected", name)
		case !errors.As(err, &already):
			return fmt.Errorf("finding controller-runtime's gauge %s: %w", name, err)
		}
		vec, ok := already.ExistingCollector.(*prometheus.GaugeVec)
		if !ok {
			return fmt.Errorf("controller-runtime's %s is a %T, not a gauge vector", name, already.ExistingCollector)
		}
		vec.DeletePartialMatch(prometheus.Labels{"name": controller})
	}
	return nil
}
