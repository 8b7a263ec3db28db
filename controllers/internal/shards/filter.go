package shards

import (
	"context"
	"fmt"
	"math"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Filter narrows the lists and watches of the informers it wraps to one replica's ranges: the
// API server filters them when it serves ShardedListAndWatch, and the Filter filters them again
// before the caches in every case, so that a replica holds only its namespaces' objects even
// where the API server ignores the selector (its feature gate off), at the cost of receiving
// every object. A change of ranges ends the open watches as expired, so that each informer
// relists with the new ranges: its cache loses what left and gains what came, and its handlers
// see deletes and adds for them.
type Filter struct {
	mu sync.Mutex
	// ranges are the replica's ranges; generation counts their changes.
	ranges     Ranges
	generation int64
	// serverFilters says the API server honours shard selectors, as last found.
	serverFilters bool
	// ignored is called, once, when a list's response shows the API server ignored the selector
	// although it was believed to honour it.
	ignored func()
	// watches are the open watches, ended on a change of ranges.
	watches map[*filteredWatch]struct{}
}

// NewFilter returns a Filter of ranges; serverFilters says whether the API server was found to
// honour shard selectors (ServerFilters), and ignored is called if it is found not to after all.
func NewFilter(ranges Ranges, serverFilters bool, ignored func()) *Filter {
	return &Filter{ranges: Merge(ranges), serverFilters: serverFilters, ignored: ignored, watches: map[*filteredWatch]struct{}{}}
}

// Ranges are the ranges the Filter lets through.
func (f *Filter) Ranges() Ranges {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ranges
}

// ServerFilters says whether the API server is believed to filter.
func (f *Filter) ServerFilters() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.serverFilters
}

// SetRanges changes the ranges, and ends every open watch as expired so that its informer
// relists with them.
func (f *Filter) SetRanges(ranges Ranges) {
	f.mu.Lock()
	f.ranges = Merge(ranges)
	f.generation++
	open := f.watches
	f.watches = map[*filteredWatch]struct{}{}
	f.mu.Unlock()
	for w := range open {
		w.expire()
	}
}

// snapshot returns the ranges, their generation and the selector to send.
func (f *Filter) snapshot() (Ranges, int64, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := f.ranges
	if len(rs) == 0 {
		// The API server refuses an empty selector: ask for the one hash 0, which no name of a
		// namespace is known to have, and let the Filter drop whatever comes.
		rs = Ranges{{0, 0}}
	}
	return f.ranges, f.generation, rs.Selector().String()
}

// current says whether generation is still the ranges' generation.
func (f *Filter) current(generation int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.generation == generation
}

// serverIgnored records that the API server ignored a selector.
func (f *Filter) serverIgnored() {
	f.mu.Lock()
	was := f.serverFilters
	f.serverFilters = false
	f.mu.Unlock()
	if was && f.ignored != nil {
		f.ignored()
	}
}

// keeps says whether obj's namespace is in ranges. A cluster-scoped object (no namespace) is
// kept: sharded kinds are namespaced, and the API server hashes "" for the others.
func keeps(ranges Ranges, obj runtime.Object) bool {
	accessor, err := meta.Accessor(obj)
	if err != nil || accessor.GetNamespace() == "" {
		return true
	}
	return ranges.Contains(Hash(accessor.GetNamespace()))
}

// errRangesChanged makes a reflector relist: its list or watch was asked for ranges that changed
// since.
func errRangesChanged() error {
	return apierrors.NewResourceExpired("this replica's shard ranges changed; relisting with the new ones")
}

// ListerWatcher wraps lw so that its lists and watches carry the Filter's selector and are
// filtered by its ranges.
func (f *Filter) ListerWatcher(lw cache.ListerWatcher) cache.ListerWatcher {
	return &filteredListerWatcher{filter: f, next: cache.ToListerWatcherWithContext(lw)}
}

type filteredListerWatcher struct {
	filter *Filter
	next   cache.ListerWatcherWithContext
}

var _ cache.ListerWatcherWithContext = &filteredListerWatcher{}

func (lw *filteredListerWatcher) List(options metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), options)
}

func (lw *filteredListerWatcher) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), options)
}

func (lw *filteredListerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	ranges, generation, selector := lw.filter.snapshot()
	options.ShardSelector = selector
	list, err := lw.next.ListWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	if !lw.filter.current(generation) {
		return nil, errRangesChanged()
	}
	if shardInfo, known := listShardInfo(list); known && shardInfo == "" {
		lw.filter.serverIgnored()
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("filtering a list by shard: %w", err)
	}
	kept := items[:0]
	for _, item := range items {
		if keeps(ranges, item) {
			kept = append(kept, item)
		}
	}
	if len(kept) < len(items) {
		if err := meta.SetList(list, kept); err != nil {
			return nil, fmt.Errorf("filtering a list by shard: %w", err)
		}
	}
	return list, nil
}

func (lw *filteredListerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	ranges, generation, selector := lw.filter.snapshot()
	options.ShardSelector = selector
	next, err := lw.next.WatchWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	w := newFilteredWatch(next, ranges)
	f := lw.filter
	f.mu.Lock()
	if f.generation != generation {
		f.mu.Unlock()
		next.Stop()
		return nil, errRangesChanged()
	}
	f.watches[w] = struct{}{}
	f.mu.Unlock()
	go func() {
		<-w.done
		f.mu.Lock()
		delete(f.watches, w)
		f.mu.Unlock()
	}()
	return w, nil
}

// listShardInfo returns the selector a list's response says it was filtered by, and whether
// the response's type can say it at all. A metadata-only list cannot: kube-apiserver 1.37.2
// filters it by the selector but leaves shardInfo out of the PartialObjectMetadataList it
// sends (TestMetadataClientNarrowsTheWatches).
func listShardInfo(list runtime.Object) (selector string, known bool) {
	switch l := list.(type) {
	case *metav1.PartialObjectMetadataList:
		return "", false
	case *unstructured.UnstructuredList:
		s, _, _ := unstructured.NestedString(l.Object, "metadata", "shardInfo", "selector")
		return s, true
	case interface{ GetShardInfo() *metav1.ShardInfo }:
		if info := l.GetShardInfo(); info != nil {
			return info.Selector, true
		}
		return "", true
	}
	return "", false
}

// filteredWatch passes on the events of objects in its ranges, and every bookmark and error.
type filteredWatch struct {
	next   watch.Interface
	ranges Ranges
	result chan watch.Event
	// stop ends the watch from the consumer's side, expired from the Filter's; done is closed
	// once the watch has ended.
	stop, expired chan struct{}
	stopOnce      sync.Once
	expireOnce    sync.Once
	done          chan struct{}
}

func newFilteredWatch(next watch.Interface, ranges Ranges) *filteredWatch {
	w := &filteredWatch{next: next, ranges: ranges, result: make(chan watch.Event),
		stop: make(chan struct{}), expired: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *filteredWatch) run() {
	defer close(w.done)
	defer close(w.result)
	defer w.next.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-w.expired:
			w.send(watch.Event{Type: watch.Error, Object: &errRangesChanged().(*apierrors.StatusError).ErrStatus})
			return
		case e, ok := <-w.next.ResultChan():
			if !ok {
				return
			}
			switch e.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				if !keeps(w.ranges, e.Object) {
					continue
				}
			}
			if !w.send(e) {
				return
			}
		}
	}
}

// send delivers e unless the consumer stopped the watch.
func (w *filteredWatch) send(e watch.Event) bool {
	select {
	case w.result <- e:
		return true
	case <-w.stop:
		return false
	}
}

// Stop ends the watch; the consumer's side.
func (w *filteredWatch) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

// ResultChan is the events.
func (w *filteredWatch) ResultChan() <-chan watch.Event { return w.result }

// expire ends the watch with an expired error, so that the reflector relists.
func (w *filteredWatch) expire() { w.expireOnce.Do(func() { close(w.expired) }) }

// ServerFilters asks the API server whether it honours shard selectors: it lists the Leases of
// namespace (which a manager may read for its leader election) with a selector of the whole
// space, and the response echoes the selector (ListMeta.shardInfo) only where the API server
// filters by it, never by its version: where the ShardedListAndWatch feature gate is off, a
// selector is ignored without an error.
func ServerFilters(ctx context.Context, c kubernetes.Interface, namespace string) (bool, error) {
	whole := Ranges{{0, math.MaxUint64}}.Selector().String()
	list, err := c.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{ShardSelector: whole, Limit: 1})
	if err != nil {
		return false, fmt.Errorf("asking whether the API server filters by shard: %w", err)
	}
	return list.ShardInfo != nil && list.ShardInfo.Selector != "", nil
}
