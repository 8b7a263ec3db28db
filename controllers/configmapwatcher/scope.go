package configmapwatcher

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/example/switchboard/controllers/internal/metawatch"
	"github.com/example/switchboard/internal/podrefs"
)

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Scope is what the configmapwatcher looks at, as Reloader's scope flags have it: the
// namespaces (--namespace-selector, --namespaces-to-ignore, besides the manager's
// --watch-namespaces) and the sources (--resource-label-selector, --resources-to-ignore). The
// cache and the metadata watches ask the API server for what it selects only, where they can
// (CacheScope, changes); Reconcile and the predicates check it too, for what reaches them
// otherwise: a kind another controller caches whole, the periodic resync, the HTTP trigger.
type Scope struct {
	// namespaces are those --namespace-selector selected at start (Options.Prepare);
	// selectsByLabels says whether it is set.
	namespaces      []string
	selectsByLabels bool
	// ignored are --namespaces-to-ignore.
	ignored map[string]bool
	// resourceSelector is --resource-label-selector; nil for every source.
	resourceSelector labels.Selector
	// ignoredSources are --resources-to-ignore's kinds.
	ignoredSources map[podrefs.SourceKind]bool
}

// Namespace says whether the configmapwatcher looks at namespace.
func (s Scope) Namespace(namespace string) bool {
	if s.ignored[namespace] {
		return false
	}
	return !s.selectsByLabels || slices.Contains(s.namespaces, namespace)
}

// SourceKind says whether sources of kind count at all.
func (s Scope) SourceKind(kind podrefs.SourceKind) bool { return !s.ignoredSources[kind] }

// Source says whether a source of kind with these labels counts.
func (s Scope) Source(kind podrefs.SourceKind, sourceLabels map[string]string) bool {
	return s.SourceKind(kind) && (s.resourceSelector == nil || s.resourceSelector.Matches(labels.Set(sourceLabels)))
}

// Namespaces returns the namespaces to watch, given the manager's (none for all): nil for all
// (then NamespaceFieldSelector leaves out the ignored ones), else a sorted list, which is empty
// when nothing is selected.
func (s Scope) Namespaces(manager []string) []string {
	var candidates []string
	switch {
	case s.selectsByLabels && len(manager) > 0:
		for _, ns := range s.namespaces {
			if slices.Contains(manager, ns) {
				candidates = append(candidates, ns)
			}
		}
	case s.selectsByLabels:
		candidates = s.namespaces
	case len(manager) > 0:
		candidates = manager
	default:
		return nil
	}
	out := []string{}
	for _, ns := range candidates {
		if !s.ignored[ns] {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// NamespaceFieldSelector leaves out the ignored namespaces from a watch of every namespace; nil
// when none is ignored.
func (s Scope) NamespaceFieldSelector() fields.Selector {
	if len(s.ignored) == 0 {
		return nil
	}
	var terms []fields.Selector
	for _, ns := range slices.Sorted(maps.Keys(s.ignored)) {
		terms = append(terms, fields.OneTermNotEqualSelector("metadata.namespace", ns))
	}
	return fields.AndSelectors(terms...)
}

// Idle says why the configmapwatcher has nothing to look at, "" when it has something:
// --namespace-selector selects no namespace.
func (s Scope) Idle(manager []string) string {
	if s.selectsByLabels && len(s.Namespaces(manager)) == 0 {
		return "no namespace matches --namespace-selector"
	}
	return ""
}

// CacheScope returns what the cache lists of a workload kind when only the configmapwatcher
// watches it: the selected namespaces, or every namespace but the ignored ones.
func (s Scope) CacheScope(manager []string) cache.ByObject {
	if namespaces := s.Namespaces(manager); namespaces != nil {
		byNamespace := map[string]cache.Config{}
		for _, ns := range namespaces {
			byNamespace[ns] = cache.Config{}
		}
		return cache.ByObject{Namespaces: byNamespace}
	}
	return cache.ByObject{Field: s.NamespaceFieldSelector()}
}

// Prepare runs before the manager is made. It logs Reloader's flags and environment variables
// that the configmapwatcher was given but does not support (ReloaderFlags), and reads which
// namespaces --namespace-selector selects (the cache's namespaces are fixed once the manager
// is made); it returns what watches that set afterwards: a runnable that stops the manager with
// ErrNamespacesChanged once the set changes, so that its replacement watches the new set (nil
// without --namespace-selector).
func (o *Options) Prepare(ctx context.Context, cfg *rest.Config) (manager.Runnable, error) {
	o.reportReloaderFlags(logr.FromContextOrDiscard(ctx).WithValues("group", Group), os.LookupEnv)
	if o.namespaceSelector == nil {
		return nil, nil
	}
	c, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a metadata client: %w", err)
	}
	w := &namespaceWatch{client: c, selector: o.namespaceSelector, quiet: namespaceQuiet}
	o.selectedNamespaces, _, err = w.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the namespaces --namespace-selector=%s selects: %w", o.NamespaceSelector, err)
	}
	w.selected = o.selectedNamespaces
	return w, nil
}

// ErrNamespacesChanged stops the manager when the namespaces --namespace-selector selects
// changed: the cache of workloads lists the namespaces selected at start, and only a new
// manager lists others. Records make the restart roll nothing that did not change.
var ErrNamespacesChanged = errors.New("the namespaces --namespace-selector selects changed; restarting to watch them")

// namespacesResource is the resource of Namespaces, read metadata only.
var namespacesResource = corev1.SchemeGroupVersion.WithResource("namespaces")

// namespaceQuiet is how long the namespace watch waits after a change of the selected set
// before it stops the manager, so that namespaces labelled one after the other cost one restart.
const namespaceQuiet = 3 * time.Second

// namespaceWatch watches the namespaces a label selector selects, metadata only, and returns
// ErrNamespacesChanged once they differ from selected.
type namespaceWatch struct {
	client   metadata.Interface
	selector labels.Selector
	selected []string
	quiet    time.Duration
}

// NeedLeaderElection is false: every replica's cache must list the selected namespaces, so
// that a standby that takes over has the right ones.
func (w *namespaceWatch) NeedLeaderElection() bool { return false }

// list returns the names of the selected namespaces, sorted, and the list's resourceVersion.
func (w *namespaceWatch) list(ctx context.Context) ([]string, string, error) {
	list, err := w.client.Resource(namespacesResource).List(ctx, metav1.ListOptions{LabelSelector: w.selector.String()})
	if err != nil {
		return nil, "", err
	}
	names := []string{}
	for _, item := range list.Items {
		names = append(names, item.Name)
	}
	slices.Sort(names)
	return names, list.ResourceVersion, nil
}

// Start watches until ctx ends (nil) or the selected namespaces change (ErrNamespacesChanged).
// A failed list or watch is retried: it must not stop the manager.
func (w *namespaceWatch) Start(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx).WithValues("selector", w.selector.String())
	for ctx.Err() == nil {
		now, rv, err := w.list(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Error(err, "Listing the namespaces --namespace-selector selects failed; retrying")
			}
			metawatch.Sleep(ctx, 5*time.Second)
			continue
		}
		if !slices.Equal(now, w.selected) {
			return w.changed(ctx, log, now)
		}
		watcher, err := w.client.Resource(namespacesResource).Watch(ctx, metav1.ListOptions{LabelSelector: w.selector.String(), ResourceVersion: rv})
		if err != nil {
			metawatch.Sleep(ctx, time.Second)
			continue
		}
		if changed := w.follow(ctx, watcher); changed {
			if now, _, err := w.list(ctx); err == nil && !slices.Equal(now, w.selected) {
				return w.changed(ctx, log, now)
			}
		}
	}
	return nil
}

// follow reads watcher's events until it ends and says whether one changed the selected set.
func (w *namespaceWatch) follow(ctx context.Context, watcher watch.Interface) bool {
	defer watcher.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return false
			}
			obj, isMeta := ev.Object.(*metav1.PartialObjectMetadata)
			if !isMeta {
				return false
			}
			selected := slices.Contains(w.selected, obj.Name)
			if ev.Type == watch.Added && !selected || ev.Type == watch.Deleted && selected {
				return true
			}
		}
	}
}

// changed waits until the selected set has stayed as it is for w.quiet, and returns
// ErrNamespacesChanged, saying which namespaces came and went.
func (w *namespaceWatch) changed(ctx context.Context, log logr.Logger, now []string) error {
	for {
		metawatch.Sleep(ctx, w.quiet)
		if ctx.Err() != nil {
			return nil
		}
		again, _, err := w.list(ctx)
		if err == nil && slices.Equal(again, now) {
			break
		}
		if err == nil {
			now = again
		}
	}
	var added, removed []string
	for _, ns := range now {
		if !slices.Contains(w.selected, ns) {
			added = append(added, ns)
		}
	}
	for _, ns := range w.selected {
		if !slices.Contains(now, ns) {
			removed = append(removed, ns)
		}
	}
	log.Info("Namespaces selected by --namespace-selector changed; stopping so that a restart watches them",
		"added", strings.Join(added, ","), "removed", strings.Join(removed, ","))
	return ErrNamespacesChanged
}
