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
	"github.com/example/switchboard/controllers/internal/transient"
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
	// namespaces are those --namespace-selector selected at start (Options.Prepare), and
	// unselected the others that existed then; selectsByLabels says whether it is set. Or they
	// are those Reloader's --namespaces (or KUBERNETES_NAMESPACE) lists, and listed says so.
	namespaces, unselected []string
	selectsByLabels        bool
	listed                 bool
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
	return !s.selects() || slices.Contains(s.namespaces, namespace)
}

// selects says whether the configmapwatcher looks at some namespaces only: those a selector
// selects, or those listed.
func (s Scope) selects() bool { return s.selectsByLabels || s.listed }

// SourceKind says whether sources of kind count at all.
func (s Scope) SourceKind(kind podrefs.SourceKind) bool { return !s.ignoredSources[kind] }

// Source says whether a source of kind with these labels counts.
func (s Scope) Source(kind podrefs.SourceKind, sourceLabels map[string]string) bool {
	return s.SourceKind(kind) && (s.resourceSelector == nil || s.resourceSelector.Matches(labels.Set(sourceLabels)))
}

// maxExcludedNamespaces bounds the namespaces a field selector leaves out of a watch of every
// namespace (ExcludesUnselected): each is a term of the selector in every list and watch URL.
const maxExcludedNamespaces = 100

// ExcludesUnselected says whether, given the manager's namespaces (none for all), the
// --namespace-selector is served by watches of every namespace that leave out the unselected
// ones by a field selector, rather than by one watch per selected namespace and kind: when the
// manager watches every namespace and the selector leaves out fewer namespaces than it selects
// (and at most maxExcludedNamespaces). Selecting most namespaces then costs what the default
// flags cost; an informer per namespace and kind cost 3.4 MiB more at 10,000 ConfigMaps and
// Secrets (docs/performance.md). A namespace created later that the selector does not select
// is not left out: the namespace watch restarts the manager for it (namespaceWatch).
func (s Scope) ExcludesUnselected(manager []string) bool {
	return s.selectsByLabels && len(manager) == 0 && len(s.namespaces) > 0 &&
		len(s.unselected) < len(s.namespaces) && len(s.unselected) <= maxExcludedNamespaces
}

// Namespaces returns the namespaces to watch, given the manager's (none for all): nil for all
// (then NamespaceFieldSelector leaves out the ignored and the unselected ones), else a sorted
// list, which is empty when nothing is selected.
func (s Scope) Namespaces(manager []string) []string {
	var candidates []string
	switch {
	case s.ExcludesUnselected(manager):
		return nil
	case s.selects() && len(manager) > 0:
		for _, ns := range s.namespaces {
			if slices.Contains(manager, ns) {
				candidates = append(candidates, ns)
			}
		}
	case s.selects():
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

// NamespaceFieldSelector leaves out the ignored namespaces, and those --namespace-selector does
// not select, from a watch of every namespace (when Namespaces is nil); nil when none is left out.
func (s Scope) NamespaceFieldSelector() fields.Selector {
	excluded := slices.Concat(slices.Collect(maps.Keys(s.ignored)), s.unselected)
	if len(excluded) == 0 {
		return nil
	}
	slices.Sort(excluded)
	var terms []fields.Selector
	for _, ns := range slices.Compact(excluded) {
		terms = append(terms, fields.OneTermNotEqualSelector("metadata.namespace", ns))
	}
	return fields.AndSelectors(terms...)
}

// Idle says why the configmapwatcher has nothing to look at, "" when it has something:
// --namespace-selector selects no namespace.
func (s Scope) Idle(manager []string) string {
	// Namespaces is nil for every namespace, and empty, not nil, when none is selected.
	if namespaces := s.Namespaces(manager); s.selectsByLabels && namespaces != nil && len(namespaces) == 0 {
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

// Prepare runs before the manager is made, given the manager's namespaces (none for all). It
// logs Reloader's flags and environment variables that the configmapwatcher was given but does
// not support (ReloaderFlags), and reads which namespaces --namespace-selector selects and which
// it does not (the cache's namespaces are fixed once the manager is made); it returns what
// watches them afterwards: a runnable that stops the manager with ErrNamespacesChanged once the
// selected set changes, or a namespace appears that a watch of every namespace would not leave
// out (Scope.ExcludesUnselected), so that its replacement watches the new set (nil without
// --namespace-selector).
func (o *Options) Prepare(ctx context.Context, cfg *rest.Config, namespaces []string) (manager.Runnable, error) {
	log := logr.FromContextOrDiscard(ctx).WithValues("group", Group)
	o.reportReloaderFlags(log, os.LookupEnv)
	if o.listedNamespaces != nil {
		return nil, o.checkListedNamespaces(log, namespaces)
	}
	if o.namespaceSelector == nil {
		return nil, nil
	}
	c, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a metadata client: %w", err)
	}
	w := &namespaceWatch{client: c, selector: o.namespaceSelector, quiet: namespaceQuiet}
	what := "listing the namespaces --namespace-selector=" + o.NamespaceSelector + " selects"
	if err := transient.Retry(ctx, transient.StartBackoff, logr.FromContextOrDiscard(ctx), what, func(ctx context.Context) (err error) {
		w.start, _, err = w.list(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	o.selectedNamespaces, o.unselectedNamespaces = w.start.selected, w.start.unselected
	w.excludesUnselected = o.Scope().ExcludesUnselected(namespaces)
	return w, nil
}

// checkListedNamespaces says which namespaces --namespaces or KUBERNETES_NAMESPACE list, and
// refuses those the manager does not watch (its --watch-namespaces; none for all): the
// configmapwatcher could not see them.
func (o *Options) checkListedNamespaces(log logr.Logger, manager []string) error {
	if len(manager) > 0 {
		for _, ns := range o.listedNamespaces {
			if !slices.Contains(manager, ns) {
				return fmt.Errorf("%s lists namespace %s, which the manager does not watch (--watch-namespaces=%s)",
					o.namespacesFrom, ns, strings.Join(manager, ","))
			}
		}
	}
	log.Info("Watching the namespaces listed", "namespaces", o.listedNamespaces, "from", o.namespacesFrom)
	return nil
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

// namespaceSets are the names of the namespaces a selector selects and of the others, sorted.
type namespaceSets struct{ selected, unselected []string }

// namespaceWatch watches every namespace, metadata only, and returns ErrNamespacesChanged once
// the namespaces the selector selects differ from those at start, or, when the watches of
// every namespace leave out the unselected ones (excludesUnselected), once a namespace appears
// that the selector does not select: those watches would not leave it out.
type namespaceWatch struct {
	client             metadata.Interface
	selector           labels.Selector
	start              namespaceSets
	excludesUnselected bool
	quiet              time.Duration
}

// NeedLeaderElection is false: every replica's cache must list the selected namespaces, so
// that a standby that takes over has the right ones.
func (w *namespaceWatch) NeedLeaderElection() bool { return false }

// list returns the namespaces as the selector splits them, and the list's resourceVersion.
func (w *namespaceWatch) list(ctx context.Context) (namespaceSets, string, error) {
	list, err := w.client.Resource(namespacesResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return namespaceSets{}, "", err
	}
	sets := namespaceSets{selected: []string{}, unselected: []string{}}
	for _, item := range list.Items {
		if w.selector.Matches(labels.Set(item.Labels)) {
			sets.selected = append(sets.selected, item.Name)
		} else {
			sets.unselected = append(sets.unselected, item.Name)
		}
	}
	slices.Sort(sets.selected)
	slices.Sort(sets.unselected)
	return sets, list.ResourceVersion, nil
}

// differs says whether the manager must restart for the namespaces now: the selected ones
// changed, or one appeared that the watches of every namespace do not leave out.
func (w *namespaceWatch) differs(now namespaceSets) bool {
	if !slices.Equal(now.selected, w.start.selected) {
		return true
	}
	return w.excludesUnselected && slices.ContainsFunc(now.unselected, func(ns string) bool {
		return !slices.Contains(w.start.unselected, ns)
	})
}

// Start watches until ctx ends (nil) or the namespaces change as differs says
// (ErrNamespacesChanged). A failed list or watch is retried: it must not stop the manager.
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
		if w.differs(now) {
			return w.changed(ctx, log, now)
		}
		watcher, err := w.client.Resource(namespacesResource).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			metawatch.Sleep(ctx, time.Second)
			continue
		}
		if changed := w.follow(ctx, watcher); changed {
			if now, _, err := w.list(ctx); err == nil && w.differs(now) {
				return w.changed(ctx, log, now)
			}
		}
	}
	return nil
}

// follow reads watcher's events until it ends and says whether one may have changed the
// namespaces as differs sees them.
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
			wasSelected := slices.Contains(w.start.selected, obj.Name)
			switch ev.Type {
			case watch.Deleted:
				if wasSelected {
					return true
				}
			case watch.Added, watch.Modified:
				selected := w.selector.Matches(labels.Set(obj.Labels))
				if selected != wasSelected || !selected && w.excludesUnselected && !slices.Contains(w.start.unselected, obj.Name) {
					return true
				}
			}
		}
	}
}

// changed waits until the namespaces have stayed as they are for w.quiet, and returns
// ErrNamespacesChanged, saying which namespaces came and went.
func (w *namespaceWatch) changed(ctx context.Context, log logr.Logger, now namespaceSets) error {
	for {
		metawatch.Sleep(ctx, w.quiet)
		if ctx.Err() != nil {
			return nil
		}
		again, _, err := w.list(ctx)
		if err == nil && slices.Equal(again.selected, now.selected) && slices.Equal(again.unselected, now.unselected) {
			break
		}
		if err == nil {
			now = again
		}
	}
	log.Info("Namespaces selected by --namespace-selector changed; stopping so that a restart watches them",
		"added", strings.Join(missingFrom(w.start.selected, now.selected), ","),
		"removed", strings.Join(missingFrom(now.selected, w.start.selected), ","),
		"unselectedAdded", strings.Join(missingFrom(w.start.unselected, now.unselected), ","))
	return ErrNamespacesChanged
}

// missingFrom returns the names of names that are not in set.
func missingFrom(set, names []string) []string {
	var out []string
	for _, name := range names {
		if !slices.Contains(set, name) {
			out = append(out, name)
		}
	}
	return out
}
