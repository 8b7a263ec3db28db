package configmapwatcher

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/example/switchboard/controllers/internal/metawatch"
	"github.com/example/switchboard/internal/podrefs"
)

// changes is the source of one kind of source objects (ConfigMaps or Secrets) that the
// controllers of every workload kind share: one metadata-only watch per namespace that stores
// nothing, fanned out to each registered controller. Each added, changed or deleted object is
// mapped by each controller to its workloads that may roll on it (through the shared index on
// its cache), and those are queued once they have seen no change for the debounce delay.
//
// An informer would keep every ConfigMap and Secret of the cluster in memory only to replay
// them after a relist. These controllers need none of that state: the record on each workload
// says what it last rolled to, and Reconcile reads the few sources it needs from the API
// server. So each namespace's watch is a metawatch.Watch, and when it lost events every
// controller enqueues every opted-in workload of the namespace, which is what an informer's
// relist would amount to.
//
// The watch runs while at least one controller is registered, so that controllers with their
// own lifetimes (a leader election each) share it safely. Each controller's source is a syncing
// source: its workers start only once each namespace's watch has its starting resourceVersion,
// and the source registers before that, so a change either reaches it or happened before the
// controller's first reconcile of the workload, which reads the data.
type changes struct {
	kind     podrefs.SourceKind
	resource schema.GroupVersionResource
	client   metadata.Interface
	// namespaces are watched one watch each; a single "" watches every namespace.
	namespaces []string
	// selector narrows every list and watch: the label selector of --resource-label-selector,
	// and the field selector that leaves out --namespaces-to-ignore.
	selector metav1.ListOptions
	// retry is the backoff between failed lists and watches.
	retry wait.Backoff
	log   logr.Logger

	mu        sync.Mutex
	consumers map[*consumer]bool
	// cancel stops the running watches; nil while none run.
	cancel context.CancelFunc
	// synced is closed once every namespace's watch of the current run has its starting
	// resourceVersion.
	synced chan struct{}
}

// consumer is one controller's registration with changes.
type consumer struct {
	// name is the controller's, for logs.
	name  string
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	// workloadsFor maps a source of a namespace to the workloads that may roll on it.
	workloadsFor func(ctx context.Context, namespace string, src podrefs.Source) []mappedWorkload
	// optedIn lists every opted-in workload of a namespace ("" for all), for a resync.
	optedIn func(ctx context.Context, namespace string) ([]reconcile.Request, error)
	// delay is the debounce delay of the requests it queues.
	delay time.Duration
	// debounce holds the requests waiting out the delay.
	debounce *debouncer
	// unrecorded notes the changes of sources of workloads that have no record yet.
	unrecorded *unrecordedChanges
}

// mappedWorkload is a workload a source maps to, and whether it has a record.
type mappedWorkload struct {
	reconcile.Request
	recorded bool
}

// newChanges returns the shared watch of kind's objects over namespaces (nil for all; empty
// for none), narrowed by selector's label and field selectors.
func newChanges(kind podrefs.SourceKind, c metadata.Interface, namespaces []string, selector metav1.ListOptions, log logr.Logger) *changes {
	if namespaces == nil {
		namespaces = []string{metav1.NamespaceAll}
	}
	resource := corev1.SchemeGroupVersion.WithResource("configmaps")
	if kind == podrefs.Secret {
		resource = corev1.SchemeGroupVersion.WithResource("secrets")
	}
	return &changes{
		kind:       kind,
		resource:   resource,
		client:     c,
		namespaces: namespaces,
		selector:   metav1.ListOptions{LabelSelector: selector.LabelSelector, FieldSelector: selector.FieldSelector},
		retry:      metawatch.DefaultRetry,
		log:        log.WithValues("watch", string(kind)),
		consumers:  map[*consumer]bool{},
	}
}

// register adds a consumer until ctx ends, starts the watches if they do not run, and returns
// a channel closed once they have their starting points.
func (c *changes) register(ctx context.Context, cons *consumer) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.consumers[cons] = true
	if c.cancel == nil {
		var run context.Context
		run, c.cancel = context.WithCancel(context.Background())
		c.synced = make(chan struct{})
		started := &sync.WaitGroup{}
		started.Add(len(c.namespaces))
		for _, ns := range c.namespaces {
			go c.run(run, ns, started)
		}
		go func(synced chan struct{}) {
			started.Wait()
			close(synced)
		}(c.synced)
	}
	synced := c.synced
	go func() {
		<-ctx.Done()
		c.unregister(cons)
	}()
	return synced
}

// unregister removes a consumer, and stops the watches once none is left.
func (c *changes) unregister(cons *consumer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.consumers, cons)
	if len(c.consumers) == 0 && c.cancel != nil {
		c.cancel()
		c.cancel = nil
	}
}

// snapshot returns the registered consumers.
func (c *changes) snapshot() []*consumer {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*consumer, 0, len(c.consumers))
	for cons := range c.consumers {
		out = append(out, cons)
	}
	return out
}

// run watches the objects of namespace until ctx ends (metawatch.Watch), starting over from a
// new list and a resync when the watch's resourceVersion is gone. started is done once it has
// its first starting point, or when it stops before.
func (c *changes) run(ctx context.Context, namespace string, started *sync.WaitGroup) {
	w := &metawatch.Watch{Client: c.client, Resource: c.resource, Namespace: namespace, Retry: c.retry,
		LabelSelector: c.selector.LabelSelector, FieldSelector: c.selector.FieldSelector,
		Log: c.log.WithValues("namespace", namespace),
		OnEvent: func(ctx context.Context, eventType watch.EventType, obj *metav1.PartialObjectMetadata) {
			c.dispatch(ctx, podrefs.Source{Kind: c.kind, Name: obj.Name}, obj.Namespace, eventType)
		},
		OnLost: func(ctx context.Context) error { return c.resync(ctx, namespace) }}
	w.Run(ctx, started.Done)
}

// resync makes every consumer enqueue every opted-in workload of namespace, for the events a
// watch lost.
func (c *changes) resync(ctx context.Context, namespace string) error {
	for _, cons := range c.snapshot() {
		requests, err := cons.optedIn(ctx, namespace)
		if err != nil {
			return fmt.Errorf("%s: %w", cons.name, err)
		}
		for _, req := range requests {
			cons.queue.Add(req)
		}
		c.log.Info("Enqueued every opted-in workload: the "+string(c.kind)+" watch lost events",
			"namespace", namespace, "controller", cons.name, "workloads", len(requests))
	}
	return nil
}

// dispatch queues, in every consumer, the workloads that may roll on src, once they have seen no
// change for the consumer's debounce delay (see debouncer). A workload without a record yet
// gets the event noted (see unrecordedChanges).
func (c *changes) dispatch(ctx context.Context, src podrefs.Source, namespace string, eventType watch.EventType) {
	event := sourceEventOf(eventType)
	for _, cons := range c.snapshot() {
		for _, w := range cons.workloadsFor(ctx, namespace, src) {
			if event != 0 && !w.recorded && cons.unrecorded != nil {
				cons.unrecorded.note(cons.name, w.Request, src.Key(), event)
			}
			if cons.debounce != nil {
				cons.debounce.add(w.Request)
			} else {
				cons.queue.Add(w.Request)
			}
		}
	}
}

// sourceEvents are the events a source had, as bits.
type sourceEvents uint8

const (
	sourceCreated sourceEvents = 1 << iota
	sourceModified
	sourceDeleted
	// sourceDuringFirstRecord marks events that came while the reconcile that wrote the
	// workload's first record ran: that record may hold their data already.
	sourceDuringFirstRecord
)

// sourceEventOf is the bit of a watch event; 0 for a bookmark or an error.
func sourceEventOf(t watch.EventType) sourceEvents {
	switch t {
	case watch.Added:
		return sourceCreated
	case watch.Modified:
		return sourceModified
	case watch.Deleted:
		return sourceDeleted
	}
	return 0
}

// unrecordedChanges holds, per controller and workload, the events of sources that came after
// the workload was in the cache but before it had a record: its first reconcile, which records
// the data of the moment as its baseline, came after them (a worker busy, the manager just
// elected), yet the workload ran with the data before. Reloader acts on those events for every
// workload that uses the source, and so does the first reconcile that finds them noted (see
// decide); every reconcile takes the workload's notes.
//
// The watch carries metadata only, so a change of a source's labels or annotations alone in
// that window (usually milliseconds) counts as a change of its data.
type unrecordedChanges struct {
	mu           sync.Mutex
	byController map[string]map[reconcile.Request]map[string]sourceEvents
}

// note records event of the source key of req's workload, of the controller name.
func (u *unrecordedChanges) note(name string, req reconcile.Request, key string, event sourceEvents) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byController == nil {
		u.byController = map[string]map[reconcile.Request]map[string]sourceEvents{}
	}
	if u.byController[name] == nil {
		u.byController[name] = map[reconcile.Request]map[string]sourceEvents{}
	}
	if u.byController[name][req] == nil {
		u.byController[name][req] = map[string]sourceEvents{}
	}
	u.byController[name][req][key] |= event
}

// carry marks the events noted for req of the controller name as having come while its first
// record was being written (sourceDuringFirstRecord).
func (u *unrecordedChanges) carry(name string, req reconcile.Request) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for key := range u.byController[name][req] {
		u.byController[name][req][key] |= sourceDuringFirstRecord
	}
}

// forgetController drops every note of the controller name: a controller built again (a new
// term of its Lease) starts without those of an earlier term, which later reconciles there
// (or another replica's) have acted on.
func (u *unrecordedChanges) forgetController(name string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.byController, name)
}

// restore gives back events taken for req of the controller name that were not acted on.
func (u *unrecordedChanges) restore(name string, req reconcile.Request, events map[string]sourceEvents) {
	for key, event := range events {
		u.note(name, req, key, event)
	}
}

// take returns the sources' events noted for req of the controller name, and forgets them. A nil
// u holds none.
func (u *unrecordedChanges) take(name string, req reconcile.Request) map[string]sourceEvents {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	noted := u.byController[name][req]
	delete(u.byController[name], req)
	return noted
}

// maxDebounce is how many debounce delays a request waits at most, however often its sources
// change: a source changed without pause still rolls its workloads.
const maxDebounce = 10

// debouncer queues a request once it has had no new change for quiet (a quiet period: each
// change starts the wait again), but no later than maxDebounce times quiet after its first
// change. The changes made together to several sources of a workload (a helm upgrade applies
// them one after the other) are then read by one reconcile, as long as the gap between two of
// them is shorter than quiet: the whole burst may be longer. The work queue's own AddAfter
// keeps the earliest time of a waiting request, a window from the first change, which would
// have to outlast the whole burst, and every single change would wait that long.
type debouncer struct {
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	quiet time.Duration

	mu      sync.Mutex
	pending map[reconcile.Request]*pendingRequest
}

// pendingRequest is a request waiting out its quiet period.
type pendingRequest struct {
	first time.Time
	timer *time.Timer
}

// newDebouncer returns a debouncer that adds to queue the requests that had no change for quiet.
func newDebouncer(queue workqueue.TypedRateLimitingInterface[reconcile.Request], quiet time.Duration) *debouncer {
	return &debouncer{queue: queue, quiet: quiet, pending: map[reconcile.Request]*pendingRequest{}}
}

// add starts, or starts again, req's quiet period.
func (d *debouncer) add(req reconcile.Request) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := d.pending[req]; ok && p.timer.Stop() {
		p.timer.Reset(max(0, min(d.quiet, p.first.Add(maxDebounce*d.quiet).Sub(now))))
		return
	}
	// None waits, or its timer is firing now: a new wait, so that this change is read too.
	p := &pendingRequest{first: now}
	p.timer = time.AfterFunc(d.quiet, func() {
		d.mu.Lock()
		if d.pending[req] == p {
			delete(d.pending, req)
		}
		d.mu.Unlock()
		d.queue.Add(req)
	})
	d.pending[req] = p
}

// has says whether req waits out its quiet period.
func (d *debouncer) has(req reconcile.Request) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.pending[req]
	return ok
}

// debouncers are the controllers' debouncers: one per controller, shared by its watches of
// ConfigMaps and of Secrets (which feed one queue), and asked by its reconciler.
type debouncers struct {
	mu           sync.Mutex
	byController map[string]*debouncer
}

// get returns the debouncer of the controller name that feeds queue, made on first use. A
// controller built again (a new term of its Lease) has a new queue, and gets a new debouncer:
// the old one's would feed the queue of a controller that has stopped.
func (d *debouncers) get(name string, queue workqueue.TypedRateLimitingInterface[reconcile.Request], quiet time.Duration) *debouncer {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byController == nil {
		d.byController = map[string]*debouncer{}
	}
	if deb := d.byController[name]; deb == nil || deb.queue != queue {
		d.byController[name] = newDebouncer(queue, quiet)
	}
	return d.byController[name]
}

// waiting says whether req of the controller name waits out a quiet period: a source of it
// changed moments ago, and the debouncer queues it once its sources are quiet.
func (d *debouncers) waiting(name string, req reconcile.Request) bool {
	d.mu.Lock()
	deb := d.byController[name]
	d.mu.Unlock()
	return deb != nil && deb.has(req)
}

// changesSource is one controller's source of changes: it registers the controller's queue
// and map function with the shared watch when the controller starts.
type changesSource struct {
	changes    *changes
	consumer   consumer
	debouncers *debouncers
	synced     <-chan struct{}
}

// String names the source in controller-runtime's logs.
func (s *changesSource) String() string {
	return string(s.changes.kind) + " metadata watch (uncached, shared)"
}

// Start registers the controller with the shared watch until ctx ends.
func (s *changesSource) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	cons := s.consumer
	cons.queue = queue
	if cons.delay > 0 {
		cons.debounce = s.debouncers.get(cons.name, queue, cons.delay)
	}
	s.synced = s.changes.register(ctx, &cons)
	return nil
}

// WaitForSync returns once every namespace's watch has its starting resourceVersion.
func (s *changesSource) WaitForSync(ctx context.Context) error {
	return metawatch.WaitStarted(ctx, s.synced, string(s.changes.kind))
}
