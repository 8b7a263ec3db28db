package verticalscaler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/apifeatures"
	"github.com/example/switchboard/controllers/internal/status"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
	"github.com/example/switchboard/indexers"
)

// ControllerName names the controller in the table, in logs and metrics, and is its field
// manager.
const ControllerName = "verticalscaler"

// +kubebuilder:rbac:groups=app.example.com,resources=verticalscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=app.example.com,resources=verticalscalers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=*,resources=*/scale,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=metrics.k8s.io,resources=pods,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles VerticalScalers.
type Reconciler struct {
	Client client.Client
	// Reports holds the usage poller's latest report per VerticalScaler: the poller keeps the
	// usage history, the controller reads its latest conclusion and forgets it when the
	// VerticalScaler is deleted.
	Reports *recommender.Reports
	// Recorder records an Event on the VerticalScaler for each write to its target, and a
	// warning when a policy names a container the target lacks.
	Recorder events.EventRecorder
	// Discovery tells a custom workload that does not exist from one whose kind has no scale
	// subresource, which the API server both answers with 404.
	Discovery discovery.DiscoveryInterface
	// Limits guard the changes to running Pods.
	Limits UpdateLimits
	// Missing are the optional APIs the API server does not serve: without
	// MutatingAdmissionPolicy no admission policy sizes new Pods, and without pods/resize no
	// Pod is resized in place.
	Missing apifeatures.Missing
	// CoreV1 is the REST client of the core API group, which evicts Pods without retrying a
	// refusal.
	CoreV1 rest.Interface

	// resizes remembers when each Pod was last resized.
	resizes resizeLog
	// sizing remembers what each VerticalScaler's new Pods are to get at admission, and since
	// when.
	sizing sizingLog
	// Shard is the label selector of the objects the manager caches (--watch-label-selector):
	// a workload of a cached kind without the shard's labels is not found. Empty when it caches
	// every object.
	Shard string
	// RecommenderName is the manager's own recommender (--recommender-name): a VerticalScaler
	// whose spec.recommenders name only others gets its recommendation from them.
	RecommenderName string
}

// VerticalScalersOf returns the map function of the watch of kind: an object maps to the
// VerticalScalers that name it, through the shared index on reader, the manager's cache.
func VerticalScalersOf(kind TemplateKind) func(reader client.Reader) handler.MapFunc {
	return func(reader client.Reader) handler.MapFunc {
		return func(ctx context.Context, obj client.Object) []reconcile.Request {
			var list v1alpha1.VerticalScalerList
			if err := reader.List(ctx, &list, client.InNamespace(obj.GetNamespace()),
				client.MatchingFields{indexers.VerticalScalerTargetField: kind.Key(obj.GetName())},
				client.UnsafeDisableDeepCopy); err != nil {
				// The cache answers from memory; an error here means the index is missing, a
				// programming error that the suite catches.
				ctrl.LoggerFrom(ctx).Error(err, "Listing VerticalScalers by target failed", "kind", kind.Kind)
				return nil
			}
			requests := make([]reconcile.Request, 0, len(list.Items))
			for i := range list.Items {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
			return requests
		}
	}
}

// observation is what one reconcile saw and did; computeStatus turns it into status.
type observation struct {
	// target is the workload the spec names; nil when there is none to size, and problem says
	// why.
	target  *workload
	problem *targetProblem
	// report is the latest usage report about the target named now; nil when none came since
	// the manager started, or when another recommender recommends.
	report *recommender.Report
	// elsewhere names the other recommenders whose recommendation in status is applied; empty
	// when the manager's own recommends.
	elsewhere string
	// recommendation is the bounded recommendation; nil when there is none yet.
	recommendation *v1alpha1.Recommendation
	// behind says which containers' history has fewer samples than the status's
	// recommendation rests on (a history read back from an older checkpoint by a restarted
	// manager or a new leader); empty when it is not behind, and the report's recommendation
	// replaces the status's.
	behind string
	// policyProblems name the policies that do not fit the target's Pods.
	policyProblems []string
	// podResources are what the admission policy gives new Pods' containers; nil in Off mode.
	podResources []v1alpha1.ContainerResources
	// apply is what happened in a mode that applies; nil otherwise, or when nothing was
	// attempted.
	apply *applyState
	// err is the error of this reconcile, if any.
	err error
}

// Reconcile recommends requests for the containers of a VerticalScaler's target from their
// usage, bounded by its policies, and applies them as its update mode says.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vs := &v1alpha1.VerticalScaler{}
	if err := r.Client.Get(ctx, req.NamespacedName, vs); err != nil {
		if apierrors.IsNotFound(err) {
			// Nothing to clean up on the target: it is not ours.
			r.Reports.Forget(req.NamespacedName)
			r.sizing.forget(req.NamespacedName)
			recordRecommendation(req.NamespacedName, nil)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	target, problem, err := r.findTarget(ctx, vs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if target != nil {
		other, err := r.olderScalerOf(ctx, vs)
		if err != nil {
			return ctrl.Result{}, err
		}
		if other != nil {
			target, problem = nil, conflict(target.key, other)
		}
	}
	obs := observation{target: target, problem: problem, elsewhere: recommender.RecommendedElsewhere(&vs.Spec, r.RecommenderName)}
	if obs.elsewhere == "" {
		obs.report = r.report(req.NamespacedName, vs.Spec.Target().Key())
	}
	if target != nil {
		r.recommend(vs, &obs)
		if obs.recommendation != nil && vs.Spec.UpdateMode != v1alpha1.UpdateModeOff && vs.Spec.UpdateMode != "" {
			ranges, err := limitRangesIn(ctx, r.Client, vs.Namespace)
			if err != nil {
				return ctrl.Result{}, err
			}
			if obs.podResources, err = r.podResources(ctx, vs, target, obs.recommendation, ranges); err != nil {
				return ctrl.Result{}, err
			}
			sizing := r.sizing.observe(req.NamespacedName, obs.podResources, time.Now())
			obs.apply, obs.err = r.apply(ctx, vs, target, obs.recommendation, ranges, sizing)
		}
	}
	ready := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionReady).DeepCopy()
	if err := status.Update(ctx, r.Client, vs, func() { vs.Status = computeStatus(vs, obs) }); err != nil {
		return ctrl.Result{}, err
	}
	recordRecommendation(req.NamespacedName, vs)
	r.warnPolicyProblems(vs, ready)
	if obs.err != nil {
		return ctrl.Result{}, obs.err
	}
	if obs.apply != nil && obs.apply.wait > 0 {
		return ctrl.Result{RequeueAfter: obs.apply.wait}, nil
	}
	return ctrl.Result{}, nil
}

// warnPolicyProblems records a warning Event when the Ready condition, which was before, newly
// says that a policy names a container the target's Pod template lacks. The condition is kept
// in status, so a resync, a restart or another replica does not say it again; a policy naming
// another container is news.
func (r *Reconciler) warnPolicyProblems(vs *v1alpha1.VerticalScaler, before *metav1.Condition) {
	after := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionReady)
	if after == nil || after.Reason != v1alpha1.ReasonContainerNotFound ||
		(before != nil && before.Reason == after.Reason && before.Message == after.Message) {
		return
	}
	r.Recorder.Eventf(vs, nil, corev1.EventTypeWarning, v1alpha1.ReasonContainerNotFound, "Recommend", "%s", after.Message)
}

// report returns the latest usage report for the VerticalScaler key, if it is about target.
func (r *Reconciler) report(key types.NamespacedName, target string) *recommender.Report {
	report, ok := r.Reports.Latest(key, target)
	if !ok {
		return nil
	}
	return &report
}

// recommend bounds the latest estimates (the report's, else those kept in status, or the
// targets another recommender wrote there) by the policies, for the containers the target's
// Pods have: those of its Pod template, or for a custom kind, whose template the controller
// cannot read, those with an estimate.
func (r *Reconciler) recommend(vs *v1alpha1.VerticalScaler, obs *observation) {
	from := vs.Status.Recommendation
	if obs.report != nil && obs.report.Recommendation != nil {
		if obs.behind = behindStatus(obs.report.Recommendation, vs.Status.Recommendation); obs.behind == "" {
			from = obs.report.Recommendation
		}
	}
	var policy *v1alpha1.RecommenderPolicy
	if from != nil {
		policy = from.Policy
	}
	var estimates map[string]v1alpha1.ContainerRecommendation
	if obs.elsewhere != "" {
		estimates = writtenTargets(from, obs.target.key)
	} else {
		estimates = estimatesOf(from, obs.target.key)
	}
	var containers []corev1.Container
	if template := obs.target.template(); template != nil {
		obs.policyProblems = unknownContainers(&vs.Spec, &template.Spec)
		containers = recommender.RecommendedContainers(&template.Spec)
	} else {
		for _, name := range slices.Sorted(maps.Keys(estimates)) {
			containers = append(containers, corev1.Container{Name: name})
		}
	}
	obs.recommendation = recommend(&vs.Spec, obs.target.key, containers, policy, estimates)
}

// apply applies rec as vs's update mode says; nil when the mode applies nothing itself.
// ranges are the LimitRanges of vs's namespace, and sizing what new Pods were to get lately.
func (r *Reconciler) apply(ctx context.Context, vs *v1alpha1.VerticalScaler, w *workload, rec *v1alpha1.Recommendation, ranges limitRanges,
	sizing admissionSizing) (*applyState, error) {
	var state applyState
	var err error
	switch vs.Spec.UpdateMode {
	case v1alpha1.UpdateModeInitial:
		state = applyState{reason: v1alpha1.ReasonAppliedAtAdmission,
			message: "updateMode is Initial: Pods get the recommendation as they are created, running Pods are left alone"}
		if r.Missing.MutatingAdmissionPolicy {
			state = applyState{reason: v1alpha1.ReasonAdmissionPolicyUnavailable,
				message: "updateMode is Initial, but the API server serves no MutatingAdmissionPolicy, so no admission policy gives new Pods the recommendation: they start as their template says (InPlaceOrRecreate would resize them once they run)"}
		}
	case v1alpha1.UpdateModeRecreate, v1alpha1.UpdateModeAuto:
		evict := recreatesByEviction(&vs.Spec) && !r.Missing.MutatingAdmissionPolicy
		switch {
		case w.object != nil && w.kind.RollsOnTemplateChange && !evict:
			state, err = r.writeTemplate(ctx, vs, w, rec, ranges)
			if err == nil && recreatesByEviction(&vs.Spec) {
				state.message += " (recreateBy is Eviction, but the API server serves no MutatingAdmissionPolicy to size the replacements of evicted Pods: the Pod template is written instead)"
			}
		case r.Missing.MutatingAdmissionPolicy:
			state = applyState{reason: v1alpha1.ReasonAdmissionPolicyUnavailable,
				message: fmt.Sprintf("updateMode is %s and %s does not roll on a template change, so its Pods would be evicted; but the API server serves no MutatingAdmissionPolicy, so their replacements would start as before: none is evicted (InPlaceOrRecreate would resize them)", vs.Spec.UpdateMode, w.key)}
		default:
			state, err = r.updatePods(ctx, vs, w, rec, ranges, sizing, false)
		}
	case v1alpha1.UpdateModeInPlaceOrRecreate:
		state, err = r.updatePods(ctx, vs, w, rec, ranges, sizing, !r.Missing.PodResize)
		if err == nil && r.Missing.PodResize {
			state.message += " (the API server serves no pods/resize: Pods are evicted, not resized in place)"
		}
	default:
		return nil, nil
	}
	return &state, err
}

// podResources are the resources the admission policy gives the containers of the target's new
// Pods: the recommendation bounded by the container policies and the namespace's LimitRanges
// (ranges), as desiredResourcesOf makes it of the containers of the Pod template, or for a
// custom kind, whose template the controller cannot read, of a running Pod's.
func (r *Reconciler) podResources(ctx context.Context, vs *v1alpha1.VerticalScaler, w *workload, rec *v1alpha1.Recommendation,
	ranges limitRanges) ([]v1alpha1.ContainerResources, error) {
	var spec *corev1.PodSpec
	if template := w.template(); template != nil {
		spec = &template.Spec
	} else {
		selector, err := metav1.LabelSelectorAsSelector(w.selector)
		if err != nil {
			return nil, fmt.Errorf("the Pod selector of %s: %w", w.key, err)
		}
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.InNamespace(vs.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return nil, fmt.Errorf("listing the Pods of %s: %w", w.key, err)
		}
		if len(pods.Items) == 0 {
			return nil, nil
		}
		spec = &pods.Items[0].Spec
	}
	containers := recommender.RecommendedContainers(spec)
	_, desired := desiredResourcesOf(&vs.Spec, containers, rec, ranges)
	var out []v1alpha1.ContainerResources
	for _, c := range containers {
		if d, ok := desired[c.Name]; ok {
			out = append(out, v1alpha1.ContainerResources{ContainerName: c.Name, Requests: d.Requests, Limits: d.Limits})
		}
	}
	return out, nil
}
