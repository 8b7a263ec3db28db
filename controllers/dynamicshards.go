package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/example/switchboard/controllers/internal/shards"
)

// The settings of a shard group's plans that have no flag.
const (
	// shardSlots is how many slots a plan cuts the namespaces into: enough for the members to
	// balance within 1.2 of each other with people's namespace names, few enough to keep the
	// selectors short (a few kB).
	shardSlots = 64
	// shardSlack is Assign's bound over the average load.
	shardSlack = 0.05
	// weightPage is how many objects one request of the weighing lists, where the API server
	// does not stream lists.
	weightPage = 500
)

// ShardGroupLeaseVerbs are what a replica of a shard group (--shard-group) does with the Leases
// of its namespace, of any name (a member's Lease is named after its replica): for the Role that
// lets it.
var ShardGroupLeaseVerbs = []string{"create", "delete", "get", "list", "update", "watch"}

// shardServerFiltering is 1 while the API server filters this replica's lists and watches by
// its shard ranges, 0 while the replica filters what it receives itself, or has no shard group.
var shardServerFiltering = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "switchboard_shard_server_filtering",
	Help: "1 when the API server filters this replica's lists and watches by its shard ranges (ShardedListAndWatch, with --shard-group); 0 when it ignores them and the replica drops the other replicas' objects itself, and without --shard-group.",
})

func init() { metrics.Registry.MustRegister(shardServerFiltering) }

// dynamicShards is this replica's part in its shard group (--shard-group): the Filter of its
// caches, the Gate of its reconciles and the member that moves their ranges.
type dynamicShards struct {
	filter *shards.Filter
	gate   *shards.Gate
	member *shards.Member
	// scheme and mapper tell the kinds apart: only namespaced ones are filtered (the API
	// server would hash a cluster-scoped object's empty namespace).
	scheme *runtime.Scheme
	mapper meta.RESTMapper
}

// namespaced says whether the kind gvk is namespaced; a kind the mapper does not know is not
// filtered.
func (d *dynamicShards) namespaced(gvk schema.GroupVersionKind) bool {
	mapping, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil && mapping.Scope.Name() == meta.RESTScopeNameNamespace
}

// prepareDynamicShards readies the replica's membership of --shard-group: it asks the API
// server whether it filters by shard (said once in the log and in
// switchboard_shard_server_filtering), and makes the Filter, the Gate and the member. The
// member weighs namespaces by their objects of the selected controllers' primary kinds.
func (o *Options) prepareDynamicShards(ctx context.Context, cfg *rest.Config, sel Selection, log logr.Logger) (*shards.Member, error) {
	if o.ShardGroup == "" {
		return nil, nil
	}
	identity, namespace, err := o.electionIdentity()
	if err != nil {
		return nil, fmt.Errorf("--shard-group: %w", err)
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	serverFilters, err := shards.ServerFilters(ctx, clientset, namespace)
	if err != nil {
		return nil, fmt.Errorf("--shard-group: %w", err)
	}
	log = log.WithValues("shardGroup", o.ShardGroup, "identity", identity)
	if serverFilters {
		log.Info("Dynamic shards: the API server filters lists and watches by shard (ShardedListAndWatch)")
		shardServerFiltering.Set(1)
	} else {
		log.Info("Dynamic shards: the API server ignores shard selectors (its ShardedListAndWatch feature gate is off); this replica receives every object and keeps only its shard's")
		shardServerFiltering.Set(0)
	}
	filter := shards.NewFilter(nil, serverFilters, func() {
		log.Info("Dynamic shards: the API server ignored a shard selector; this replica now filters every object it receives itself")
		shardServerFiltering.Set(0)
	})
	gate := shards.NewGate(filter)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	scope, err := o.weighingScope()
	if err != nil {
		return nil, err
	}
	scheme := NewScheme()
	reader, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, err
	}
	member, err := shards.NewMember(shards.Config{
		Group: o.ShardGroup, Namespace: namespace, Identity: identity,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		SlotCount: shardSlots, Slack: shardSlack, RebalanceInterval: o.ShardRebalanceInterval,
		// A crashed replica's Lease goes once it stood still ten lease durations.
		ForgetAfter: 10 * o.LeaseDuration,
		Weights: func(ctx context.Context) ([]shards.Namespace, error) {
			return weighNamespaces(ctx, reader, scheme, sel.Controllers, scope)
		},
	}, clientset, gate, log)
	if err != nil {
		return nil, err
	}
	o.dynamic = &dynamicShards{filter: filter, gate: gate, member: member, scheme: scheme, mapper: mapper}
	return member, nil
}

// newInformer is the cache's informer constructor under dynamic shards: the lists and watches
// of every namespaced kind go through the replica's Filter.
func (d *dynamicShards) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if gvk, err := apiutil.GVKForObject(obj, d.scheme); err == nil && d.namespaced(gvk) {
		lw = d.filter.ListerWatcher(lw)
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// newMetadataClient returns a metadata-only client of mgr's API server for the controllers'
// uncached watches (package metawatch): under --shard-group, the lists and watches of its
// namespaced resources carry this replica's shard selector and are filtered by its ranges, as
// the cache's are.
func (o *Options) newMetadataClient(mgr ctrl.Manager) (metadata.Interface, error) {
	c, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating the metadata client: %w", err)
	}
	if o.dynamic == nil {
		return c, nil
	}
	d := o.dynamic
	return d.filter.MetadataClient(c, func(resource schema.GroupVersionResource) bool {
		gvk, err := d.mapper.KindFor(resource)
		return err == nil && d.namespaced(gvk)
	}), nil
}

// weighingScope is what the weighing lists in: each of --watch-namespaces alone (the manager
// may list in those only), or every namespace, with --watch-label-selector.
func (o *Options) weighingScope() ([]*client.ListOptions, error) {
	namespaces, err := o.namespaces()
	if err != nil {
		return nil, err
	}
	selector, err := o.labelSelector()
	if err != nil {
		return nil, err
	}
	if len(namespaces) == 0 {
		return []*client.ListOptions{{LabelSelector: selector}}, nil
	}
	var scope []*client.ListOptions
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		scope = append(scope, &client.ListOptions{Namespace: ns, LabelSelector: selector})
	}
	return scope, nil
}

// weighNamespaces counts, by namespace, the objects of the controllers' primary kinds, metadata
// only, in each of scope (each a namespace, or every one, with the manager's label selector):
// what a replica's share costs it.
func weighNamespaces(ctx context.Context, reader client.WithWatch, scheme *runtime.Scheme, controllers []Controller, scope []*client.ListOptions) ([]shards.Namespace, error) {
	counts := map[string]int{}
	seen := map[string]bool{}
	for _, c := range controllers {
		gvk, err := apiutil.GVKForObject(c.For, scheme)
		if err != nil {
			return nil, err
		}
		if seen[gvk.String()] {
			continue
		}
		seen[gvk.String()] = true
		for _, in := range scope {
			if err := countByNamespace(ctx, reader, gvk, in, counts); err != nil {
				return nil, err
			}
		}
	}
	out := make([]shards.Namespace, 0, len(counts))
	for ns, n := range counts {
		out = append(out, shards.Namespace{Name: ns, Weight: n})
	}
	return out, nil
}

// countByNamespace adds to counts the objects of kind gvk in scope, by namespace, metadata
// only. It streams them (a watch that sends the objects there are, then a bookmark: the API
// server's WatchList, on by default since Kubernetes 1.34), so that one object at a time is in
// memory: the weighing runs every --shard-rebalance-interval, and a page of a list, in hand
// whenever the garbage collector ran, counted in the heap of the replica that weighs. Where the API
// server refuses the stream, or ends it before the bookmark, it lists them in pages. A kind
// the API server does not serve (an optional CRD) counts none.
func countByNamespace(ctx context.Context, c client.WithWatch, gvk schema.GroupVersionKind, scope *client.ListOptions, counts map[string]int) error {
	streamed, err := streamCountByNamespace(ctx, c, gvk, scope)
	switch {
	case meta.IsNoMatchError(err):
		return nil
	case err == nil:
		for namespace, n := range streamed {
			counts[namespace] += n
		}
		return nil
	case !errors.Is(err, errNoStream):
		return fmt.Errorf("counting the %s of each namespace: %w", gvk.Kind, err)
	}
	list := metadataListOf(gvk)
	for page := true; page; page = list.Continue != "" {
		if err := c.List(ctx, list, scope, client.Limit(weightPage), client.Continue(list.Continue)); err != nil {
			if meta.IsNoMatchError(err) {
				return nil
			}
			return fmt.Errorf("counting the %s of each namespace: %w", gvk.Kind, err)
		}
		for _, item := range list.Items {
			counts[item.Namespace]++
		}
	}
	return nil
}

// metadataListOf returns an empty metadata-only list of kind gvk.
func metadataListOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return list
}

// errNoStream is a streamed count the API server would not give: count with a list instead.
var errNoStream = errors.New("the API server does not stream lists")

// weightStreamTimeout bounds a streamed count: the API server ends the watch after it, so that
// a server that sends the objects but never the bookmark that closes them is counted by a list.
const weightStreamTimeout = 5 * time.Minute

// streamCountByNamespace counts the objects of kind gvk in scope by namespace through a watch
// that sends the objects there are first, and ends with the bookmark after them.
func streamCountByNamespace(ctx context.Context, c client.WithWatch, gvk schema.GroupVersionKind, scope *client.ListOptions) (map[string]int, error) {
	list := metadataListOf(gvk)
	opts := *scope
	opts.Raw = &metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks: true, TimeoutSeconds: new(int64(weightStreamTimeout.Seconds()))}
	w, err := c.Watch(ctx, list, &opts)
	if err != nil {
		return nil, refusedStream(err)
	}
	defer w.Stop()
	counts := map[string]int{}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case event, open := <-w.ResultChan():
			if !open {
				return nil, fmt.Errorf("%w: the watch ended before the bookmark after its objects", errNoStream)
			}
			switch event.Type {
			case watch.Added:
				if obj, ok := event.Object.(client.Object); ok {
					counts[obj.GetNamespace()]++
				}
			case watch.Bookmark:
				if obj, ok := event.Object.(client.Object); ok && obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
					return counts, nil
				}
			case watch.Error:
				return nil, refusedStream(apierrors.FromObject(event.Object))
			}
		}
	}
}

// refusedStream marks err as errNoStream when it is how an API server with WatchList off
// refuses sendInitialEvents.
func refusedStream(err error) error {
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return fmt.Errorf("%w: %w", errNoStream, err)
	}
	return err
}

// validateShardGroup refuses what --shard-group cannot go with.
func (o *Options) validateShardGroup() error {
	if o.ShardGroup == "" {
		return nil
	}
	if o.LeaderElect {
		return errors.New("--shard-group and --leader-elect: a shard group splits the namespaces between every replica, where leader election gives one replica every controller; choose one")
	}
	if o.ShardRebalanceInterval <= 0 {
		return fmt.Errorf("--shard-rebalance-interval=%s: want a positive duration", o.ShardRebalanceInterval)
	}
	if o.RenewDeadline <= o.RetryPeriod || o.LeaseDuration <= o.RenewDeadline {
		return fmt.Errorf("--shard-group needs --leader-elect-lease-duration (%s) > --leader-elect-renew-deadline (%s) > --leader-elect-retry-period (%s), its member's Lease timings", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	}
	return nil
}
