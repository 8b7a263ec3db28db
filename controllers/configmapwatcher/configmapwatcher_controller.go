package configmapwatcher

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
)

// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Settings are the configmapwatcher's options, resolved for the running manager.
type Settings struct {
	// ReloaderAnnotations: honour Stakater Reloader's annotations as well as ours.
	ReloaderAnnotations bool
	// Debounce delays the reconcile a ConfigMap or Secret change brings until the workload's
	// sources have not changed for that long (see debouncer), so that changes made together (a
	// helm upgrade) roll a workload once. Events of the workloads themselves are not delayed.
	Debounce time.Duration
	// DigestKeySecret names the Secret of the digest key, in the manager's namespace.
	DigestKeySecret types.NamespacedName
}

// Reconciler rolls opted-in workloads of one kind when the data they use changes.
type Reconciler[T client.Object] struct {
	Kind Kind[T]
	// Client reads the workloads from the cache and applies to them.
	Client client.Client
	// APIReader reads ConfigMaps and Secrets from the API server: the cache holds none.
	APIReader client.Reader
	// Lister lists the names of a namespace's ConfigMaps or Secrets, for names that count
	// through a pattern.
	Lister   Lister
	Recorder events.EventRecorder
	// Keys holds the digest key, shared by the controllers of every kind.
	Keys *DigestKeys
	// ReloaderAnnotations: honour Reloader's annotations.
	ReloaderAnnotations bool

	// warned remembers the warnings said about each workload, so that a lasting problem is said
	// once, not again at every reconcile: a periodic resync, an event of the workload that
	// changes nothing of it, the replay of a new term.
	warned warnings
}

// Lister lists the names of the ConfigMaps or the Secrets of a namespace.
type Lister interface {
	Names(ctx context.Context, kind podrefs.SourceKind, namespace string) ([]string, error)
}

// Reconcile compares what an opted-in workload's record says with the data it uses now, and
// writes a baseline, rolls it, or does nothing.
func (r *Reconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.warned.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		r.warned.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	template := podrefs.PodTemplate(obj)
	selection, err := podrefs.Select(obj.GetAnnotations(), template.Annotations, r.ReloaderAnnotations)
	if err != nil {
		// User data: retrying cannot fix it, and the workload's next change brings it back.
		r.warnInvalid(ctx, obj, err)
		return ctrl.Result{}, nil
	}
	r.warned.resolved(req.NamespacedName, v1alpha1.ReasonInvalidReloadAnnotation)
	if !selection.OptedIn() {
		return ctrl.Result{}, nil
	}
	key, err := r.Keys.get(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	observed, missing, err := r.observe(ctx, obj.GetNamespace(), selection, podrefs.References(&template.Spec), key)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Not an error: retrying cannot help. The source's creation brings the workload back.
	r.warnMissing(ctx, obj, missing)
	recorded := parseState(obj.GetAnnotations()[v1alpha1.ConfigStateAnnotation])
	legacy := noLegacyHash
	if recorded == nil && template.Annotations[v1alpha1.ConfigHashAnnotation] != "" {
		if legacy, err = r.checkLegacyHash(ctx, obj, template); err != nil {
			return ctrl.Result{}, err
		}
	}
	d := decide(recorded, observed, legacy)
	if !d.write {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.write(ctx, obj, template, d, observed, key)
}

// observe reads the sources the workload may roll on and returns the record of those it rolls
// on, and which of them are missing. Secret data stays in this call.
func (r *Reconciler[T]) observe(ctx context.Context, namespace string, selection podrefs.Selection, refs map[podrefs.Source]podrefs.Use, key *digestKey) (*state, []podrefs.Source, error) {
	candidates := selection.Candidates(refs)
	for _, kind := range podrefs.SourceKinds {
		if !selection.ListsKind(kind) {
			continue
		}
		names, err := r.Lister.Names(ctx, kind, namespace)
		if err != nil {
			return nil, nil, fmt.Errorf("listing %ss: %w", kind, err)
		}
		for _, name := range names {
			if src := (podrefs.Source{Kind: kind, Name: name}); selection.Matches(src) && !slices.Contains(candidates, src) {
				candidates = append(candidates, src)
			}
		}
	}
	// Read in parallel: a workload's latency is one read's, not the sum of its sources'.
	results := make([]readResult, len(candidates))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxParallelReads)
	for i, src := range candidates {
		g.Go(func() error {
			use, referenced := refs[src]
			if !referenced {
				use = podrefs.Use{AllKeys: true} // named without being referenced: every key
			}
			data, annotations, exists, err := r.read(gctx, namespace, src)
			if err != nil {
				return err
			}
			results[i] = readResult{tracked: selection.Tracks(src, referenced, annotations, exists), exists: exists}
			if results[i].tracked && exists {
				results[i].digests = key.digests(src, data, use)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	observed := &state{Version: stateVersion, KeyID: key.id, Sources: map[string]map[string]string{}}
	var missing []podrefs.Source
	for i, src := range candidates {
		switch res := results[i]; {
		case !res.tracked:
		case !res.exists:
			observed.Sources[src.Key()] = nil
			missing = append(missing, src)
		default:
			observed.Sources[src.Key()] = res.digests
		}
	}
	return observed, missing, nil
}

// maxParallelReads bounds the reads of one reconcile in flight at once.
const maxParallelReads = 8

// readResult is what observe keeps of one source it read: no data, only digests.
type readResult struct {
	tracked, exists bool
	digests         map[string]string
}

// read reads a ConfigMap or Secret from the API server.
func (r *Reconciler[T]) read(ctx context.Context, namespace string, src podrefs.Source) (sourceData, map[string]string, bool, error) {
	key := client.ObjectKey{Namespace: namespace, Name: src.Name}
	var err error
	var data sourceData
	var obj client.Object
	switch src.Kind {
	case podrefs.Secret:
		secret := &corev1.Secret{}
		err = r.APIReader.Get(ctx, key, secret)
		obj, data = secret, sourceData{bytes: secret.Data, bytesField: "data"}
	default:
		cm := &corev1.ConfigMap{}
		err = r.APIReader.Get(ctx, key, cm)
		obj, data = cm, sourceData{strings: cm.Data, bytes: cm.BinaryData, bytesField: "binaryData"}
	}
	switch {
	case apierrors.IsNotFound(err):
		return sourceData{}, nil, false, nil
	case err != nil:
		return sourceData{}, nil, false, fmt.Errorf("reading %s: %w", src, err)
	}
	return data, obj.GetAnnotations(), true, nil
}

// checkLegacyHash says whether the config hash a release before records wrote still matches
// the data of the ConfigMaps it covered. A missing ConfigMap leaves it unknown: no roll.
func (r *Reconciler[T]) checkLegacyHash(ctx context.Context, obj client.Object, template *corev1.PodTemplateSpec) (legacyHash, error) {
	var configMaps []corev1.ConfigMap
	for _, name := range podrefs.LegacyReloadConfigMaps(obj.GetAnnotations(), &template.Spec) {
		var cm corev1.ConfigMap
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, &cm)
		switch {
		case apierrors.IsNotFound(err):
			return legacyHashCurrent, nil
		case err != nil:
			return noLegacyHash, fmt.Errorf("reading ConfigMap %s: %w", name, err)
		}
		configMaps = append(configMaps, cm)
	}
	if legacyConfigHash(configMaps) == template.Annotations[v1alpha1.ConfigHashAnnotation] {
		return legacyHashCurrent, nil
	}
	return legacyHashStale, nil
}

// write applies the new record and, when rolling, a new config hash. Without a roll the Pod
// template's current config hash, if any, is sent as it is: server-side apply removes a field
// the manager owned and no longer sends, and removing the hash would roll the Pods.
func (r *Reconciler[T]) write(ctx context.Context, obj T, template *corev1.PodTemplateSpec, d decision, observed *state, key *digestKey) error {
	previous := template.Annotations[v1alpha1.ConfigHashAnnotation]
	var templateAnnotations map[string]string
	hash := previous
	if d.roll {
		hash = key.configHash(observed)
	}
	if hash != "" {
		templateAnnotations = map[string]string{v1alpha1.ConfigHashAnnotation: hash}
	}
	record := observed.String()
	desired := r.Kind.apply(obj, map[string]string{v1alpha1.ConfigStateAnnotation: record}, templateAnnotations)
	if err := r.Client.Apply(ctx, desired, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying the config record to %s as %s: %w", r.Kind.Name, FieldManager, err)
	}
	log := ctrl.LoggerFrom(ctx)
	switch {
	case d.roll && d.upgrade:
		note := "the data of its ConfigMaps differs from the config hash the previous release wrote"
		log.Info("Rolled "+r.Kind.Name, "changes", []string{note}, "configHash", hash, "previousConfigHash", previous, "fieldManager", FieldManager)
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, v1alpha1.ReasonConfigChanged, "Roll", "Rolled %s %s: %s", r.Kind.Name, obj.GetName(), note)
	case d.roll:
		log.Info("Rolled "+r.Kind.Name, "changes", d.changes, "configHash", hash, "previousConfigHash", previous, "fieldManager", FieldManager)
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, v1alpha1.ReasonConfigChanged, "Roll", "Rolled %s %s: %s",
			r.Kind.Name, obj.GetName(), noteOf(d.changes))
	case d.keyChanged:
		log.Info("Recorded config baseline of "+r.Kind.Name+": the digest key changed", "sources", len(observed.Sources), "keyID", key.id, "fieldManager", FieldManager)
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, v1alpha1.ReasonDigestKeyChanged, "Record",
			"Recorded a new baseline of %s %s without rolling: the config digest key changed (now %s); a change of data made meanwhile is not noticed", r.Kind.Name, obj.GetName(), key.id)
	default:
		log.Info("Recorded config baseline of "+r.Kind.Name, "sources", len(observed.Sources), "fieldManager", FieldManager)
	}
	return nil
}

// maxNote keeps an Event's note under the API server's limit of 1 kB.
const maxNote = 900

// noteOf joins changes into an Event's note, cut short with how many more when too long.
func noteOf(changes []string) string {
	note := ""
	for i, change := range changes {
		next := note
		if i > 0 {
			next += "; "
		}
		next += change
		if len(next) > maxNote {
			return fmt.Sprintf("%s; and %d more", note, len(changes)-i)
		}
		note = next
	}
	return note
}

// warnMissing says which sources the workload uses are missing: one warning Event per kind,
// unless the last one said the same. A kind with none missing is resolved.
func (r *Reconciler[T]) warnMissing(ctx context.Context, obj T, missing []podrefs.Source) {
	names := map[podrefs.SourceKind][]string{}
	for _, src := range missing {
		names[src.Kind] = append(names[src.Kind], src.Name)
	}
	key := client.ObjectKeyFromObject(obj)
	logged := false
	for _, kind := range podrefs.SourceKinds {
		reason := v1alpha1.ReasonConfigMapMissing
		if kind == podrefs.Secret {
			reason = v1alpha1.ReasonSecretMissing
		}
		if len(names[kind]) == 0 {
			r.warned.resolved(key, reason)
			continue
		}
		note := fmt.Sprintf("not rolled: %s %s not found", kind, strings.Join(names[kind], ", "))
		if !r.warned.news(key, reason, note) {
			continue
		}
		if !logged {
			ctrl.LoggerFrom(ctx).Info("Sources missing; "+r.Kind.Name+" not rolled", "configMaps", names[podrefs.ConfigMap], "secrets", names[podrefs.Secret])
			logged = true
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Roll", "%s", note)
	}
}

// warnInvalid says which annotation cannot be read, unless the last warning said the same.
func (r *Reconciler[T]) warnInvalid(ctx context.Context, obj T, err error) {
	note := "not rolled: " + cut(err.Error())
	if !r.warned.news(client.ObjectKeyFromObject(obj), v1alpha1.ReasonInvalidReloadAnnotation, note) {
		return
	}
	ctrl.LoggerFrom(ctx).Info("Reload annotation invalid; "+r.Kind.Name+" not rolled", "reason", err.Error())
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, v1alpha1.ReasonInvalidReloadAnnotation, "Roll", "%s", note)
}

// warnings are the warnings last said about each workload, by reason. The controller keeps
// nothing else of a workload in memory; a deleted workload's are forgotten.
type warnings struct {
	mu   sync.Mutex
	said map[types.NamespacedName]map[string]string
}

// news reports whether note is news for the workload key under reason, and remembers it.
func (w *warnings) news(key types.NamespacedName, reason, note string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.said[key][reason] == note {
		return false
	}
	if w.said == nil {
		w.said = map[types.NamespacedName]map[string]string{}
	}
	if w.said[key] == nil {
		w.said[key] = map[string]string{}
	}
	w.said[key][reason] = note
	return true
}

// resolved forgets the workload's warning of reason: the problem went away, and saying it
// again when it comes back is news.
func (w *warnings) resolved(key types.NamespacedName, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.said[key], reason)
	if len(w.said[key]) == 0 {
		delete(w.said, key)
	}
}

// forget forgets every warning of a workload that is gone.
func (w *warnings) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.said, key)
}

// cut keeps a note under maxNote.
func cut(s string) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	if len(s) > maxNote {
		return s[:maxNote] + "..."
	}
	return s
}
