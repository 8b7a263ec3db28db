package controllers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/example/switchboard/controllers/internal/collectors"
	"github.com/example/switchboard/controllers/internal/leases"
	"github.com/example/switchboard/sources"
)

// leaderGauge is switchboard_controller_leader{controller}: 1 while this replica runs the
// controller's workers, 0 while another does.
var leaderGauge = collectors.Register(prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "switchboard_controller_leader",
	Help: "1 while this replica runs the controller's workers (it holds the controller's Lease, or the manager's), 0 while it is a standby.",
}, []string{"controller"}))

// leaseGroup is the group a controller is elected in with --leader-elect-scope=controller: the
// controllers of one group (the table's Group: the configmapwatcher's one row per workload kind)
// share a Lease and move between replicas together; a controller without a Group is its own.
func (c Controller) leaseGroup() string {
	if c.Group != "" {
		return c.Group
	}
	return c.Name
}

// group is the controllers that share one Lease.
type group struct {
	name        string
	controllers []Controller
}

// groupsOf returns the groups of the selected controllers, in table order of their first
// controller.
func groupsOf(controllers []Controller, key func(Controller) string) []group {
	var groups []group
	index := map[string]int{}
	for _, c := range controllers {
		name := key(c)
		i, ok := index[name]
		if !ok {
			i = len(groups)
			index[name] = i
			groups = append(groups, group{name: name})
		}
		groups[i].controllers = append(groups[i].controllers, c)
	}
	return groups
}

// identity names this process in the Leases it holds: the host name (the Pod's name in a
// cluster), so that an operator sees which replica leads, and a random suffix, so that a
// restarted process is a new holder.
func identity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("reading the host name for the leader election identity: %w", err)
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return "", err
	}
	return host + "_" + hex.EncodeToString(suffix), nil
}

// electedWiring runs each controller group only while this replica holds the group's Lease.
type electedWiring struct {
	mgr        ctrl.Manager
	opts       *Options
	sel        Selection
	namespaces []string
	registry   *sources.Registry
	triggers   map[string][]<-chan event.GenericEvent
	replica    *leases.Replica
	groups     []group
	groupOf    map[string]string
	starts     *watchStarts
	// namespace holds the Leases.
	namespace string
}

// wireElected sets the selected controllers up to run per group, each group only while this
// replica holds its Lease: the caches they watch are started now on every replica (warm
// standbys), the HTTP trigger runs on every replica, and each group's election is a runnable
// of the manager, which itself runs unelected.
func wireElected(ctx context.Context, mgr ctrl.Manager, sel Selection, o *Options, registry *sources.Registry, namespaces []string, starts *watchStarts) (*electedWiring, error) {
	id, namespace, err := o.electionIdentity()
	if err != nil {
		return nil, err
	}
	clientset, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating the Lease client: %w", err)
	}
	replica, err := leases.NewReplica(leases.Config{
		Client:        clientset.CoordinationV1(),
		Namespace:     namespace,
		Identity:      id,
		LeaseDuration: o.LeaseDuration,
		RenewDeadline: o.RenewDeadline,
		RetryPeriod:   o.RetryPeriod,
		Log:           mgr.GetLogger().WithName("leases"),
		// Replicas of the other scope (a rollout that switches scopes) hold the manager's
		// Lease, and those of an earlier version the Leases of the fixed names (a rollout that
		// renames them): no group runs here while one of them leads.
		Defer: o.fixedNamesDeferral(leases.NewDeferral(clientset.CoordinationV1(), namespace, []string{o.managerLeaseName()}), sel, mgr.GetLogger().WithName("leases")),
	})
	if err != nil {
		return nil, err
	}
	w := &electedWiring{
		mgr: mgr, opts: o, sel: sel, namespaces: namespaces, registry: registry, replica: replica,
		triggers:  map[string][]<-chan event.GenericEvent{},
		groups:    groupsOf(sel.Controllers, Controller.leaseGroup),
		groupOf:   map[string]string{},
		starts:    starts,
		namespace: namespace,
	}
	for _, c := range sel.Controllers {
		w.groupOf[c.Name] = c.leaseGroup()
		w.triggers[c.Name] = subscribe(registry, c, o)
		leaderGauge.WithLabelValues(c.Name).Set(0)
		if err := warm(ctx, mgr.GetCache(), c); err != nil {
			return nil, fmt.Errorf("controller %s: %w", c.Name, err)
		}
	}
	if err := addTriggerProducer(mgr, registry, o, w.standby); err != nil {
		return nil, err
	}
	for _, g := range w.groups {
		lease := leases.LeaseName(o.groupLeasePrefix(), g.name)
		election := manager.RunnableFunc(func(ctx context.Context) error {
			return replica.Run(ctx, g.name, lease, w.term(ctx, g))
		})
		if err := mgr.Add(unelected{election}); err != nil {
			return nil, fmt.Errorf("adding the election of %s: %w", g.name, err)
		}
	}
	return w, nil
}

// warm starts the informers of every kind c watches through the cache, on every replica: the
// manager starts them with its cache and waits for them to sync, so that a replica that takes
// c over reconciles at once, its sources replaying what the cache holds.
func warm(ctx context.Context, c cache.Cache, ctrlr Controller) error {
	for _, obj := range ctrlr.watchedObjects() {
		if _, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("starting the informer of %s: %w", kindOf(obj), err)
		}
	}
	return nil
}

// leading reports whether this replica runs controller's workers.
func (w *electedWiring) leading(controller string) bool {
	return w.replica.Leading(w.groupOf[controller])
}

// standby is the HTTP trigger's question: it answers 503 for a controller this replica does not
// lead, naming the replica that does.
func (w *electedWiring) standby(controller string) (leader string, standby bool) {
	group, ok := w.groupOf[controller]
	if !ok || w.replica.Leading(group) {
		return "", false
	}
	return w.replica.Holder(group), true
}

// term returns what this replica runs while it leads g: fresh controllers built from g's rows,
// the periodic resync of those controllers, and their own producers. It returns once all have
// stopped, and the Lease is released only then. A term that ends because shutdown (the
// election's own context) ended is a planned stop for the producers, which may save their
// state before the Lease goes; one that ends because the Lease was lost is not.
func (w *electedWiring) term(shutdown context.Context, g group) leases.Term {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		log := w.mgr.GetLogger().WithValues("group", g.name)
		tm := newTermManager(w.mgr)
		lists := map[string]func() client.ObjectList{}
		for _, c := range g.controllers {
			workers := max(1, w.sel.Concurrency[c.Name])
			if err := build(tm, c, workers, w.namespaces, w.triggers[c.Name], w.opts, w.starts); err != nil {
				return fmt.Errorf("setting up controller %s: %w", c.Name, err)
			}
			if w.opts.sourceOn(c, sources.Periodic) {
				newList, err := listFor(w.mgr, c.For)
				if err != nil {
					return fmt.Errorf("controller %s: %w", c.Name, err)
				}
				lists[c.Name] = newList
			}
		}
		// As on the manager, a producer that fails stops everything (here: the term).
		ctx = ctrl.LoggerInto(ctx, log)
		ctx = sources.WithPlannedStop(ctx, func() bool { return shutdown.Err() != nil })
		var producers sync.WaitGroup
		var producerErrs []error
		var mu sync.Mutex
		runProducer := func(source sources.Name, run sources.Run) {
			producers.Go(func() {
				if err := run(ctx, w.registry.Producer(source)); err != nil {
					mu.Lock()
					producerErrs = append(producerErrs, fmt.Errorf("producer of source %s: %w", source, err))
					mu.Unlock()
					cancel()
				}
			})
		}
		if len(lists) > 0 {
			periodic := sources.PeriodicResync{Reader: w.mgr.GetCache(), Interval: w.opts.ResyncInterval, Lists: lists}
			runProducer(sources.Periodic, periodic.Run)
		}
		// Each term makes its own producers: what one learnt in an earlier term (the usage
		// history) is older than what the leaders since then checkpointed, and would overwrite
		// it. A new producer starts from the checkpoints, as after a restart.
		for _, c := range g.controllers {
			for _, p := range c.Producers {
				if !p.On() {
					continue
				}
				run, err := p.New(w.mgr, w.opts)
				if err != nil {
					cancel()
					producers.Wait()
					return fmt.Errorf("controller %s: source %s: %w", c.Name, p.Source, err)
				}
				runProducer(p.Source, run)
			}
			leaderGauge.WithLabelValues(c.Name).Set(1)
		}
		err := tm.run(ctx)
		cancel()
		producers.Wait()
		for _, c := range g.controllers {
			leaderGauge.WithLabelValues(c.Name).Set(0)
			if resetErr := resetQueueGauges(c.Name); resetErr != nil {
				log.Error(resetErr, "Resetting the work queue's gauges failed", "controller", c.Name)
			}
		}
		return errors.Join(append(producerErrs, err)...)
	}
}

// unelected is a runnable that runs on every replica, elected or not.
type unelected struct{ manager.Runnable }

// NeedLeaderElection says no: the runnable elects by itself.
func (unelected) NeedLeaderElection() bool { return false }

// leaderElectionNamespace is the namespace of the Leases: the flag's, else the namespace of the
// Pod's ServiceAccount, as controller-runtime finds it.
func leaderElectionNamespace(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	data, err := os.ReadFile(inClusterNamespacePath)
	if err != nil {
		return "", fmt.Errorf("--leader-election-namespace is needed outside a cluster: %w", err)
	}
	return string(data), nil
}

// inClusterNamespacePath holds the namespace of a Pod's ServiceAccount.
const inClusterNamespacePath = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// ManagerLeaseLock returns the lock of the manager's Lease for --leader-elect-scope=manager, or
// nil with per-controller Leases or no election: controller-runtime's LeaseLock, deferring to
// the Leases of the selected controllers' groups, so that during a rollout that switches from
// per-controller Leases back to one for the manager, the manager starts its controllers only
// once no replica of the other scope leads any.
func (o *Options) ManagerLeaseLock(cfg *rest.Config, sel Selection) (resourcelock.Interface, error) {
	if !o.LeaderElect || o.perControllerLeases() {
		return nil, nil
	}
	id, namespace, err := o.electionIdentity()
	if err != nil {
		return nil, err
	}
	clientset, err := kubernetes.NewForConfig(o.RESTConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("creating the Lease client: %w", err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: o.managerLeaseName()},
		Client:     clientset.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	log := ctrl.Log.WithName("leader-election")
	groups := LeaseNames(sel.Controllers, o.LeaderElectResourceName)[1:]
	deferral := o.fixedNamesDeferral(leases.NewDeferral(clientset.CoordinationV1(), namespace, groups), sel, log)
	return leases.NewDeferringLock(lock, deferral, o.RetryPeriod, func(msg string, kv ...any) { log.Info(msg, kv...) }), nil
}

// LeaseNames returns the names of the Leases a manager running controllers may hold with
// --leader-elect-resource-name=resourceName, for the RBAC that names them: the manager's
// (--leader-elect-scope=manager) and one per controller group (--leader-elect-scope=controller).
func LeaseNames(controllers []Controller, resourceName string) []string {
	names := []string{managerLeaseName(resourceName)}
	for _, g := range groupsOf(controllers, Controller.leaseGroup) {
		names = append(names, leases.LeaseName(groupLeasePrefix(resourceName), g.name))
	}
	return names
}

// FixedLeaseNames returns the Leases of the fixed names (LeaderElectionID, LeaseNamePrefix +
// group) that a manager running controllers with --leader-elect-resource-name=resourceName waits
// for with --leader-elect-fixed-names-holder-prefix, and deletes once free: those that are not
// its own. For the RBAC that names them.
func FixedLeaseNames(controllers []Controller, resourceName string) []string {
	own := LeaseNames(controllers, resourceName)
	var names []string
	for _, name := range LeaseNames(controllers, "") {
		if !slices.Contains(own, name) {
			names = append(names, name)
		}
	}
	return names
}

// fixedNamesDeferral returns d, made to also wait for the Leases of the fixed names while this
// installation's replicas of an earlier version hold them (--leader-elect-fixed-names-holder-prefix):
// they know no other names, and would lead beside this replica during the rollout.
func (o *Options) fixedNamesDeferral(d *leases.Deferral, sel Selection, log logr.Logger) *leases.Deferral {
	if !o.waitsForFixedNames() {
		return d
	}
	return d.WithEarlierNames(FixedLeaseNames(sel.Controllers, o.LeaderElectResourceName), o.holdsFixedNames, o.LeaseDuration, log)
}

// waitsForFixedNames says whether this manager waits for the Leases of the fixed names.
func (o *Options) waitsForFixedNames() bool {
	return o.LeaderElect && o.LeaderElectFixedNamesHolderPrefix != ""
}

// fixedNamesReadiness returns the Leases of the fixed names in namespace that, held by one of
// this installation's replicas of an earlier version, keep this replica a ready standby while
// it waits for them, and what tells those replicas; none without
// --leader-elect-fixed-names-holder-prefix. Without them a replica that waits would never be
// ready, and a rollout that waits for it would never stop the replicas it waits for.
func (o *Options) fixedNamesReadiness(namespace string, sel Selection) ([]types.NamespacedName, func(string) bool) {
	if !o.waitsForFixedNames() {
		return nil, nil
	}
	var keys []types.NamespacedName
	for _, name := range FixedLeaseNames(sel.Controllers, o.LeaderElectResourceName) {
		keys = append(keys, types.NamespacedName{Namespace: namespace, Name: name})
	}
	return keys, o.holdsFixedNames
}

// holdsFixedNames says whether holder, found in a Lease of the fixed names, is a replica of this
// installation.
func (o *Options) holdsFixedNames(holder string) bool {
	return strings.HasPrefix(holder, o.LeaderElectFixedNamesHolderPrefix)
}

// electionIdentity returns who this replica is in its Leases (LeaderElectionIdentity, or the
// host name and a random suffix) and the namespace of the Leases.
func (o *Options) electionIdentity() (id, namespace string, err error) {
	id = o.LeaderElectionIdentity
	if id == "" {
		if id, err = identity(); err != nil {
			return "", "", err
		}
	}
	namespace, err = leaderElectionNamespace(o.LeaderElectionNamespace)
	return id, namespace, err
}
