package configmapwatcher

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/metadata"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/indexers"
	"github.com/example/switchboard/internal/podrefs"
)

// Shared is what the configmapwatcher's controllers (one per workload kind) share: one
// uncached watch per kind of source and namespace, and the digest key. The controller table
// creates one and hands it to each of the group's rows; it is set up on the manager of the
// first row built.
type Shared struct {
	once     sync.Once
	err      error
	metadata metadata.Interface
	changes  map[podrefs.SourceKind]*changes
	keys     *DigestKeys
	limiter  *rolloutLimiter
	notifier *notifier
	alerter  *notifier
	jobs     *jobRecreator
	// started is when the watches were made.
	started time.Time
	// debouncers hold each controller's requests while their sources' quiet period lasts.
	debouncers debouncers
	// unrecorded holds the changes of sources of workloads without a record yet.
	unrecorded unrecordedChanges
	// providerStatuses reads the Secrets Store CSI driver's SecretProviderClassPodStatus
	// objects (the manager's cache): nil without --enable-csi-integration or without the CRD.
	providerStatuses client.Reader
}

// setup makes the watches over the manager's namespaces (none for every namespace) as the
// scope narrows them, through the settings' metadata client, the digest key's reader, the
// limiter of rolls and the webhook's notifier, once.
func (s *Shared) setup(mgr ctrl.Manager, namespaces []string, settings Settings) error {
	s.once.Do(func() {
		s.metadata = settings.Metadata
		log := mgr.GetLogger().WithValues("group", Group)
		s.changes = map[podrefs.SourceKind]*changes{}
		selector := metav1.ListOptions{}
		if f := settings.Scope.NamespaceFieldSelector(); f != nil {
			selector.FieldSelector = f.String()
		}
		if settings.Scope.resourceSelector != nil {
			selector.LabelSelector = settings.Scope.resourceSelector.String()
		}
		for _, kind := range podrefs.SourceKinds {
			s.changes[kind] = newChanges(kind, s.metadata, settings.Scope.Namespaces(namespaces), selector, log)
		}
		if settings.Reading.CSI {
			if s.err = s.setupProviderStatuses(mgr, log); s.err != nil {
				return
			}
		}
		s.keys = &DigestKeys{Secret: settings.DigestKeySecret, Reader: mgr.GetAPIReader(), Writer: mgr.GetClient()}
		// The key is read (or made) as soon as this replica leads, not by the first reconcile:
		// a workload created at once, and a change made just after, then find the baseline
		// taken before the change, as Reloader's suite does right after installing.
		if s.err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			if _, err := s.keys.get(ctx); err != nil && ctx.Err() == nil {
				log.Error(err, "Reading the config digest key at start failed; the first reconcile tries again")
			}
			return nil
		})); s.err != nil {
			s.err = fmt.Errorf("adding the digest key's reader: %w", s.err)
			return
		}
		s.limiter = newRolloutLimiter(settings.MaxRolloutsPerMinute, time.Now)
		s.notifier = newNotifier(settings.Webhook, log)
		s.alerter = newAlerter(settings.Alerts, log)
		s.jobs = &jobRecreator{}
		s.started = time.Now()
	})
	return s.err
}

// setupProviderStatuses reads SecretProviderClassPodStatus objects through the manager's cache,
// when the API server serves them. Without the Secrets Store CSI driver's CRD it says so, once
// at start, and the workloads roll on ConfigMaps and Secrets only: Reloader, too, leaves its
// CSI controller out then. The kind is asked for again at the manager's next start.
func (s *Shared) setupProviderStatuses(mgr ctrl.Manager, log logr.Logger) error {
	_, err := mgr.GetRESTMapper().RESTMapping(providerStatusGVK.GroupKind(), providerStatusGVK.Version)
	switch {
	case apimeta.IsNoMatchError(err):
		log.Info("SecretProviderClasses not watched: the API server does not serve "+providerStatusGVK.GroupVersion().String()+" "+providerStatusGVK.Kind+
			" (is the Secrets Store CSI driver installed?); --enable-csi-integration takes effect once it does and the manager restarts", "flag", "--enable-csi-integration")
		return nil
	case err != nil:
		return fmt.Errorf("asking whether the API server serves %s: %w", providerStatusGVK.GroupVersion(), err)
	}
	log.Info("Watching SecretProviderClassPodStatuses (--enable-csi-integration)")
	s.providerStatuses = mgr.GetCache()
	return nil
}

// ProviderClassChanges returns the source of the changes of the Secrets Store CSI driver's
// SecretProviderClassPodStatus objects for the controller of the workload kind k on mgr (see
// providerStatusHandler): an informer of the manager's cache, shared by the controllers of
// every workload kind. It returns nil without --enable-csi-integration or without the CRD.
func ProviderClassChanges[T client.Object](s *Shared, mgr ctrl.Manager, namespaces []string, k Kind[T], settings Settings) (source.Source, error) {
	if err := s.setup(mgr, namespaces, settings); err != nil {
		return nil, err
	}
	if s.providerStatuses == nil {
		return nil, nil
	}
	reader := mgr.GetClient()
	return source.Kind(mgr.GetCache(), ProviderStatusObject(), providerStatusHandler(func(ctx context.Context, namespace string, src podrefs.Source) []mappedWorkload {
		if !settings.Scope.Namespace(namespace) {
			return nil
		}
		return workloadsFor(ctx, reader, k, namespace, src, settings.Reading)
	})), nil
}

// Names lists the names of a namespace's ConfigMaps or Secrets, metadata only and in pages,
// for names that count through a pattern.
func (s *Shared) Names(ctx context.Context, kind podrefs.SourceKind, namespace string) ([]string, error) {
	resource := s.changes[kind].resource
	var names []string
	opts := metav1.ListOptions{Limit: 500, LabelSelector: s.changes[kind].selector.LabelSelector}
	for {
		list, err := s.metadata.Resource(resource).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, item := range list.Items {
			names = append(names, item.Name)
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return names, nil
		}
	}
}

// Changes returns the source of the changes of kind's objects for the controller of the
// workload kind k on mgr, over namespaces (none for all): the shared watch, mapped to k's
// workloads through the shared index on mgr's cache, queued after settings.Debounce. With
// --resources-to-ignore naming kind it returns nil: that kind is not watched.
func Changes[T client.Object](s *Shared, mgr ctrl.Manager, namespaces []string, kind podrefs.SourceKind, k Kind[T], settings Settings) (source.Source, error) {
	if err := s.setup(mgr, namespaces, settings); err != nil {
		return nil, err
	}
	if !settings.Scope.SourceKind(kind) {
		return nil, nil
	}
	reader := mgr.GetClient()
	return &changesSource{changes: s.changes[kind], debouncers: &s.debouncers, consumer: consumer{
		name: k.ControllerName,
		workloadsFor: func(ctx context.Context, namespace string, src podrefs.Source) []mappedWorkload {
			if !settings.Scope.Namespace(namespace) {
				return nil
			}
			return workloadsFor(ctx, reader, k, namespace, src, settings.Reading)
		},
		optedIn: func(ctx context.Context, namespace string) ([]reconcile.Request, error) {
			return optedIn(ctx, reader, k, namespace, settings.Reading)
		},
		delay:      settings.Debounce,
		unrecorded: &s.unrecorded,
	}}, nil
}

// NewReconciler returns the reconciler of the workload kind k on mgr, and adds to mgr what
// runs beside it: the webhook's notifier and the report of Reloader's annotations that k's
// workloads carry and the controller does not read.
func NewReconciler[T client.Object](s *Shared, mgr ctrl.Manager, namespaces []string, k Kind[T], settings Settings) (*Reconciler[T], error) {
	if err := s.setup(mgr, namespaces, settings); err != nil {
		return nil, err
	}
	initKind(k.Name)
	for _, n := range []*notifier{s.notifier, s.alerter} {
		if n == nil {
			continue
		}
		if err := mgr.Add(n); err != nil {
			return nil, fmt.Errorf("adding the webhook's notifier: %w", err)
		}
	}
	log := mgr.GetLogger().WithValues("group", Group, "controller", k.ControllerName)
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil // stopping
		}
		if err := reportReloaderAnnotations(ctx, mgr.GetCache(), k, settings.Reading, log); err != nil {
			// A report, not a duty: the manager goes on without it.
			log.Error(err, "Reporting Reloader's unsupported annotations failed")
		}
		return nil
	}))
	if err != nil {
		return nil, fmt.Errorf("adding the report of Reloader's annotations: %w", err)
	}
	// Built at each term of the controller's Lease: notes of an earlier term are stale.
	s.unrecorded.forgetController(k.ControllerName)
	return &Reconciler[T]{Kind: k, Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ProviderStatuses: s.providerStatuses, Lister: s,
		Recorder: mgr.GetEventRecorder(k.ControllerName), Keys: s.keys, Settings: settings,
		limiter: s.limiter, notifier: s.notifier, alerter: s.alerter, jobs: s.jobs, now: time.Now, started: s.started,
		debounced:  func(req reconcile.Request) bool { return s.debouncers.waiting(k.ControllerName, req) },
		unrecorded: &s.unrecorded}, nil
}

// workloadsFor maps a source to the workloads of kind k in namespace that may roll on it,
// through the shared index on reader, the manager's cache: those filed under the source, and
// those filed under the kind's wildcard whose patterns match its name.
func workloadsFor[T client.Object](ctx context.Context, reader client.Reader, k Kind[T], namespace string, src podrefs.Source, reading podrefs.Reading) []mappedWorkload {
	// As the index reads them: Reloader's annotations whatever --reloader-annotations says.
	reading.Reloader = true
	var workloads []mappedWorkload
	for _, value := range []string{src.Key(), podrefs.Wildcard(src.Kind)} {
		list := k.NewList()
		if err := reader.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{indexers.WorkloadSourcesField: value}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing workloads by source failed", "kind", k.Name, "source", src.Key())
			return nil
		}
		_ = apimeta.EachListItem(list, func(item runtime.Object) error {
			obj := item.(client.Object)
			if value != src.Key() {
				template := podrefs.PodTemplate(obj)
				selection, _ := podrefs.Select(obj.GetAnnotations(), template.Annotations, reading)
				if !selection.Matches(src) {
					return nil
				}
			}
			_, recorded := obj.GetAnnotations()[v1alpha1.ConfigStateAnnotation]
			workloads = append(workloads, mappedWorkload{Request: reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}, recorded: recorded})
			return nil
		})
	}
	return workloads
}

// optedIn lists, from reader (the manager's cache), the requests of every workload of kind k
// in namespace ("" for all) that the shared index files under some source.
func optedIn[T client.Object](ctx context.Context, reader client.Reader, k Kind[T], namespace string, reading podrefs.Reading) ([]reconcile.Request, error) {
	list := k.NewList()
	if err := reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing %ss: %w", k.Name, err)
	}
	var requests []reconcile.Request
	err := apimeta.EachListItem(list, func(item runtime.Object) error {
		obj := item.(client.Object)
		if len(indexers.WorkloadSources(obj, reading)) > 0 {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
		return nil
	})
	return requests, err
}
