package myapp

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/apply"
	"github.com/example/switchboard/controllers/internal/status"
)

// ControllerName names the controller in the table, in logs and metrics, and is its field
// manager.
const ControllerName = "myapp"

// conflictRetry is how often a MyApp blocked by a name conflict looks again. Nothing else
// triggers it when the conflicting object goes away: that object is not owned by the MyApp.
const conflictRetry = time.Minute

// +kubebuilder:rbac:groups=app.example.com,resources=myapps,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=app.example.com,resources=myapps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=app.example.com,resources=myapps/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles MyApps.
type Reconciler struct {
	// Client reads MyApps from the manager's cache, and writes.
	Client client.Client
	// APIReader reads from the API server the Deployments and Services, which the cache does
	// not hold.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// ShardLabels are the label keys that decide a MyApp's shard (those --watch-label-selector
	// names): the Deployment and the Service carry the MyApp's values of them.
	ShardLabels []string

	// warned remembers, per MyApp, the last warning Event emitted, so that a lasting problem
	// does not write a new Event on every retry. It is the in-memory state the finalizer
	// releases.
	warned sync.Map // types.NamespacedName -> string
}

// SpecOrDeletionChanged is the predicate of MyApp events. It lets through creations, deletions,
// and updates that change the spec (generation) or the deletion timestamp. A status-only update
// does not trigger a reconcile, nor does the controller's own finalizer patch; a finalizer removed
// by hand is put back by the next periodic resync.
func SpecOrDeletionChanged() predicate.Predicate {
	return predicate.Or(
		predicate.GenerationChangedPredicate{},
		predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return !e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp())
		}, CreateFunc: func(event.CreateEvent) bool { return false },
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false }},
	)
}

// Reconcile brings one MyApp's Deployment and Service in line with its spec and reports their
// state in its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := &v1alpha1.MyApp{}
	if err := r.Client.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, app)
	}
	if err := r.ensureFinalizer(ctx, app); err != nil {
		return ctrl.Result{}, err
	}

	seen, err := r.reconcileOwned(ctx, app)
	statusErr := status.Update(ctx, r.Client, app, func() { app.Status = computeStatus(app, seen) })
	if err := errors.Join(err, statusErr); err != nil {
		return ctrl.Result{}, err
	}
	if seen.blocked != nil {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	r.warned.Delete(req.NamespacedName)
	return ctrl.Result{}, nil
}

// ensureFinalizer adds the finalizer before anything is created for the MyApp, when the API
// server did not set it at creation (the myapp component's finalizer policy does).
func (r *Reconciler) ensureFinalizer(ctx context.Context, app *v1alpha1.MyApp) error {
	if controllerutil.ContainsFinalizer(app, v1alpha1.MyAppFinalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(app, v1alpha1.MyAppFinalizer)
	if err := r.Client.Patch(ctx, app, patch); err != nil {
		return fmt.Errorf("adding finalizer: %w", err)
	}
	return nil
}

// reconcileDelete reports the Terminating phase, drops the in-memory state held for the MyApp,
// then removes the finalizer. The Deployment and Service are left to the garbage collector
// through their owner references. The phase stays visible while a foreground deletion waits for
// the garbage collector.
func (r *Reconciler) reconcileDelete(ctx context.Context, app *v1alpha1.MyApp) error {
	r.warned.Delete(client.ObjectKeyFromObject(app))
	if !controllerutil.ContainsFinalizer(app, v1alpha1.MyAppFinalizer) {
		return nil
	}
	var seen observation
	if deployment := (&appsv1.Deployment{}); r.getOwned(ctx, app, deployment) == nil {
		seen.deployment = existing(deployment)
	}
	if err := status.Update(ctx, r.Client, app, func() { app.Status = computeStatus(app, seen) }); err != nil {
		return client.IgnoreNotFound(err)
	}
	patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(app, v1alpha1.MyAppFinalizer)
	if err := r.Client.Patch(ctx, app, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing finalizer: %w", err))
	}
	ctrl.LoggerFrom(ctx).Info("Removed finalizer from MyApp")
	return nil
}

// reconcileOwned applies the Deployment and the Service, unless a foreign object holds either
// name, and returns what it observed.
func (r *Reconciler) reconcileOwned(ctx context.Context, app *v1alpha1.MyApp) (observation, error) {
	// Read side by side: one round trip.
	deployment, service := &appsv1.Deployment{}, &corev1.Service{}
	var read sync.WaitGroup
	var deploymentErr, serviceErr error
	read.Go(func() { deploymentErr = r.getOwned(ctx, app, deployment) })
	read.Go(func() { serviceErr = r.getOwned(ctx, app, service) })
	read.Wait()
	if err := errors.Join(deploymentErr, serviceErr); err != nil {
		var seen observation
		if deploymentErr == nil {
			seen.deployment = existing(deployment)
		}
		seen.blocked = r.conflict(ctx, app, err)
		return seen, ignoreConflict(err)
	}

	// The Deployment and the Service do not depend on each other: apply them side by side,
	// which takes one round trip to the API server off every reconcile that writes.
	var (
		wg               sync.WaitGroup
		applied          *appsv1.Deployment
		deploymentChange string
		serviceChange    string
	)
	wg.Go(func() { applied, deploymentChange, deploymentErr = r.applyDeployment(ctx, app, existing(deployment)) })
	wg.Go(func() { serviceChange, serviceErr = r.applyService(ctx, app, existing(service)) })
	wg.Wait()
	r.recordApplied(ctx, app, deploymentChange, serviceChange)
	if err := errors.Join(deploymentErr, serviceErr); err != nil {
		return observation{deployment: existing(deployment), blocked: r.conflict(ctx, app, err)}, ignoreConflict(err)
	}
	return observation{deployment: applied, applied: true}, nil
}

// errConflict is returned by getOwned when an object of the MyApp's name exists and another
// controller (or nobody) controls it: taking it over would be wrong.
type errConflict struct {
	kind string
	obj  client.Object
}

func (e *errConflict) Error() string {
	owner := "no controller"
	if ref := metav1.GetControllerOf(e.obj); ref != nil {
		owner = fmt.Sprintf("%s %s", ref.Kind, ref.Name)
	}
	return fmt.Sprintf("a %s named %s already exists and is controlled by %s, not by this MyApp", e.kind, e.obj.GetName(), owner)
}

// getOwned reads the object named after app into obj. It leaves obj empty when there is none,
// and returns an *errConflict when the object exists but app does not control it.
//
// myapp keeps no Deployment nor Service in memory: it reads the one it needs from the API
// server's own cache (resourceVersion "0": no etcd read), which holds every change the watch
// that brought this reconcile has delivered.
func (r *Reconciler) getOwned(ctx context.Context, app *v1alpha1.MyApp, obj client.Object) error {
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(app), obj, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading %T: %w", obj, err)
	case !metav1.IsControlledBy(obj, app):
		return &errConflict{kind: kindName(obj), obj: obj}
	}
	return nil
}

// kindName names the kind of an object myapp owns, for messages.
func kindName(obj client.Object) string {
	if _, ok := obj.(*corev1.Service); ok {
		return "Service"
	}
	return "Deployment"
}

// conflict turns a name conflict into a blocker, with a warning Event the first time it is seen;
// any other error gives no blocker.
func (r *Reconciler) conflict(ctx context.Context, app *v1alpha1.MyApp, err error) *blocker {
	var c *errConflict
	if !errors.As(err, &c) {
		return nil
	}
	reason := v1alpha1.ReasonDeploymentConflict
	if c.kind == "Service" {
		reason = v1alpha1.ReasonServiceConflict
	}
	r.warnOnce(ctx, app, reason, c.Error())
	return &blocker{Reason: reason, Message: c.Error()}
}

// ignoreConflict returns err without its name conflicts: a conflict is a blocker, reported in
// status, not an error to retry. Of errors joined, the others stay.
func ignoreConflict(err error) error {
	var c *errConflict
	if !errors.As(err, &c) {
		return err
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil
	}
	var rest []error
	for _, e := range joined.Unwrap() {
		rest = append(rest, ignoreConflict(e))
	}
	return errors.Join(rest...)
}

// existing returns obj, or nil when it was not found (it has no name).
func existing[T client.Object](obj T) T {
	var zero T
	if obj.GetName() == "" {
		return zero
	}
	return obj
}

// applyDeployment writes the desired Deployment unless the myapp field manager already has it
// (apply.Write), and returns the Deployment as it now is (current, or the API server's answer to
// the write, so that status is computed without reading the Deployment again) and what the write
// did ("" when nothing was sent).
func (r *Reconciler) applyDeployment(ctx context.Context, app *v1alpha1.MyApp, current *appsv1.Deployment) (*appsv1.Deployment, string, error) {
	result := &appsv1.Deployment{}
	outcome, err := r.write(ctx, app, nilIfAbsent(current), &appsv1.Deployment{},
		func(obj client.Object) (runtime.ApplyConfiguration, error) {
			return appsv1ac.ExtractDeployment(obj.(*appsv1.Deployment), ControllerName)
		}, desiredDeployment(app, r.ShardLabels), result)
	if err != nil {
		return nil, "", fmt.Errorf("writing the Deployment: %w", err)
	}
	if outcome == apply.Unchanged {
		return current, "", nil
	}
	return result, describeChange("Deployment", outcome), nil
}

// applyService writes the desired Service unless the myapp field manager already has it
// (apply.Write), and returns what the write did ("" when nothing was sent).
func (r *Reconciler) applyService(ctx context.Context, app *v1alpha1.MyApp, current *corev1.Service) (string, error) {
	outcome, err := r.write(ctx, app, nilIfAbsent(current), &corev1.Service{},
		func(obj client.Object) (runtime.ApplyConfiguration, error) {
			return corev1ac.ExtractService(obj.(*corev1.Service), ControllerName)
		}, desiredService(app, r.ShardLabels), &corev1.Service{})
	if err != nil {
		return "", fmt.Errorf("writing the Service: %w", err)
	}
	return describeChange("Service", outcome), nil
}

// write writes desired over live (nil when there is none) as apply.Write does. When the create
// of a missing object finds one after all, the object is read again, from etcd (into found, an
// empty object of its kind), and written over: the API server's cache had not seen it yet.
func (r *Reconciler) write(ctx context.Context, app *v1alpha1.MyApp, live, found client.Object,
	extract func(client.Object) (runtime.ApplyConfiguration, error), desired apply.Object, into client.Object) (apply.Outcome, error) {
	outcome, err := apply.Write(ctx, r.Client, ControllerName, live, r.changed(app, live), extract, desired, into)
	if live != nil || !apierrors.IsAlreadyExists(err) {
		return outcome, err
	}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(app), found); err != nil {
		return apply.Unchanged, fmt.Errorf("reading the %s that creating found: %w", kindName(found), err)
	}
	if !metav1.IsControlledBy(found, app) {
		return apply.Unchanged, &errConflict{kind: kindName(found), obj: found}
	}
	return apply.Write(ctx, r.Client, ControllerName, found, r.changed(app, found), extract, desired, into)
}

// changed says whether what myapp wants of live may have shrunk since it last wrote it in full:
// when the MyApp's spec changed (specChanged), or its shard, which live's labels record.
func (r *Reconciler) changed(app *v1alpha1.MyApp, live client.Object) bool {
	if specChanged(app) {
		return true
	}
	if live == nil {
		return false
	}
	for _, key := range r.ShardLabels {
		want, wanted := app.Labels[key]
		if got, has := live.GetLabels()[key]; has != wanted || got != want {
			return true
		}
	}
	return false
}

// specChanged says whether app's spec may have changed since the controller last carried it out
// in full, which is when its fields on the Deployment and the Service may have to shrink. A
// MyApp of generation 1 has had one spec only, so whatever the controller created was made from
// it, even by a replica killed before it could record that in status: the new leader has nothing
// to take over.
func specChanged(app *v1alpha1.MyApp) bool {
	return app.Generation > 1 && app.Status.ObservedGeneration != app.Generation
}

// nilIfAbsent returns obj as a client.Object, or an untyped nil when obj is a nil pointer:
// apply.Write tells a missing object by a nil interface.
func nilIfAbsent[T client.Object](obj T) client.Object {
	if reflect.ValueOf(obj).IsNil() {
		return nil
	}
	return obj
}

// describeChange says what a write did: "created Service" or "updated Deployment"; "" when
// nothing was sent.
func describeChange(kind string, outcome apply.Outcome) string {
	if outcome == apply.Unchanged {
		return ""
	}
	return string(outcome) + " " + kind
}

// recordApplied logs the changes of a reconcile and records one Event for all of them, so that
// creating a MyApp costs one Event, not one per object. Empty changes are skipped.
func (r *Reconciler) recordApplied(ctx context.Context, app *v1alpha1.MyApp, changes ...string) {
	changes = slices.DeleteFunc(changes, func(c string) bool { return c == "" })
	if len(changes) == 0 {
		return
	}
	note := strings.Join(changes, ", ")
	ctrl.LoggerFrom(ctx).Info(upperFirst(note), "fieldManager", ControllerName)
	reason := v1alpha1.ReasonUpdated
	if strings.HasPrefix(changes[0], "created") {
		reason = v1alpha1.ReasonCreated
	}
	r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, reason, "Apply", "%s for MyApp %s", upperFirst(note), app.Name)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// warnOnce records a warning Event unless the same warning was the last one recorded for app.
func (r *Reconciler) warnOnce(ctx context.Context, app *v1alpha1.MyApp, reason, message string) {
	key := client.ObjectKeyFromObject(app)
	if last, ok := r.warned.Load(key); ok && last == reason+message {
		return
	}
	r.warned.Store(key, reason+message)
	ctrl.LoggerFrom(ctx).Info("MyApp blocked", "reason", reason, "message", message)
	r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, reason, "Reconcile", "%s", message)
}
