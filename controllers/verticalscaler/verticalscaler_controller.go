package verticalscaler

import (
	"context"
	"fmt"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/indexers"
)

// ControllerName names the controller in the table, in logs and metrics, and is its field
// manager.
const ControllerName = "verticalscaler"

// Reasons of the DeploymentFound condition.
const (
	ReasonDeploymentFound   = "DeploymentFound"
	ReasonDeploymentMissing = "DeploymentNotFound"
)

// +kubebuilder:rbac:groups=app.example.com,resources=verticalscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=app.example.com,resources=verticalscalers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch

// Reconciler reconciles VerticalScalers.
type Reconciler struct {
	Client client.Client
}

// SetupWithManager adds the controller to mgr; each trigger is a channel source whose events
// name VerticalScalers to reconcile.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options, triggers ...<-chan event.GenericEvent) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(opts).
		For(&v1alpha1.VerticalScaler{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.verticalScalersFor),
			builder.WithPredicates(existenceChanged()))
	for _, trigger := range triggers {
		b = b.WatchesRawSource(source.Channel(trigger, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

// existenceChanged lets through the Deployment events that can change what the controller
// reports: creation and deletion.
func existenceChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}
}

// verticalScalersFor maps a Deployment to the VerticalScalers that name it, through the shared
// index on the cache.
func (r *Reconciler) verticalScalersFor(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha1.VerticalScalerList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{indexers.VerticalScalerDeploymentNameField: obj.GetName()}); err != nil {
		// The cache answers from memory; an error here means the index is missing, a
		// programming error that the suite catches.
		ctrl.LoggerFrom(ctx).Error(err, "Listing VerticalScalers by Deployment failed")
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return requests
}

// Reconcile reports whether a VerticalScaler's Deployment exists.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vs := &v1alpha1.VerticalScaler{}
	if err := r.Client.Get(ctx, req.NamespacedName, vs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	deployment := &appsv1.Deployment{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: vs.Namespace, Name: vs.Spec.DeploymentName}, deployment)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("reading Deployment %s: %w", vs.Spec.DeploymentName, err)
	}
	return ctrl.Result{}, r.updateStatus(ctx, vs, computeStatus(vs, err == nil))
}

// computeStatus is the one place a VerticalScaler's status is computed.
func computeStatus(vs *v1alpha1.VerticalScaler, found bool) v1alpha1.VerticalScalerStatus {
	status := *vs.Status.DeepCopy()
	c := metav1.Condition{Type: v1alpha1.ConditionDeploymentFound, Status: metav1.ConditionTrue,
		Reason: ReasonDeploymentFound, ObservedGeneration: vs.Generation,
		Message: fmt.Sprintf("Deployment %s exists", vs.Spec.DeploymentName)}
	if !found {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonDeploymentMissing
		c.Message = fmt.Sprintf("Deployment %s does not exist in namespace %s", vs.Spec.DeploymentName, vs.Namespace)
	}
	meta.SetStatusCondition(&status.Conditions, c)
	status.ObservedGeneration = vs.Generation
	return status
}

// updateStatus writes status when it differs from what the VerticalScaler has.
func (r *Reconciler) updateStatus(ctx context.Context, vs *v1alpha1.VerticalScaler, status v1alpha1.VerticalScalerStatus) error {
	if cmp.Equal(vs.Status, status) {
		return nil
	}
	patch := client.MergeFrom(vs.DeepCopy())
	vs.Status = status
	if err := r.Client.Status().Patch(ctx, vs, patch); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}
