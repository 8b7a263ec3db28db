package controllers

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/example/switchboard/controllers/internal/leases"
	"github.com/example/switchboard/controllers/internal/reconcilelog"
	"github.com/example/switchboard/indexers"
	"github.com/example/switchboard/sources"
)

// Wire sets the selected controllers up on mgr: health and readiness probes, the union of their
// indexes, their sources and the producers somebody consumes, then the controllers themselves.
// With --leader-elect-scope=controller each controller group runs only while this replica
// holds the group's Lease (see leaders.go). Every error names the step and the controller it
// failed for.
func Wire(ctx context.Context, mgr ctrl.Manager, sel Selection, o *Options) error {
	for _, r := range sel.Runnables {
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("adding a runnable of the controllers' options: %w", err)
		}
	}
	if err := addIndexes(ctx, mgr, sel.Controllers); err != nil {
		return err
	}
	metadataClient, err := o.newMetadataClient(mgr)
	if err != nil {
		return err
	}
	o.metadata = metadataClient
	registry, err := sources.NewRegistry(o.SourceBufferSize, metrics.Registry)
	if err != nil {
		return err
	}
	namespaceSet, err := o.namespaces()
	if err != nil {
		return err
	}
	namespaces := slices.Sorted(maps.Keys(namespaceSet))
	starts := &watchStarts{}
	if o.perControllerLeases() {
		w, err := wireElected(ctx, mgr, sel, o, registry, namespaces, starts)
		if err != nil {
			return err
		}
		standby := &standbyReadiness{reader: mgr.GetAPIReader(), now: time.Now, leases: func(c Controller) []types.NamespacedName {
			return []types.NamespacedName{
				{Namespace: w.namespace, Name: leases.LeaseName(o.groupLeasePrefix(), c.leaseGroup())},
				{Namespace: w.namespace, Name: o.managerLeaseName()},
			}
		}, led: func(c Controller) bool { return starts.built(c.Name) }}
		standby.fixedNames, standby.ours = o.fixedNamesReadiness(w.namespace, sel)
		return addProbes(mgr, o.HealthProbeBindAddress, append(readyChecks(mgr, sel.Controllers, starts, standby, func(c Controller) string {
			if w.leading(c.Name) {
				return RoleLeading
			}
			return RoleStandby
		}), idleChecks(sel.Idle)...))
	}
	for _, c := range sel.Controllers {
		workers := max(1, sel.Concurrency[c.Name])
		if err := build(mgr, c, workers, namespaces, subscribe(registry, c, o), o, starts); err != nil {
			return fmt.Errorf("setting up controller %s: %w", c.Name, err)
		}
	}
	if err := addProducers(mgr, registry, sel.Controllers, o); err != nil {
		return err
	}
	role, err := managerRole(mgr, sel.Controllers, o)
	if err != nil {
		return err
	}
	// The manager's election is once for its life: it exits when it loses the Lease.
	standby := &standbyReadiness{reader: mgr.GetAPIReader(), now: time.Now}
	if o.LeaderElect {
		namespace, err := leaderElectionNamespace(o.LeaderElectionNamespace)
		if err != nil {
			return err
		}
		lease := types.NamespacedName{Namespace: namespace, Name: o.managerLeaseName()}
		standby.leases = func(Controller) []types.NamespacedName { return []types.NamespacedName{lease} }
		standby.fixedNames, standby.ours = o.fixedNamesReadiness(namespace, sel)
	}
	return addProbes(mgr, o.HealthProbeBindAddress, append(readyChecks(mgr, sel.Controllers, starts, standby, func(Controller) string { return role() }), idleChecks(sel.Idle)...))
}

// managerRole returns what this replica does with every controller when one election (or none)
// decides for the whole manager, and keeps switchboard_controller_leader in step with it.
func managerRole(mgr ctrl.Manager, controllers []Controller, o *Options) (func() string, error) {
	if !o.LeaderElect {
		for _, c := range controllers {
			leaderGauge.WithLabelValues(c.Name).Set(1)
		}
		return func() string { return RoleRunning }, nil
	}
	for _, c := range controllers {
		leaderGauge.WithLabelValues(c.Name).Set(0)
	}
	// A runnable that needs leader election starts once this manager is elected; the manager
	// exits when it loses the Lease.
	err := mgr.Add(manager.RunnableFunc(func(context.Context) error {
		for _, c := range controllers {
			leaderGauge.WithLabelValues(c.Name).Set(1)
		}
		return nil
	}))
	if err != nil {
		return nil, fmt.Errorf("adding the leader gauge: %w", err)
	}
	elected := mgr.Elected()
	return func() string {
		select {
		case <-elected:
			return RoleLeading
		default:
			return RoleStandby
		}
	}, nil
}

// build builds controller c from its row and adds it to mgr: its primary kind, its watches, one
// channel source per trigger, and its reconciler wrapped in the reconcile log. starts follows
// its uncached watches.
func build(mgr ctrl.Manager, c Controller, workers int, namespaces []string, triggers []<-chan event.GenericEvent, o *Options, starts *watchStarts) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(c.Name).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(c.For, builder.WithPredicates(c.ForPredicates...))
	var uncached []source.Source
	for _, w := range c.Watches {
		if err := w.validate(); err != nil {
			return err
		}
		switch w.How {
		case Owns:
			b = b.Owns(w.Object, builder.WithPredicates(w.Predicates...))
		case Maps:
			b = b.Watches(w.Object, handler.EnqueueRequestsFromMapFunc(w.Map(mgr.GetClient())), builder.WithPredicates(w.Predicates...))
		case Uncached, OptionalInformer:
			src, err := w.Source(mgr, namespaces, o)
			if err != nil {
				return fmt.Errorf("watch of %s: %w", kindOf(w.Object), err)
			}
			if src != nil { // nil: the flags switch the watch off
				uncached = append(uncached, src)
			}
		}
	}
	for _, src := range starts.track(c.Name, uncached) {
		b = b.WatchesRawSource(src)
	}
	for _, trigger := range triggers {
		b = b.WatchesRawSource(source.Channel(trigger, &handler.EnqueueRequestForObject{}))
	}
	r, err := c.New(mgr, o)
	if err != nil {
		return err
	}
	r = reconcilelog.Wrap(r)
	if o.dynamic != nil {
		// Outermost: another replica's namespaces are neither reconciled nor logged here.
		r = o.dynamic.gate.Reconciler(r)
	}
	return b.Complete(r)
}

// readyChecks returns one readiness check per controller, with what role says this replica does
// with it: its caches synced and, where this replica runs it, its uncached watches started
// (starts), so that a replica is ready for a controller once its workers can run; where it does
// not, once another replica holds the controller's Lease (standby).
func readyChecks(mgr ctrl.Manager, controllers []Controller, starts *watchStarts, standby *standbyReadiness, role func(Controller) string) []readyCheck {
	checks := make([]readyCheck, 0, len(controllers))
	for _, c := range controllers {
		synced := cachesSynced(mgr.GetCache(), c.watchedObjects())
		checks = append(checks, readyCheck{
			name: c.Name,
			check: func(req *http.Request) error {
				if err := synced(req); err != nil {
					return err
				}
				if r := role(c); r == RoleLeading || r == RoleRunning {
					return starts.started(c.Name)
				}
				return standby.check(req.Context(), c)
			},
			role: func() string { return role(c) },
		})
	}
	return checks
}

// cachesSynced is ready once the informers of every watched kind have synced. On a manager that
// is not the leader it starts those informers itself, so a standby is warm when it takes over.
func cachesSynced(c cache.Cache, objs []client.Object) healthz.Checker {
	return func(req *http.Request) error {
		for _, obj := range objs {
			informer, err := c.GetInformer(req.Context(), obj, cache.BlockUntilSynced(false))
			if err != nil {
				return fmt.Errorf("getting informer of %T: %w", obj, err)
			}
			if !informer.HasSynced() {
				return fmt.Errorf("cache of %s not synced yet", kindOf(obj))
			}
		}
		return nil
	}
}

// addIndexes registers the union of the controllers' indexes, each once.
func addIndexes(ctx context.Context, mgr ctrl.Manager, controllers []Controller) error {
	var needed []indexers.Index
	for _, c := range controllers {
		needed = append(needed, c.Indexes...)
	}
	return indexers.Register(ctx, mgr.GetFieldIndexer(), needed...)
}

// subscribe returns the channels of the sources c consumes that are switched on.
func subscribe(registry *sources.Registry, c Controller, o *Options) []<-chan event.GenericEvent {
	var triggers []<-chan event.GenericEvent
	for _, name := range c.Sources {
		if o.sourceOn(c, name) {
			triggers = append(triggers, registry.Subscribe(name, c.Name))
		}
	}
	return triggers
}

// sourceOn says whether the flags switch on a source that c consumes: a shared one, or one of
// c's own producers.
func (o *Options) sourceOn(c Controller, name sources.Name) bool {
	switch name {
	case sources.Periodic:
		return o.ResyncInterval > 0
	case sources.HTTPTrigger:
		return o.TriggerBindAddress != ""
	}
	for _, p := range c.Producers {
		if p.Source == name {
			return p.On()
		}
	}
	return false
}

// addProducers starts the producers of the sources that some selected controller consumes: the
// shared periodic and HTTP sources, then each controller's own.
func addProducers(mgr ctrl.Manager, registry *sources.Registry, controllers []Controller, o *Options) error {
	lists := map[string]func() client.ObjectList{}
	for _, c := range controllers {
		newList, err := listFor(mgr, c.For)
		if err != nil {
			return fmt.Errorf("controller %s: %w", c.Name, err)
		}
		lists[c.Name] = newList
	}
	periodic := sources.PeriodicResync{Reader: mgr.GetCache(), Interval: o.ResyncInterval, Lists: lists}
	if _, err := registry.AddProducer(mgr, sources.Periodic, periodic.Run); err != nil {
		return err
	}
	if err := addTriggerProducer(mgr, registry, o, nil); err != nil {
		return err
	}
	for _, c := range controllers {
		for _, p := range c.Producers {
			if !p.On() {
				continue
			}
			run, err := p.New(mgr, o)
			if err != nil {
				return fmt.Errorf("controller %s: source %s: %w", c.Name, p.Source, err)
			}
			if _, err := registry.AddProducer(mgr, p.Source, run); err != nil {
				return err
			}
		}
	}
	return nil
}

// addTriggerProducer starts the HTTP trigger when it is on; its token is read once, here. With
// standby (per-controller leases) it runs on every replica and refuses the controllers this
// replica does not lead; without, it runs on the elected manager only.
func addTriggerProducer(mgr ctrl.Manager, registry *sources.Registry, o *Options, standby func(controller string) (string, bool)) error {
	if o.TriggerBindAddress == "" {
		return nil
	}
	token, err := sources.ReadTokenFile(o.TriggerTokenFile)
	if err != nil {
		return err
	}
	trigger := sources.HTTPTriggerServer{BindAddress: o.TriggerBindAddress, Token: token, Secure: o.TriggerSecure, CertDir: o.TriggerCertDir, Standby: standby}
	_, err = registry.AddProducer(mgr, sources.HTTPTrigger, trigger.Run)
	return err
}

// listFor returns a constructor of empty lists of obj's kind: typed lists from the scheme, or
// unstructured lists for an unstructured kind (another project's CRD).
func listFor(mgr ctrl.Manager, obj client.Object) (func() client.ObjectList, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		listGVK := u.GroupVersionKind().GroupVersion().WithKind(u.GetKind() + "List")
		return func() client.ObjectList {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(listGVK)
			return list
		}, nil
	}
	gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
	if err != nil {
		return nil, err
	}
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if _, err := mgr.GetScheme().New(listGVK); err != nil {
		return nil, fmt.Errorf("no list kind for %s: %w", gvk.Kind, err)
	}
	return func() client.ObjectList {
		list, _ := mgr.GetScheme().New(listGVK)
		return list.(client.ObjectList)
	}, nil
}

// watchedObjects returns the primary kind and every kind watched through the cache that the
// cache's options name (not an OptionalInformer's).
func (c Controller) watchedObjects() []client.Object {
	objs := []client.Object{c.For}
	for _, w := range c.Watches {
		if w.How == Owns || w.How == Maps {
			objs = append(objs, w.Object)
		}
	}
	return objs
}

// cacheScope returns the controller's cache scope of kind, or nil.
func (c Controller) cacheScope(kind string) func([]string) cache.ByObject {
	for _, s := range c.CacheScopes {
		if kindOf(s.Object) == kind {
			return s.ByObject
		}
	}
	return nil
}

// trim returns the controller's trim of kind, or nil.
func (c Controller) trim(kind string) toolscache.TransformFunc {
	for _, t := range c.Trims {
		if kindOf(t.Object) == kind {
			return t.Transform
		}
	}
	return nil
}

// kindOf names an object's kind without a scheme: the set kind of a metadata-only object, else
// the Go type's name.
func kindOf(obj client.Object) string {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk != (schema.GroupVersionKind{}) {
		return gvk.Kind
	}
	return reflect.TypeOf(obj).Elem().Name()
}

// PrintTable writes the controller table as aligned columns.
func PrintTable(w io.Writer, table []Controller) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tGROUP\tDEFAULT\tWORKERS\tFOR\tWATCHES\tINDEXES\tSOURCES")
	for _, c := range table {
		def := "on"
		if !c.EnabledByDefault {
			def = "off"
		}
		workers := max(1, c.DefaultWorkers)
		var watches, indexes, srcs []string
		for _, w := range c.Watches {
			watches = append(watches, kindOf(w.Object)+" ("+string(w.How)+")")
		}
		for _, i := range c.Indexes {
			indexes = append(indexes, i.String())
		}
		for _, s := range c.Sources {
			srcs = append(srcs, string(s))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", c.Name, orNone([]string{c.Group}), def, workers, kindOf(c.For),
			orNone(watches), orNone(indexes), orNone(srcs))
	}
	return tw.Flush()
}

func orNone(items []string) string {
	if len(items) == 0 || len(items) == 1 && items[0] == "" {
		return "-"
	}
	return strings.Join(items, ", ")
}
