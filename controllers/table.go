package controllers

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/configmapwatcher"
	"github.com/example/switchboard/controllers/internal/apifeatures"
	"github.com/example/switchboard/controllers/myapp"
	"github.com/example/switchboard/controllers/verticalscaler"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
	"github.com/example/switchboard/indexers"
	"github.com/example/switchboard/internal/podrefs"
	"github.com/example/switchboard/sources"
)

// Controller is one row of the controller table: the one record of what a controller
// reconciles, watches and consumes. Wire builds the controller from it; nothing else says what
// a controller watches.
type Controller struct {
	// Name selects the controller in --controllers and --concurrency, and names it in logs,
	// metrics and its field manager.
	Name string
	// Group, when set, names the rows that make up one feature (one row per primary kind):
	// --controllers and --concurrency accept it for all of them, and config/components has one
	// component per group.
	Group string
	// EnabledByDefault says whether "*" enables it.
	EnabledByDefault bool
	// Requires names the controllers this one works through, which --controllers must enable
	// with it: the verticalpodautoscaler makes VerticalScalers that the verticalscaler carries
	// out.
	Requires []string
	// DefaultWorkers is the number of concurrent reconciles when --concurrency names neither
	// the controller nor its group; 0 means controller-runtime's default, 1.
	DefaultWorkers int
	// For is the primary kind: one reconcile per object of this kind.
	For client.Object
	// ForPredicates filter the events of the primary kind.
	ForPredicates []predicate.Predicate
	// Watches are the other kinds whose events reach the controller.
	Watches []Watch
	// Indexes are the shared field indexes the controller queries.
	Indexes []indexers.Index
	// Sources are the channel sources the controller consumes: shared ones (package sources)
	// and its own producers'. Each event names an object of the primary kind to reconcile.
	Sources []sources.Name
	// Producers are the controller's own producers of channel sources, which live in its
	// package and send through the shared registry.
	Producers []Producer
	// ReadsManagedFieldsOf are the kinds whose managed fields the controller reads back
	// (client-go's Extract helpers) to see whether an apply would change anything. The cache
	// strips managed fields from every other kind: a Deployment's can be several KiB.
	ReadsManagedFieldsOf []client.Object
	// Unsharded are the watched kinds whose objects carry no shard label (a workload's Pods and
	// ReplicaSets take their labels from its Pod template, not from it; a LimitRange belongs
	// to its namespace's workloads): a manager with
	// --watch-label-selector caches every object of these kinds, since the shard's workloads
	// own some of them.
	Unsharded []client.Object
	// Trims keep, of a watched kind, only what the controller reads. The cache applies a trim
	// only when this is the only selected controller that watches the kind, and the trim then
	// replaces the managed-fields rule above.
	Trims []Trim
	// CacheScopes narrow, for a watched kind, what the cache lists (namespaces, a field
	// selector), as the controller's own flags scope it. Like a trim, a scope applies only when
	// this is the only selected controller that watches the kind; otherwise the controller
	// leaves out what is not in its scope itself.
	CacheScopes []CacheScope
	// Optional says the primary kind comes from another project's CRD (Argo Rollouts): when
	// the API server does not serve it, the controller is idle, says so once at start, and
	// nothing of it is set up. The manager looks again every minute (idleRecheck).
	Optional bool
	// Idle, when set, says why the controller has nothing to do or must not act ("" when it may
	// act), given the manager's namespaces (none for all): an idle controller says so once at
	// start, and nothing of it is set up. The manager asks again every minute (idleRecheck); an
	// error says the answer cannot be had now.
	Idle func(ctx context.Context, namespaces []string) (string, error)
	// Fallbacks say what the controller does without each optional API that the API server
	// does not serve (package apifeatures). Prepare finds which are missing, once, says each
	// fallback once in log and in switchboard_api_fallback, and New reads them from the
	// Options (Options.MissingAPIs).
	Fallbacks func(apifeatures.Missing) []Fallback
	// Flags are the controller's own options, which live in its package: the manager binds
	// them beside its own flags and Resolve validates them. The rows of one group share one
	// value; nil for a controller without flags.
	Flags ControllerFlags
	// New returns the controller's reconciler on mgr, configured by the manager's flags and
	// its own.
	New func(mgr ctrl.Manager, o *Options) (reconcile.Reconciler, error)
}

// Fallback is what a controller does without an optional API the API server does not serve.
type Fallback struct {
	// Feature is the missing API, as apifeatures names it.
	Feature string
	// Instead says what the controller does instead, for the operator who reads the log.
	Instead string
}

// ControllerFlags are a controller's own options, as kube-controller-manager keeps one options
// struct per controller: their flags, and what is wrong with their values.
type ControllerFlags interface {
	// AddFlags binds the options to fs.
	AddFlags(fs *flag.FlagSet)
	// Validate says what is wrong with the values, naming the flag.
	Validate() error
}

// Preparer is implemented by a controller's options that read the cluster before the manager
// is made (what the cache lists is fixed then), given the manager's namespaces (none for all).
// The runnable it returns, if any, runs on every replica for as long as the manager does.
type Preparer interface {
	Prepare(ctx context.Context, cfg *rest.Config, namespaces []string) (manager.Runnable, error)
}

// How says how a controller watches a secondary kind.
type How string

// The ways of watching a secondary kind.
const (
	// Owns: an event of an object that the primary object controls (a controller owner
	// reference) reconciles that primary object. Through the manager's cache.
	Owns How = "owns"
	// Maps: a map function (Watch.Map) turns an event into the primary objects to reconcile.
	// Through the manager's cache.
	Maps How = "maps"
	// Uncached: a source the controller runs itself (Watch.Source), outside the cache, that
	// stores nothing; for example a metadata-only watch.
	Uncached How = "uncached"
	// OptionalInformer: a source the controller builds itself (Watch.Source) on an informer of
	// the manager's cache, for a kind of an optional CRD: the cache's options cannot name a
	// kind the API server may not serve, so the source starts the informer only where it is.
	OptionalInformer How = "optional, cached"
)

// Watch is a secondary kind a controller watches, and how.
type Watch struct {
	// Object is an instance of the kind: a typed object, or a PartialObjectMetadata with its
	// kind set for a metadata-only watch.
	Object client.Object
	// How the kind is watched.
	How How
	// Predicates filter the events of a cached watch (Owns, Maps) before they enqueue anything.
	Predicates []predicate.Predicate
	// Map returns, for a Maps watch, the map function, which reads through reader (the
	// manager's cache).
	Map func(reader client.Reader) handler.MapFunc
	// Source returns, for an Uncached or OptionalInformer watch, the source on mgr over namespaces (nil for every
	// namespace), configured by the flags; nil when the flags switch the watch off.
	Source func(mgr ctrl.Manager, namespaces []string, o *Options) (source.Source, error)
}

// validate says what is wrong with a watch: an unknown How, or a field that How does not use.
func (w Watch) validate() error {
	switch w.How {
	case Owns:
		if w.Map != nil || w.Source != nil {
			return fmt.Errorf("%s (owns) has a map function or a source", kindOf(w.Object))
		}
	case Maps:
		if w.Map == nil || w.Source != nil {
			return fmt.Errorf("%s (maps) needs a map function and no source", kindOf(w.Object))
		}
	case Uncached, OptionalInformer:
		if w.Source == nil || w.Map != nil || len(w.Predicates) > 0 {
			return fmt.Errorf("%s (%s) needs a source, and neither a map function nor predicates (a raw source applies none)", kindOf(w.Object), w.How)
		}
	default:
		return fmt.Errorf("%s: unknown way of watching %q", kindOf(w.Object), w.How)
	}
	return nil
}

// Producer is a controller's own producer of one channel source.
type Producer struct {
	// Source names the source; the controller's row lists it in Sources too.
	Source sources.Name
	// On says whether the flags switch the producer on.
	On func() bool
	// New returns the producer's loop on mgr.
	New func(mgr ctrl.Manager, o *Options) (sources.Run, error)
}

// CacheScope narrows what the cache lists of one kind.
type CacheScope struct {
	// Object is an instance of the kind.
	Object client.Object
	// ByObject returns the namespaces and field selector to list, given the manager's
	// namespaces (none for all); its Transform is not read.
	ByObject func(namespaces []string) cache.ByObject
}

// Trim is a cache transform that keeps of the objects of one kind what a controller reads.
type Trim struct {
	// Object is an instance of the kind.
	Object client.Object
	// Transform returns the trimmed object; it passes objects of other types through.
	Transform toolscache.TransformFunc
}

// Table returns the controller table, in the order controllers are set up and listed.
func Table() []Controller {
	// The verticalscaler's usage poller and its controller share the latest reports.
	usageReports := &recommender.Reports{}
	scaling := verticalscaler.NewOptions()
	// The configmapwatcher's controllers share their watches, digest key and options.
	reload := &configmapwatcher.Shared{}
	reloadOptions := configmapwatcher.NewOptions()
	return []Controller{
		{
			Name:             myapp.ControllerName,
			EnabledByDefault: true,
			// A burst of new MyApps converges 1.5x faster with 4 workers than with 1, and 8
			// are no faster than 4 on a 2-core control plane (README, Performance).
			DefaultWorkers: 4,
			For:            &v1alpha1.MyApp{},
			ForPredicates:  []predicate.Predicate{myapp.SpecOrDeletionChanged()},
			// Its Deployments and Services are watched metadata-only and not cached: a reconcile
			// reads the two it needs from the API server (myapp.OwnedChanges).
			Watches: []Watch{ownedWatch(appsv1.SchemeGroupVersion.WithKind("Deployment")), ownedWatch(corev1.SchemeGroupVersion.WithKind("Service"))},
			Sources: []sources.Name{sources.Periodic, sources.HTTPTrigger},
			Fallbacks: func(m apifeatures.Missing) []Fallback {
				if !m.MutatingAdmissionPolicy {
					return nil
				}
				return []Fallback{{Feature: apifeatures.MutatingAdmissionPolicy,
					Instead: "no admission policy sets the finalizer as a MyApp is created: the controller adds it, one more write per new MyApp"}}
			},
			New: func(mgr ctrl.Manager, o *Options) (reconcile.Reconciler, error) {
				return &myapp.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
					Recorder: mgr.GetEventRecorder(myapp.ControllerName), ShardLabels: o.shardLabels()}, nil
			},
		},
		{
			Name:             verticalscaler.ControllerName,
			Group:            verticalscaler.ControllerName,
			EnabledByDefault: true,
			For:              &v1alpha1.VerticalScaler{},
			// Status changes are this controller's own writes, except the recommendation that
			// another recommender writes into the VerticalScalers it recommends for.
			ForPredicates: []predicate.Predicate{predicate.Or[client.Object](predicate.GenerationChangedPredicate{},
				verticalscaler.RecommendationWrittenElsewhere(&scaling.RecommenderName))},
			Watches: verticalScalerWatches(),
			Indexes: []indexers.Index{indexers.VerticalScalerByTarget},
			Sources: []sources.Name{sources.Periodic, recommender.Source, sources.HTTPTrigger},
			Flags:   scaling,
			Producers: []Producer{{
				Source: recommender.Source,
				On:     scaling.ReadsUsage,
				New: func(mgr ctrl.Manager, _ *Options) (sources.Run, error) {
					// PodMetrics are read per target, uncached; Pods come from the cache, where
					// they are trimmed to what the verticalscaler reads.
					usage, err := recommender.NewUsageReader(scaling.UsageSource, mgr.GetAPIReader())
					if err != nil {
						return nil, err
					}
					// Made before the controller starts, in each term of leading it: no
					// reconcile reads a report of an earlier term's poller.
					usageReports.Clear()
					// Checkpoints are read uncached too: each once, after a restart or a leader
					// change.
					poller := &recommender.UsageProducer{Cache: mgr.GetCache(), RecommenderName: scaling.RecommenderName, Pods: mgr.GetCache(), Informers: mgr.GetCache(), Usage: usage, Interval: scaling.UsageInterval,
						Reports:            usageReports,
						CheckpointInterval: scaling.CheckpointInterval, CheckpointWritesPerSecond: scaling.CheckpointWritesPerSecond,
						CheckpointFlushTimeout: scaling.CheckpointFlushTimeout, CheckpointReader: mgr.GetAPIReader(), CheckpointWriter: mgr.GetClient(),
						FieldManager: verticalscaler.ControllerName, Recorder: mgr.GetEventRecorder(verticalscaler.ControllerName)}
					return poller.Run, nil
				},
			}},
			Fallbacks:            verticalScalerFallbacks,
			ReadsManagedFieldsOf: verticalscaler.ManagedFieldsKinds(),
			Unsharded:            []client.Object{&appsv1.ReplicaSet{}, &corev1.Pod{}, &corev1.LimitRange{}},
			Trims: []Trim{{Object: &appsv1.ReplicaSet{}, Transform: verticalscaler.TrimReplicaSet},
				{Object: &corev1.Pod{}, Transform: verticalscaler.TrimPod}},
			New: func(mgr ctrl.Manager, o *Options) (reconcile.Reconciler, error) {
				clientset, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
				if err != nil {
					return nil, fmt.Errorf("creating the clientset: %w", err)
				}
				return &verticalscaler.Reconciler{Client: mgr.GetClient(), Reports: usageReports,
					Recorder: mgr.GetEventRecorder(verticalscaler.ControllerName), Discovery: clientset.Discovery(),
					CoreV1: clientset.CoreV1().RESTClient(), Limits: scaling.UpdateLimits(), Shard: o.WatchLabelSelector, Missing: o.MissingAPIs(),
					RecommenderName: scaling.RecommenderName}, nil
			},
		},
		{
			Name: verticalscaler.VPAControllerName,
			// One group with the verticalscaler: one Lease, one set of flags, one component.
			Group:            verticalscaler.ControllerName,
			EnabledByDefault: true,
			Requires:         []string{verticalscaler.ControllerName},
			Flags:            scaling,
			// Idle while the Vertical Pod Autoscaler's own components run, so that it never
			// fights them; and, being Optional, without the VPA's CRD.
			Idle: scaling.VPAComponentsRunning,
			For:  verticalscaler.NewVerticalPodAutoscaler(),
			// The status is this controller's to write, so a change of it is not news; except
			// the recommendation of an object another recommender writes, which its
			// VerticalScaler applies.
			ForPredicates: []predicate.Predicate{predicate.Or[client.Object](predicate.GenerationChangedPredicate{},
				verticalscaler.RecommendationWrittenElsewhere(&scaling.RecommenderName))},
			// Its VerticalScalers' status changes are what it copies into the VPA's status; a
			// checkpoint whose VPA is gone is collected by that VPA's reconcile.
			Watches: []Watch{{Object: &v1alpha1.VerticalScaler{}, How: Owns},
				{Object: verticalscaler.NewVerticalPodAutoscalerCheckpoint(), How: Maps, Map: verticalscaler.VerticalPodAutoscalerOfCheckpoint}},
			Trims:    []Trim{{Object: verticalscaler.NewVerticalPodAutoscalerCheckpoint(), Transform: verticalscaler.TrimVPACheckpoint}},
			Sources:  []sources.Name{sources.Periodic, sources.HTTPTrigger},
			Optional: true,
			New: func(mgr ctrl.Manager, _ *Options) (reconcile.Reconciler, error) {
				return &verticalscaler.VPAReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), RecommenderName: scaling.RecommenderName,
					Recorder: mgr.GetEventRecorder(verticalscaler.VPAControllerName)}, nil
			},
		},
		// The configmapwatcher: one row per workload kind, sharing one uncached watch per kind of
		// source (ConfigMaps, Secrets) and namespace, the digest key, the limit of rolls per
		// minute and the webhook. Argo Rollouts are optional: without their CRD the row is idle.
		configMapWatcherRow(reload, reloadOptions, configmapwatcher.Deployments, false),
		configMapWatcherRow(reload, reloadOptions, configmapwatcher.StatefulSets, false),
		configMapWatcherRow(reload, reloadOptions, configmapwatcher.DaemonSets, false),
		configMapWatcherRow(reload, reloadOptions, configmapwatcher.CronJobs, false),
		configMapWatcherRow(reload, reloadOptions, configmapwatcher.Jobs, false),
		configMapWatcherRow(reload, reloadOptions, configmapwatcher.Rollouts, true),
	}
}

// verticalScalerFallbacks are what the verticalscaler does without an admission policy or
// in-place resizes; the VerticalScalers they touch say so in their Applied condition too.
func verticalScalerFallbacks(m apifeatures.Missing) []Fallback {
	var out []Fallback
	if m.MutatingAdmissionPolicy {
		out = append(out, Fallback{Feature: apifeatures.MutatingAdmissionPolicy,
			Instead: "no admission policy sizes new Pods: they start as their template says; updateMode Initial sizes no Pod (Applied=False, AdmissionPolicyUnavailable), InPlaceOrRecreate resizes new Pods once they run, Recreate writes the Pod template of the kinds that roll on it, also where updatePolicy.recreateBy is Eviction, and evicts no Pod of the others (AdmissionPolicyUnavailable: their replacements would start as before)"})
	}
	if m.PodResize {
		out = append(out, Fallback{Feature: apifeatures.PodResize,
			Instead: "updateMode InPlaceOrRecreate evicts the Pods it would resize in place, as Recreate does for the kinds it cannot roll"})
	}
	return out
}

// verticalScalerWatches are the verticalscaler's watches: every workload kind it knows, mapped
// to the VerticalScalers that name an object through the index of targets, and Pods, mapped to
// the VerticalScalers whose recorded selector selects them, LimitRanges, mapped to the
// VerticalScalers of their namespace, and VerticalScalers in conflict. The Pod informer also
// feeds the usage poller (Pods and their OOM kills).
func verticalScalerWatches() []Watch {
	watches := make([]Watch, 0, len(verticalscaler.TemplateKinds)+3)
	for _, k := range verticalscaler.TemplateKinds {
		watches = append(watches, Watch{Object: k.New(), How: Maps, Map: verticalscaler.VerticalScalersOf(k),
			Predicates: []predicate.Predicate{verticalscaler.WorkloadChanged(k)}})
	}
	return append(watches, Watch{Object: &corev1.Pod{}, How: Maps, Map: verticalscaler.VerticalScalersOfPod,
		Predicates: []predicate.Predicate{verticalscaler.PodChanged()}},
		// What a target's Pods may be given depends on its namespace's LimitRanges.
		Watch{Object: &corev1.LimitRange{}, How: Maps, Map: verticalscaler.VerticalScalersOfLimitRange},
		// A VerticalScaler that goes, or names another workload, may end another's conflict.
		Watch{Object: &v1alpha1.VerticalScaler{}, How: Maps, Map: verticalscaler.VerticalScalersInConflict,
			Predicates: []predicate.Predicate{predicate.GenerationChangedPredicate{}}})
}

// configMapWatcherRow is the configmapwatcher's row for the workload kind k: the workloads of
// the kind in its scope, cached and trimmed; ConfigMaps and Secrets through the shared
// uncached watches, mapped through the kind's index of sources.
func configMapWatcherRow[T client.Object](shared *configmapwatcher.Shared, flags *configmapwatcher.Options, k configmapwatcher.Kind[T], optional bool) Controller {
	watch := func(kind podrefs.SourceKind) Watch {
		return Watch{Object: metadataOnly(corev1.SchemeGroupVersion.WithKind(string(kind))), How: Uncached,
			Source: func(mgr ctrl.Manager, namespaces []string, o *Options) (source.Source, error) {
				return configmapwatcher.Changes(shared, mgr, namespaces, kind, k, configMapWatcherSettings(o, flags))
			}}
	}
	// With --enable-csi-integration and the Secrets Store CSI driver's CRD: its
	// SecretProviderClassPodStatus objects, through one informer of the cache that every row
	// shares (not named in the cache's options, so that the CRD need not be installed).
	providerStatuses := Watch{Object: configmapwatcher.ProviderStatusObject(), How: OptionalInformer,
		Source: func(mgr ctrl.Manager, namespaces []string, o *Options) (source.Source, error) {
			return configmapwatcher.ProviderClassChanges(shared, mgr, namespaces, k, configMapWatcherSettings(o, flags))
		}}
	return Controller{
		Name:             k.ControllerName,
		Group:            configmapwatcher.Group,
		EnabledByDefault: true,
		For:              k.New(),
		ForPredicates:    configmapwatcher.Predicates(flags),
		Watches:          []Watch{watch(podrefs.ConfigMap), watch(podrefs.Secret), providerStatuses},
		Indexes:          []indexers.Index{indexers.WorkloadsBySource(k.New(), flags.Reading)},
		Sources:          []sources.Name{sources.Periodic, sources.HTTPTrigger},
		Trims:            []Trim{{Object: k.New(), Transform: k.Trim(flags)}},
		CacheScopes: []CacheScope{{Object: k.New(), ByObject: func(namespaces []string) cache.ByObject {
			return flags.Scope().CacheScope(namespaces)
		}}},
		Optional: optional,
		Idle: func(_ context.Context, namespaces []string) (string, error) {
			if reason := flags.Ignores(k.Name); reason != "" {
				return reason, nil
			}
			return flags.Scope().Idle(namespaces), nil
		},
		Flags: flags,
		New: func(mgr ctrl.Manager, o *Options) (reconcile.Reconciler, error) {
			namespaces, err := o.namespaces()
			if err != nil {
				return nil, err
			}
			return configmapwatcher.NewReconciler(shared, mgr, slices.Sorted(maps.Keys(namespaces)), k, configMapWatcherSettings(o, flags))
		},
	}
}

// configMapWatcherSettings are the configmapwatcher's settings from its flags and the
// manager's, with the metadata client of its uncached watches.
func configMapWatcherSettings(o *Options, flags *configmapwatcher.Options) configmapwatcher.Settings {
	settings := flags.Settings(o.managerNamespace())
	settings.Metadata = o.metadata
	return settings
}

// ownedWatch is myapp's watch of the objects of kind gvk that MyApps control: metadata only,
// uncached, restricted to the shard's labels.
func ownedWatch(gvk schema.GroupVersionKind) Watch {
	resource := gvk.GroupVersion().WithResource(strings.ToLower(gvk.Kind) + "s")
	return Watch{Object: metadataOnly(gvk), How: Uncached,
		Source: func(mgr ctrl.Manager, namespaces []string, o *Options) (source.Source, error) {
			return myapp.OwnedChanges(mgr, o.metadata, namespaces, resource, o.WatchLabelSelector), nil
		}}
}

// metadataOnly returns the object of a metadata-only watch of gvk.
func metadataOnly(gvk schema.GroupVersionKind) client.Object {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return obj
}
