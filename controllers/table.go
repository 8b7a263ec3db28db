package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/configmapwatcher"
	"github.com/example/switchboard/controllers/myapp"
	"github.com/example/switchboard/controllers/verticalscaler"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
	"github.com/example/switchboard/indexers"
	"github.com/example/switchboard/sources"
)

// Controller is one row of the controller table.
type Controller struct {
	// Name selects the controller in --controllers and --concurrency, and names it in logs,
	// metrics and its field manager.
	Name string
	// EnabledByDefault says whether "*" enables it.
	EnabledByDefault bool
	// For is the primary kind: one reconcile per object of this kind.
	For client.Object
	// Watches are the other kinds whose events reach the controller.
	Watches []Watch
	// Indexes are the shared field indexes the controller queries.
	Indexes []indexers.Index
	// Sources are the channel sources the controller consumes: shared ones (package sources)
	// and its own producers'.
	Sources []sources.Name
	// Producers are the controller's own producers of channel sources, which live in its
	// package and send through the shared registry.
	Producers []Producer
	// ReadsManagedFieldsOf are the kinds whose managed fields the controller reads back
	// (client-go's Extract helpers) to see whether an apply would change anything. The cache
	// strips managed fields from every other kind: a Deployment's can be several KiB.
	ReadsManagedFieldsOf []client.Object
	// Trims keep, of a watched kind, only what the controller reads. The cache applies a trim
	// only when this is the only selected controller that watches the kind, and the trim then
	// replaces the managed-fields rule above.
	Trims []Trim
	// Setup builds the controller and adds it to the manager.
	Setup func(mgr ctrl.Manager, opts SetupOptions) error
}

// Producer is a controller's own producer of one channel source.
type Producer struct {
	// Source names the source; the controller's row lists it in Sources too.
	Source sources.Name
	// On says whether the flags switch the producer on.
	On func(o *Options) bool
	// New returns the producer's loop on mgr.
	New func(mgr ctrl.Manager, o *Options) (sources.Run, error)
}

// Watch is a secondary kind a controller watches, and how.
type Watch struct {
	// Object is an instance of the kind: a typed object, or a PartialObjectMetadata with its
	// kind set for a metadata-only watch.
	Object client.Object
	// How is "owns", "maps" (through a map function), or "uncached": a metadata-only watch
	// the controller runs itself, outside the cache, that stores nothing.
	How string
}

// Trim is a cache transform that keeps of the objects of one kind what a controller reads.
type Trim struct {
	// Object is an instance of the kind.
	Object client.Object
	// Transform returns the trimmed object; it passes objects of other types through.
	Transform toolscache.TransformFunc
}

// SetupOptions is what Wire hands a controller's setup function.
type SetupOptions struct {
	// Controller carries the controller's concurrency.
	Controller controller.Options
	// Namespaces are the namespaces the manager is limited to; nil for every namespace.
	Namespaces []string
	// Triggers are the channels of the sources the controller consumes, in the order of its
	// row's Sources; never nil.
	Triggers []<-chan event.GenericEvent
}

// Table returns the controller table, in the order controllers are set up and listed.
func Table() []Controller {
	// The verticalscaler's usage poller and its controller share the latest reports.
	usageReports := &recommender.Reports{}
	return []Controller{
		{
			Name:             myapp.ControllerName,
			EnabledByDefault: true,
			For:              &v1alpha1.MyApp{},
			Watches: []Watch{
				{Object: &appsv1.Deployment{}, How: "owns"},
				{Object: &corev1.Service{}, How: "owns"},
			},
			Sources:              []sources.Name{sources.Periodic, sources.HTTPTrigger},
			ReadsManagedFieldsOf: []client.Object{&appsv1.Deployment{}, &corev1.Service{}},
			Setup: func(mgr ctrl.Manager, opts SetupOptions) error {
				r := &myapp.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(myapp.ControllerName)}
				return r.SetupWithManager(mgr, opts.Controller, opts.Triggers...)
			},
		},
		{
			Name:             verticalscaler.ControllerName,
			EnabledByDefault: true,
			For:              &v1alpha1.VerticalScaler{},
			Watches: []Watch{
				{Object: &appsv1.Deployment{}, How: "maps"},
			},
			Indexes: []indexers.Index{indexers.VerticalScalerByDeploymentName},
			Sources: []sources.Name{sources.Periodic, recommender.Source, sources.HTTPTrigger},
			Producers: []Producer{{
				Source: recommender.Source,
				On:     func(o *Options) bool { return o.UsageSource != recommender.UsageOff },
				New: func(mgr ctrl.Manager, o *Options) (sources.Run, error) {
					// Pods and PodMetrics are read per targeted Deployment, uncached: caching
					// every Pod of the cluster would cost far more memory than the reads.
					usage, err := recommender.NewUsageReader(o.UsageSource, mgr.GetAPIReader())
					if err != nil {
						return nil, err
					}
					poller := &recommender.UsageProducer{Cache: mgr.GetCache(), Usage: usage, Interval: o.UsageInterval,
						Threshold: recommender.Tolerance, Reports: usageReports}
					return poller.Run, nil
				},
			}},
			ReadsManagedFieldsOf: []client.Object{&appsv1.Deployment{}},
			Setup: func(mgr ctrl.Manager, opts SetupOptions) error {
				r := &verticalscaler.Reconciler{Client: mgr.GetClient(), Reports: usageReports}
				return r.SetupWithManager(mgr, opts.Controller, opts.Triggers...)
			},
		},
		{
			Name:             configmapwatcher.ControllerName,
			EnabledByDefault: true,
			For:              &appsv1.Deployment{},
			Watches: []Watch{
				{Object: metadataOnly(corev1.SchemeGroupVersion.WithKind("ConfigMap")), How: uncached},
			},
			Indexes: []indexers.Index{indexers.DeploymentByConfigMap},
			Sources: []sources.Name{sources.Periodic, sources.HTTPTrigger},
			Trims:   []Trim{{Object: &appsv1.Deployment{}, Transform: configmapwatcher.TrimDeployment}},
			Setup: func(mgr ctrl.Manager, opts SetupOptions) error {
				r := &configmapwatcher.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
					Recorder: mgr.GetEventRecorder(configmapwatcher.ControllerName)}
				return r.SetupWithManager(mgr, opts.Controller, opts.Namespaces, opts.Triggers...)
			},
		},
	}
}

// uncached is the How of a watch that does not go through the manager's cache.
const uncached = "uncached"

// metadataOnly returns the object of a metadata-only watch of gvk.
func metadataOnly(gvk schema.GroupVersionKind) client.Object {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return obj
}
