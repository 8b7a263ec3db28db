package verticalscaler

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/status"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
	"github.com/example/switchboard/indexers"
)

// ControllerName names the controller in the table, in logs and metrics, and is its field
// manager.
const ControllerName = "verticalscaler"

// +kubebuilder:rbac:groups=app.example.com,resources=verticalscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=app.example.com,resources=verticalscalers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=metrics.k8s.io,resources=pods,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles VerticalScalers.
type Reconciler struct {
	Client client.Client
	// Reports holds the usage poller's latest report per VerticalScaler: the poller keeps the
	// usage history, the controller reads its latest conclusion and forgets it when the
	// VerticalScaler is deleted.
	Reports *recommender.Reports
	// Recorder records an Event on the VerticalScaler for each write to its Deployment.
	Recorder events.EventRecorder
	// Shard is the label selector of the objects the manager caches (--watch-label-selector):
	// a Deployment without the shard's labels is not found. Empty when it caches every object.
	Shard string
}

// VerticalScalersFor returns the map function of the Deployment watch: a Deployment maps to the
// VerticalScalers that name it, through the shared index on reader, the manager's cache.
func VerticalScalersFor(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list v1alpha1.VerticalScalerList
		if err := reader.List(ctx, &list, client.InNamespace(obj.GetNamespace()),
			client.MatchingFields{indexers.VerticalScalerDeploymentNameField: obj.GetName()},
			client.UnsafeDisableDeepCopy); err != nil {
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
}

// observation is what one reconcile saw and did; computeStatus turns it into status.
type observation struct {
	// deployment is nil when it does not exist (in this shard's cache).
	deployment *appsv1.Deployment
	// shard is the manager's --watch-label-selector; empty when it watches every object.
	shard string
	// report is the latest usage report about the Deployment named now; nil when none came
	// since the manager started.
	report *recommender.Report
	// recommendation is the bounded recommendation; nil when there is none yet.
	recommendation *v1alpha1.Recommendation
	// policyProblems name the policies that do not fit the Deployment.
	policyProblems []string
	// apply is what happened in Auto mode; nil otherwise, or when nothing was attempted.
	apply *applyState
	// err is the error of this reconcile, if any.
	err error
}

// Reconcile recommends requests for the containers of a VerticalScaler's Deployment from their
// usage, bounded by its policies; in Auto mode it writes them to the Deployment.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vs := &v1alpha1.VerticalScaler{}
	if err := r.Client.Get(ctx, req.NamespacedName, vs); err != nil {
		if apierrors.IsNotFound(err) {
			// Nothing to clean up on the Deployment: it is not ours.
			r.Reports.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	obs := observation{report: r.report(req.NamespacedName, vs.Spec.DeploymentName), shard: r.Shard}
	deployment, err := r.deployment(ctx, vs)
	if err != nil {
		return ctrl.Result{}, err
	}
	obs.deployment = deployment
	if deployment != nil {
		r.recommend(vs, &obs)
		if vs.Spec.UpdateMode == v1alpha1.UpdateModeAuto && obs.recommendation != nil {
			state, err := r.applyRecommendation(ctx, vs, deployment, obs.recommendation)
			obs.apply, obs.err = &state, err
		}
	}
	if err := status.Update(ctx, r.Client, vs, func() { vs.Status = computeStatus(vs, obs) }); err != nil {
		return ctrl.Result{}, err
	}
	if obs.err != nil {
		return ctrl.Result{}, obs.err
	}
	if obs.apply != nil && obs.apply.wait > 0 {
		return ctrl.Result{RequeueAfter: obs.apply.wait}, nil
	}
	return ctrl.Result{}, nil
}

// report returns the latest usage report for the VerticalScaler key, if it is about
// deploymentName.
func (r *Reconciler) report(key types.NamespacedName, deploymentName string) *recommender.Report {
	report, ok := r.Reports.Latest(key, deploymentName)
	if !ok {
		return nil
	}
	return &report
}

// deployment reads the VerticalScaler's Deployment from the cache; nil when it does not exist.
func (r *Reconciler) deployment(ctx context.Context, vs *v1alpha1.VerticalScaler) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: vs.Namespace, Name: vs.Spec.DeploymentName}, d)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Deployment %s: %w", vs.Spec.DeploymentName, err)
	}
	return d, nil
}

// recommend bounds the latest estimates (the report's, else those kept in status) by the
// policies, for the containers the Deployment has.
func (r *Reconciler) recommend(vs *v1alpha1.VerticalScaler, obs *observation) {
	podSpec := &obs.deployment.Spec.Template.Spec
	obs.policyProblems = unknownContainers(&vs.Spec, podSpec)
	from := vs.Status.Recommendation
	if obs.report != nil && obs.report.Recommendation != nil {
		from = obs.report.Recommendation
	}
	var policy *v1alpha1.RecommenderPolicy
	if from != nil {
		policy = from.Policy
	}
	obs.recommendation = recommend(&vs.Spec, recommender.RecommendedContainers(podSpec), policy, estimatesOf(from, vs.Spec.DeploymentName))
}
