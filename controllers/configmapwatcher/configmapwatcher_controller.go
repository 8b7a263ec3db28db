package configmapwatcher

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
)

// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=argoproj.io,resources=rollouts,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Settings are the configmapwatcher's options, resolved for the running manager.
type Settings struct {
	// Reading says how workloads' annotations are read: Reloader's too, under which names,
	// --auto-reload-all.
	Reading podrefs.Reading
	// Pause names Reloader's pause annotations.
	Pause pauseAnnotations
	// Debounce delays the reconcile a ConfigMap or Secret change brings until the workload's
	// sources have not changed for that long (see debouncer), so that changes made together (a
	// helm upgrade) roll a workload once. Events of the workloads themselves are not delayed.
	Debounce time.Duration
	// DigestKeySecret names the Secret of the digest key, in the manager's namespace.
	DigestKeySecret types.NamespacedName
	// Scope is what the controllers look at.
	Scope Scope
	// ReloadOnDelete: the deletion of a source rolls the workloads that use it.
	ReloadOnDelete bool
	// ReloadOnCreate: the creation of a source a workload rolls on rolls it.
	ReloadOnCreate bool
	// MaxRolloutsPerMinute bounds the rolls started in any minute; 0 for no bound.
	MaxRolloutsPerMinute int
	// Webhook is where rolls are posted.
	Webhook WebhookSettings
	// Alerts are Reloader's chat alerts of rolls (ALERT_*).
	Alerts AlertSettings
	// Strategy is how a roll reaches a Pod template, and LastReloadedFrom when a roll also
	// writes Reloader's annotation.
	Strategy         Strategy
	LastReloadedFrom LastReloadedFrom
	// Metadata is the client of the uncached, metadata-only watches of ConfigMaps and Secrets
	// and of the lists of their names: under dynamic shards, one narrowed to the replica's
	// namespaces.
	Metadata metadata.Interface
}

// Reconciler rolls opted-in workloads of one kind when the data they use changes.
type Reconciler[T client.Object] struct {
	Kind Kind[T]
	// Client reads the workloads from the cache and writes them.
	Client client.Client
	// APIReader reads ConfigMaps and Secrets from the API server: the cache holds none.
	APIReader client.Reader
	// ProviderStatuses reads the Secrets Store CSI driver's SecretProviderClassPodStatus
	// objects (the manager's cache) with --enable-csi-integration; nil when SecretProviderClasses
	// count for nothing (the flag is off, or the driver's CRD is not installed).
	ProviderStatuses client.Reader
	// Lister lists the names of a namespace's ConfigMaps or Secrets, for names that count
	// through a pattern.
	Lister   Lister
	Recorder events.EventRecorder
	// Keys holds the digest key, shared by the controllers of every kind.
	Keys     *DigestKeys
	Settings Settings
	// limiter bounds the rolls per minute, over the group's controllers; nil for no bound.
	limiter *rolloutLimiter
	// notifier posts rolls to the webhook; nil for none.
	notifier *notifier
	// alerter posts Reloader's alerts of rolls; nil for none.
	alerter *notifier
	// jobs holds the Jobs between their deletion and their creation.
	jobs *jobRecreator
	// now is the clock.
	now func() time.Time
	// started is when the watches of sources started: a source created since was created while
	// the manager watched (--reload-on-create).
	started time.Time
	// debounced says whether a request waits out the quiet period of a source's change; nil for
	// no debounce.
	debounced func(reconcile.Request) bool
	// unrecorded holds the events of workloads' sources while they had no record (see
	// unrecordedChanges); nil for none.
	unrecorded *unrecordedChanges

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
// writes a baseline, rolls it, or does nothing. A Deployment paused for its pause period is
// resumed when the period is over.
func (r *Reconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.Kind.recreates && r.jobs.has(req.NamespacedName) {
		if result, pending, err := r.finishRecreate(ctx, req); pending || err != nil {
			return result, err
		}
	}
	if r.debounced != nil && r.debounced(req) {
		// A source changed moments ago, and maybe more change with it (a helm upgrade): the
		// debouncer queues the workload once they are quiet, so that the burst rolls it once,
		// whatever else (its own status, a resync) brought it here meanwhile.
		return ctrl.Result{}, nil
	}
	// Taken before the sources are read, and given back unless the reconcile acted on them.
	unrecorded := r.unrecorded.take(r.Kind.ControllerName, req)
	result, err := r.reconcile(ctx, req, unrecorded)
	if err != nil {
		r.unrecorded.restore(r.Kind.ControllerName, req, unrecorded)
	}
	if apierrors.IsConflict(err) {
		// The write carried the resourceVersion the cache read: the workload changed since
		// (often by this controller's own write, not cached yet). Deciding again from a stale
		// record would roll twice, or take changed data for a baseline.
		ctrl.LoggerFrom(ctx).V(1).Info("Workload changed since the cache read it; reconciling it again", "reason", err.Error())
		return ctrl.Result{RequeueAfter: staleCacheRetry}, nil
	}
	return result, err
}

// staleCacheRetry is how soon a workload whose write met a newer version is reconciled again, if
// the newer version's own event has not brought it back before.
const staleCacheRetry = 100 * time.Millisecond

// reconcile is Reconcile's work on a workload, given the events its sources had while it had no
// record.
func (r *Reconciler[T]) reconcile(ctx context.Context, req ctrl.Request, unrecorded map[string]sourceEvents) (ctrl.Result, error) {
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.warned.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() || !r.Settings.Scope.Namespace(obj.GetNamespace()) || r.Kind.left(obj) {
		r.warned.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	resumeIn, err := r.resumeIfDue(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	result := ctrl.Result{RequeueAfter: resumeIn}
	template := podrefs.PodTemplate(obj)
	selection, err := podrefs.Select(obj.GetAnnotations(), template.Annotations, r.Settings.Reading)
	if err != nil {
		// User data: retrying cannot fix it, and the workload's next change brings it back.
		// What could be read still counts.
		r.warnInvalid(ctx, obj, err, reloadAnnotations)
	} else {
		r.warned.resolved(req.NamespacedName, reloadAnnotations)
	}
	if !selection.OptedIn() {
		return result, nil
	}
	key, err := r.Keys.get(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	refs := podrefs.References(&template.Spec)
	recorded := parseState(obj.GetAnnotations()[v1alpha1.ConfigStateAnnotation])
	seen, err := r.observe(ctx, obj.GetNamespace(), selection, refs, key, recorded)
	if err != nil {
		return ctrl.Result{}, err
	}
	observed := seen.record
	if recorded == nil && len(observed.Sources) == 0 {
		// Nothing to record: a workload without sources under --auto-reload-all, or whose
		// annotation names none that counts.
		return result, nil
	}
	legacy := noLegacyHash
	if recorded == nil && template.Annotations[v1alpha1.ConfigHashAnnotation] != "" {
		if legacy, err = r.checkLegacyHash(ctx, obj, template); err != nil {
			return ctrl.Result{}, err
		}
	}
	d := decide(recorded, observed, legacy, policy{reloadOnDelete: r.Settings.ReloadOnDelete, reloadOnCreate: r.Settings.ReloadOnCreate,
		createdWhileWatching: func(key string) bool { return seen.created[key].After(r.started) }, unrecorded: unrecorded})
	// Not an error: retrying cannot help. The source's creation brings the workload back.
	r.warnMissing(ctx, obj, seen.missing, d)
	if !d.write {
		return result, nil
	}
	if d.roll && !r.Settings.Webhook.Only {
		if wait := r.limiter.take(); wait > 0 {
			skippedRolls.WithLabelValues(r.Kind.Name, skippedRateLimited).Inc()
			ctrl.LoggerFrom(ctx).V(1).Info("Roll put off by --max-rollouts-per-minute", "wait", wait.String())
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	again, err := r.write(ctx, obj, template, rollContext{selection: selection, refs: refs, d: d, key: key})
	if err != nil {
		return ctrl.Result{}, err
	}
	if recorded == nil {
		// Events noted while this reconcile read the sources may be in the record already, the
		// workload's Pods still on the data before: the next reconcile rolls on them even if the
		// data equals the record.
		r.unrecorded.carry(r.Kind.ControllerName, req)
	}
	if again > 0 {
		result.RequeueAfter = again
	}
	return result, nil
}

// observation is what a reconcile observed of a workload's sources: the record of those it
// rolls on, which of them are missing, and when each that exists was created (by the record's
// key).
type observation struct {
	record  *state
	missing []podrefs.Source
	created map[string]time.Time
}

// observe reads the sources the workload may roll on; recorded (nil for none) is the
// workload's record, whose versions of a SecretProviderClass count while a Pod still reports
// them (versionDigests). Secret data stays in this call.
func (r *Reconciler[T]) observe(ctx context.Context, namespace string, selection podrefs.Selection, refs map[podrefs.Source]podrefs.Use, key *digestKey, recorded *state) (observation, error) {
	var candidates []podrefs.Source
	for _, src := range selection.Candidates(refs) {
		// Without the driver's CRD (ProviderStatuses nil), SecretProviderClasses count for
		// nothing: the manager said so at start.
		if r.Settings.Scope.SourceKind(src.Kind) && (src.Kind != podrefs.SecretProviderClass || r.ProviderStatuses != nil) {
			candidates = append(candidates, src)
		}
	}
	var classes map[string]providerObjects
	if r.ProviderStatuses != nil && (selection.ListsKind(podrefs.SecretProviderClass) ||
		slices.ContainsFunc(candidates, func(src podrefs.Source) bool { return src.Kind == podrefs.SecretProviderClass })) {
		var err error
		if classes, err = readProviderStatuses(ctx, r.ProviderStatuses, namespace); err != nil {
			return observation{}, err
		}
		for _, name := range slices.Sorted(maps.Keys(classes)) {
			if src := (podrefs.Source{Kind: podrefs.SecretProviderClass, Name: name}); selection.Matches(src) && !slices.Contains(candidates, src) {
				candidates = append(candidates, src)
			}
		}
	}
	var before map[string]map[string]string
	if recorded != nil {
		before = recorded.Sources
	}
	for _, kind := range podrefs.SourceKinds {
		if !selection.ListsKind(kind) || !r.Settings.Scope.SourceKind(kind) {
			continue
		}
		names, err := r.Lister.Names(ctx, kind, namespace)
		if err != nil {
			return observation{}, fmt.Errorf("listing %ss: %w", kind, err)
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
			if src.Kind == podrefs.SecretProviderClass {
				annotations, err := readProviderClassAnnotations(gctx, r.APIReader, namespace, src.Name)
				if err != nil {
					return err
				}
				// Counted while some Pod mounts it (see providerclass.go).
				objects, mounted := classes[src.Name]
				if mounted && selection.Tracks(src, referenced, annotations, true) {
					results[i] = readResult{tracked: true, exists: true, digests: key.versionDigests(src, objects, before[src.Key()])}
				}
				return nil
			}
			if !referenced {
				use = podrefs.Use{AllKeys: true} // named without being referenced: every key
			}
			data, meta, exists, err := r.read(gctx, namespace, src)
			if err != nil {
				return err
			}
			results[i] = readResult{exists: exists, created: meta.created,
				tracked: selection.Tracks(src, referenced, meta.annotations, exists) && (!exists || r.Settings.Scope.Source(src.Kind, meta.labels))}
			if results[i].tracked && exists {
				results[i].digests = key.digests(src, data, use)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return observation{}, err
	}
	seen := observation{record: &state{Version: stateVersion, KeyID: key.id, Sources: map[string]map[string]string{}}, created: map[string]time.Time{}}
	for i, src := range candidates {
		switch res := results[i]; {
		case !res.tracked:
		case !res.exists:
			seen.record.Sources[src.Key()] = nil
			seen.missing = append(seen.missing, src)
		default:
			seen.record.Sources[src.Key()] = res.digests
			seen.created[src.Key()] = res.created
		}
	}
	return seen, nil
}

// maxParallelReads bounds the reads of one reconcile in flight at once.
const maxParallelReads = 8

// readResult is what observe keeps of one source it read: no data, only digests.
type readResult struct {
	tracked, exists bool
	created         time.Time
	digests         map[string]string
}

// sourceMeta is what a reconcile reads of a source's metadata.
type sourceMeta struct {
	annotations, labels map[string]string
	created             time.Time
}

// read reads a ConfigMap or Secret from the API server.
func (r *Reconciler[T]) read(ctx context.Context, namespace string, src podrefs.Source) (sourceData, sourceMeta, bool, error) {
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
		return sourceData{}, sourceMeta{}, false, nil
	case err != nil:
		return sourceData{}, sourceMeta{}, false, fmt.Errorf("reading %s: %w", src, err)
	}
	return data, sourceMeta{annotations: obj.GetAnnotations(), labels: obj.GetLabels(), created: obj.GetCreationTimestamp().Time}, true, nil
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

// rollWay is how a roll reaches a workload.
type rollWay string

// The ways of rolling.
const (
	// rollTemplate: a new config hash on the Pod template.
	rollTemplate rollWay = "rolled"
	// rollRestart: a Rollout's spec.restartAt, with Reloader's restart strategy.
	rollRestart rollWay = "restarted"
	// rollRecreate: a Job deleted and created again.
	rollRecreate rollWay = "recreated"
	// rollNone: --webhook-url, which posts instead of rolling.
	rollNone rollWay = "none"
)

// wayOf says how a roll of obj goes.
func (r *Reconciler[T]) wayOf(obj T) rollWay {
	switch {
	case r.Settings.Webhook.Only:
		return rollNone
	case r.Kind.recreates:
		return rollRecreate
	case r.Settings.Reading.Reloader && r.Kind.Name == Rollouts.Name && obj.GetAnnotations()[v1alpha1.ReloaderRolloutStrategyAnnotation] == "restart":
		return rollRestart
	}
	return rollTemplate
}

// rollContext is what a write is decided from: what the workload asked for, what its Pod
// template references, the decision, and the digest key.
type rollContext struct {
	selection podrefs.Selection
	refs      map[podrefs.Source]podrefs.Use
	d         decision
	key       *digestKey
}

// write applies the new record and, when rolling, rolls the workload as wayOf says: with new
// marks on its Pod template (marks.rolled, as the strategy says), through a Rollout's
// restartAt, or by re-creating a Job with them. The marks the controller owns and does not
// change are sent as they are: server-side apply removes a field the manager owned and no
// longer sends, and removing a mark (or a Rollout's restartAt) would roll the Pods. It returns
// when to reconcile again: when a Deployment paused for its pause period resumes, or when a
// re-created Job's creation is due again; 0 for neither.
func (r *Reconciler[T]) write(ctx context.Context, obj T, template *corev1.PodTemplateSpec, rc rollContext) (time.Duration, error) {
	d := rc.d
	way := rollTemplate
	if d.roll {
		way = r.wayOf(obj)
	}
	current := marksOf(template)
	next := current
	w := owned{annotations: map[string]string{v1alpha1.ConfigStateAnnotation: d.record.String()}, restartAt: restartAtOf(obj)}
	switch {
	case !d.roll, way == rollNone:
	case way == rollRestart:
		w.restartAt = r.now().UTC().Format(time.RFC3339)
	default:
		next = current.rolled(rollInput{strategy: r.Settings.Strategy, lastReloadedFrom: r.Settings.LastReloadedFrom,
			viaReloader: rc.selection.ViaReloader(), namespace: obj.GetNamespace(), spec: &template.Spec,
			refs: rc.refs, d: d, key: rc.key, now: r.now()})
	}
	w.template, w.env = next.annotations(), next.env
	var again time.Duration
	var ranJob string
	if d.roll && way != rollNone {
		var err error
		if again, err = r.pauseForRoll(ctx, obj); err != nil {
			return 0, err
		}
		// The Job's name ends with the record's digest, whatever the strategy, so that a
		// reconcile repeated after a failed write runs no second Job for one change.
		if ranJob, err = r.runCronJob(ctx, obj, rc.selection, next, rc.key.configHash(d.record)); err != nil {
			countRoll(r.Kind.Name, obj.GetNamespace(), err)
			return 0, err
		}
	}
	var err error
	if way == rollRecreate {
		var pending bool
		if pending, err = r.recreateJob(ctx, any(obj).(*batchv1.Job), d.record.String(), next); pending {
			// finishRecreate creates it once the old one is gone.
			again = recreatePoll
		}
	} else {
		err = r.Client.Apply(ctx, r.Kind.apply(obj, w), client.FieldOwner(FieldManager), client.ForceOwnership)
		if err != nil {
			err = fmt.Errorf("applying the config record to %s as %s: %w", r.Kind.Name, FieldManager, err)
		}
	}
	if d.roll && way != rollNone {
		countRoll(r.Kind.Name, obj.GetNamespace(), err)
	}
	if err != nil {
		return 0, err
	}
	r.report(ctx, obj, d, way, next, current, ranJob, rc.key)
	return again, nil
}

// recreatePoll is how often a Job deleted to be re-created is looked at until it is gone (its
// finalizers done).
const recreatePoll = 2 * time.Second

// finishRecreate creates the Job pending under req once the one it replaces is gone, and says
// whether the reconcile is over. The deleted Job's own events do not reconcile it (the
// predicates drop deletions), so while it is still there (finalizers) the reconcile comes back
// by itself. When someone created a Job of that name meanwhile, it wins: the pending one is
// dropped, and the reconcile goes on with the new Job.
func (r *Reconciler[T]) finishRecreate(ctx context.Context, req ctrl.Request) (ctrl.Result, bool, error) {
	live := &batchv1.Job{}
	err := r.APIReader.Get(ctx, req.NamespacedName, live)
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, true, r.jobs.createPending(ctx, r.Client, req.NamespacedName)
	case err != nil:
		return ctrl.Result{}, true, fmt.Errorf("reading Job %s: %w", req.Name, err)
	case !live.DeletionTimestamp.IsZero():
		return ctrl.Result{RequeueAfter: recreatePoll}, true, nil
	}
	r.jobs.forget(req.NamespacedName)
	return ctrl.Result{}, false, nil
}

// recreateJob deletes the Job cached as cached and creates it again, from the whole Job as the
// API server has it (the cache keeps a trimmed one). It returns whether the creation is still
// pending: the old Job is not gone yet.
func (r *Reconciler[T]) recreateJob(ctx context.Context, cached *batchv1.Job, record string, m marks) (bool, error) {
	full := &batchv1.Job{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cached), full); err != nil {
		return false, fmt.Errorf("reading Job %s to re-create it: %w", cached.Name, err)
	}
	if full.UID != cached.UID {
		return false, fmt.Errorf("job %s was replaced while being reconciled; reconciling the new one", cached.Name)
	}
	creationErr, err := r.jobs.recreate(ctx, r.Client, full, recreatedJob(full, record, m))
	if creationErr != nil {
		ctrl.LoggerFrom(ctx).Info("Deleted Job to re-create it; its creation waits until the old one is gone", "reason", creationErr.Error())
	}
	return creationErr != nil, err
}

// runCronJob runs a Job of a CronJob at once when its roll asks for it
// (v1alpha1.RunJobOnChangeAnnotation), from the job template with the roll's marks, named
// after digest, and returns its name; "" when it runs none. An unreadable annotation is a
// Warning Event, and the default applies.
func (r *Reconciler[T]) runCronJob(ctx context.Context, obj T, selection podrefs.Selection, m marks, digest string) (string, error) {
	cj, ok := any(obj).(*batchv1.CronJob)
	if !ok {
		return "", nil
	}
	run, err := runsJobOnChange(cj, selection.ViaReloader())
	if err != nil {
		r.warnInvalid(ctx, obj, err, runOnChangeAnnotation)
	} else {
		r.warned.resolved(client.ObjectKeyFromObject(obj), runOnChangeAnnotation)
	}
	if !run {
		return "", nil
	}
	// The cache keeps a trimmed CronJob; the Job is made from the whole job template.
	full := &batchv1.CronJob{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cj), full); err != nil {
		return "", fmt.Errorf("reading CronJob %s to run a Job of it: %w", cj.Name, err)
	}
	job := cronJobRun(full, m, digest)
	if err := r.Client.Create(ctx, job, client.FieldOwner(FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("running Job %s of CronJob %s: %w", job.Name, cj.Name, err)
	}
	return job.Name, nil
}

// report logs a write, makes its Event, and posts a roll to the webhook.
func (r *Reconciler[T]) report(ctx context.Context, obj T, d decision, way rollWay, next, previous marks, ranJob string, key *digestKey) {
	log := ctrl.LoggerFrom(ctx)
	changes := make([]string, 0, len(d.changes))
	for _, c := range d.changes {
		changes = append(changes, c.String())
	}
	switch {
	case d.roll && d.upgrade:
		note := "the data of its ConfigMaps differs from the config hash the previous release wrote"
		log.Info("Rolled "+r.Kind.Name, "changes", []string{note}, "configHash", next.configHash, "previousConfigHash", previous.configHash, "fieldManager", FieldManager)
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, v1alpha1.ReasonConfigChanged, "Roll", "Rolled %s %s: %s", r.Kind.Name, obj.GetName(), note)
	case d.roll && way == rollNone:
		skippedRolls.WithLabelValues(r.Kind.Name, skippedWebhookOnly).Inc()
		log.Info("Recorded config change of "+r.Kind.Name+" without rolling it (--webhook-url)", "changes", changes, "fieldManager", FieldManager)
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, v1alpha1.ReasonConfigChanged, "Notify", "Not rolled (--webhook-url), posted to the webhook: %s", noteOf(changes))
	case d.roll:
		verb := map[rollWay]string{rollTemplate: "Rolled ", rollRestart: "Restarted ", rollRecreate: "Recreated "}[way]
		keys := []any{"changes", changes, "strategy", string(r.Settings.Strategy), "configHash", next.configHash, "previousConfigHash", previous.configHash, "fieldManager", FieldManager}
		if ranJob != "" {
			keys = append(keys, "job", ranJob)
		}
		log.Info("Rolled "+r.Kind.Name, append(keys, "way", string(way))...)
		note := noteOf(changes)
		if ranJob != "" {
			note = "ran Job " + ranJob + " at once; " + note
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, v1alpha1.ReasonConfigChanged, "Roll", "%s%s %s: %s", verb, r.Kind.Name, obj.GetName(), note)
	case d.keyChanged:
		log.Info("Recorded config baseline of "+r.Kind.Name+": the digest key changed", "sources", len(d.record.Sources), "keyID", key.id, "fieldManager", FieldManager)
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, v1alpha1.ReasonDigestKeyChanged, "Record",
			"Recorded a new baseline of %s %s without rolling: the config digest key changed (now %s); a change of data made meanwhile is not noticed", r.Kind.Name, obj.GetName(), key.id)
	default:
		log.Info("Recorded config baseline of "+r.Kind.Name, "sources", len(d.record.Sources), "fieldManager", FieldManager)
	}
	if d.roll {
		action := string(way)
		if ranJob != "" {
			action = "job-created"
		}
		note := notificationOf(r.Kind.Name, obj.GetNamespace(), obj.GetName(), action, d.changes, r.now())
		r.notifier.notify(note)
		if way != rollNone {
			// As Reloader: an alert for what was rolled, none for a roll only posted.
			r.alerter.notify(note)
		}
	}
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

// warnMissing says which sources the workload uses are missing, and what that means for it:
// one Warning Event per kind, unless the last one said the same. A kind with none missing is
// resolved, so that it is news again when it comes back. Each call counts a skipped roll.
func (r *Reconciler[T]) warnMissing(ctx context.Context, obj T, missing []podrefs.Source, d decision) {
	key := client.ObjectKeyFromObject(obj)
	if len(missing) == 0 {
		r.warned.resolved(key, v1alpha1.ReasonConfigMapMissing)
		r.warned.resolved(key, v1alpha1.ReasonSecretMissing)
		return
	}
	skippedRolls.WithLabelValues(r.Kind.Name, skippedSourceMissing).Inc()
	names := map[podrefs.SourceKind][]string{}
	deleted := false
	for _, src := range missing {
		names[src.Kind] = append(names[src.Kind], src.Name)
		deleted = deleted || slices.Contains(d.deleted, src.Key())
	}
	what := "its creation is recorded without rolling this workload (--reload-on-create is off)"
	if r.Settings.ReloadOnCreate {
		what = "its creation rolls this workload"
	}
	if deleted {
		what = "a deletion rolls nothing (--reload-on-delete is off); changes of the other sources still roll this workload, and a source that returns rolls it only if its data differs"
	}
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
		note := fmt.Sprintf("%s %s not found: %s", kind, strings.Join(names[kind], ", "), what)
		if !r.warned.news(key, reason, note) {
			continue
		}
		if !logged {
			ctrl.LoggerFrom(ctx).Info("Sources missing", "configMaps", names[podrefs.ConfigMap], "secrets", names[podrefs.Secret],
				"deletedWithoutRoll", d.deleted, "reloadOnDelete", r.Settings.ReloadOnDelete)
			logged = true
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Roll", "%s", note)
	}
}

// The annotations warnInvalid remembers a warning of apart, so that one read fine does not
// make the other's lasting warning news again.
const (
	reloadAnnotations     = v1alpha1.ReasonInvalidReloadAnnotation
	runOnChangeAnnotation = v1alpha1.ReasonInvalidReloadAnnotation + "/run-on-change"
)

// warnInvalid says which annotation, or which entries of one, cannot be read, unless the last
// warning of the same annotations (which) said the same. Each call counts a skipped roll.
func (r *Reconciler[T]) warnInvalid(ctx context.Context, obj T, err error, which string) {
	skippedRolls.WithLabelValues(r.Kind.Name, skippedInvalidAnnotation).Inc()
	note := "skipped: " + cut(err.Error())
	if !r.warned.news(client.ObjectKeyFromObject(obj), which, note) {
		return
	}
	ctrl.LoggerFrom(ctx).Info("Reload annotation entries invalid; the others still count", "reason", err.Error())
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
