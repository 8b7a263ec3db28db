package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
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
	// shardRebalanceInterval is how often the coordinator weighs the namespaces again.
	shardRebalanceInterval = 10 * time.Minute
	// weightPage is how many objects one request of the weighing lists.
	weightPage = 500
)

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
	// namespaced says whether a kind is namespaced: only those are filtered (the API server
	// would hash a cluster-scoped object's empty namespace).
	namespaced func(obj runtime.Object) bool
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
	scheme := NewScheme()
	reader, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, err
	}
	member, err := shards.NewMember(shards.Config{
		Group: o.ShardGroup, Namespace: namespace, Identity: identity,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		SlotCount: shardSlots, Slack: shardSlack, RebalanceInterval: shardRebalanceInterval,
		// A crashed replica's Lease goes once it stood still ten lease durations.
		ForgetAfter: 10 * o.LeaseDuration,
		Weights: func(ctx context.Context) ([]shards.Namespace, error) {
			return weighNamespaces(ctx, reader, scheme, sel.Controllers)
		},
	}, clientset, gate, log)
	if err != nil {
		return nil, err
	}
	o.dynamic = &dynamicShards{filter: filter, gate: gate, member: member, namespaced: func(obj runtime.Object) bool {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return false
		}
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil && mapping.Scope.Name() == meta.RESTScopeNameNamespace
	}}
	return member, nil
}

// newInformer is the cache's informer constructor under dynamic shards: the lists and watches
// of every namespaced kind go through the replica's Filter.
func (d *dynamicShards) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if d.namespaced(obj) {
		lw = d.filter.ListerWatcher(lw)
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// weighNamespaces counts, by namespace, the objects of the controllers' primary kinds, listed
// metadata-only in pages: what a replica's share costs it.
func weighNamespaces(ctx context.Context, reader client.Reader, scheme *runtime.Scheme, controllers []Controller) ([]shards.Namespace, error) {
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
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		for page := true; page; page = list.Continue != "" {
			if err := reader.List(ctx, list, client.Limit(weightPage), client.Continue(list.Continue)); err != nil {
				if meta.IsNoMatchError(err) {
					break
				}
				return nil, fmt.Errorf("counting the %s of each namespace: %w", gvk.Kind, err)
			}
			for _, item := range list.Items {
				counts[item.Namespace]++
			}
		}
	}
	out := make([]shards.Namespace, 0, len(counts))
	for ns, n := range counts {
		out = append(out, shards.Namespace{Name: ns, Weight: n})
	}
	return out, nil
}

// validateShardGroup refuses what --shard-group cannot go with.
func (o *Options) validateShardGroup() error {
	if o.ShardGroup == "" {
		return nil
	}
	if o.LeaderElect {
		return errors.New("--shard-group and --leader-elect: a shard group splits the namespaces between every replica, where leader election gives one replica every controller; choose one")
	}
	if o.RenewDeadline <= o.RetryPeriod || o.LeaseDuration <= o.RenewDeadline {
		return fmt.Errorf("--shard-group needs --leader-elect-lease-duration (%s) > --leader-elect-renew-deadline (%s) > --leader-elect-retry-period (%s), its member's Lease timings", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	}
	return nil
}
