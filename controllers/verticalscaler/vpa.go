package verticalscaler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/example/switchboard/apis/v1alpha1"
	vpav1 "github.com/example/switchboard/apis/vpa/v1"
	"github.com/example/switchboard/controllers/internal/status"
)

// VPAControllerName names the controller of VerticalPodAutoscalers in the table, in logs and
// metrics, and is the field manager of the VerticalScalers it makes.
const VPAControllerName = "verticalpodautoscaler"

// +kubebuilder:rbac:groups=autoscaling.k8s.io,resources=verticalpodautoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.k8s.io,resources=verticalpodautoscalers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=app.example.com,resources=verticalscalers,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// NewVerticalPodAutoscaler returns an empty VerticalPodAutoscaler. VerticalPodAutoscalers are
// read and cached as unstructured objects, so that the spec is converted strictly
// (readVPASpec) and a field Switchboard does not know is refused by name, never dropped.
func NewVerticalPodAutoscaler() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(vpav1.GroupVersion.WithKind(vpav1.Kind))
	return u
}

// VPAReconciler acts on the Vertical Pod Autoscaler's own objects: for each
// VerticalPodAutoscaler it makes a VerticalScaler of the same name that does what the
// VerticalPodAutoscaler asks and that it controls (the verticalscaler controller sizes the
// workload through it, with the same recommender and the same guards). For one meant for its
// recommender it writes the VerticalScaler's recommendation and what stands in its way into the
// VerticalPodAutoscaler's status, as the Vertical Pod Autoscaler's recommender would; for one of
// another recommender it hands the recommendation that recommender writes to the
// VerticalScaler, as the VPA's updater and admission controller apply it.
type VPAReconciler struct {
	Client client.Client
	// APIReader reads uncached: whether a VerticalScaler of the name exists before the first
	// apply, which must never write into one that someone else made and the cache has not seen
	// yet.
	APIReader client.Reader
	// RecommenderName is the recommender Switchboard answers for (--recommender-name): the
	// VerticalScaler of a VerticalPodAutoscaler that names only others applies the
	// recommendation they write, as the VPA's updater and admission controller do.
	RecommenderName string
	// Recorder records a warning Event on a VerticalPodAutoscaler of another recommender that
	// cannot be applied.
	Recorder events.EventRecorder
}

// Reconcile makes, keeps or removes the VerticalScaler of a VerticalPodAutoscaler and writes
// the VerticalPodAutoscaler's status from it; for a VerticalPodAutoscaler of another
// recommender it passes the recommendation that recommender wrote to the VerticalScaler
// instead.
func (r *VPAReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	vpa := NewVerticalPodAutoscaler()
	if err := r.Client.Get(ctx, req.NamespacedName, vpa); err != nil {
		if apierrors.IsNotFound(err) {
			// A deleted VerticalPodAutoscaler's VerticalScaler goes with it (it is the owner);
			// its checkpoints are collected here.
			return reconcile.Result{}, r.collectCheckpoints(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, err
	}
	if vpa.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, nil
	}
	scaler, err := r.scalerOf(ctx, vpa)
	if err != nil {
		return reconcile.Result{}, err
	}
	recommenders := scalerRecommenders(readRecommenders(vpa), r.RecommenderName)
	obs := vpaObservation{now: time.Now()}
	spec, err := readVPASpec(vpa)
	if err != nil {
		obs.problems = []string{err.Error()}
	} else {
		var desired v1alpha1.VerticalScalerSpec
		desired, obs.problems = scalerSpecOf(spec)
		desired.Recommenders = recommenders
		if len(obs.problems) == 0 {
			obs.scaler, obs.problems, err = r.keepScaler(ctx, vpa, scaler, desired)
			if err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	if len(obs.problems) > 0 {
		if err := r.removeScaler(ctx, vpa, scaler); err != nil {
			return reconcile.Result{}, err
		}
	}
	if len(recommenders) > 0 {
		// Another recommender's: its status is theirs to write; its recommendation is what the
		// VerticalScaler applies.
		r.warnUnsupported(vpa, obs.problems)
		return reconcile.Result{}, r.passRecommendation(ctx, vpa, obs.scaler)
	}
	if obs.podsMatched, err = r.podsMatched(ctx, obs.scaler); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.writeStatus(ctx, vpa, obs)
}

// scalerOf is the VerticalScaler of the VerticalPodAutoscaler's name, whoever made it; nil when
// there is none.
func (r *VPAReconciler) scalerOf(ctx context.Context, vpa *unstructured.Unstructured) (*v1alpha1.VerticalScaler, error) {
	scaler := &v1alpha1.VerticalScaler{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(vpa), scaler); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading VerticalScaler %s: %w", vpa.GetName(), err)
	}
	return scaler, nil
}

// keepScaler makes the VerticalPodAutoscaler's VerticalScaler carry desired, writing only when
// it does not yet. It returns the VerticalScaler when it needed no write, and nil after one: its
// watch brings the written one back. A VerticalScaler of that name that the
// VerticalPodAutoscaler does not control, or a spec the API server refuses, is a problem to
// report instead.
func (r *VPAReconciler) keepScaler(ctx context.Context, vpa *unstructured.Unstructured, scaler *v1alpha1.VerticalScaler, desired v1alpha1.VerticalScalerSpec) (*v1alpha1.VerticalScaler, []string, error) {
	if scaler == nil {
		found := &v1alpha1.VerticalScaler{}
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(vpa), found)
		switch {
		case err == nil:
			scaler = found
		case !apierrors.IsNotFound(err):
			return nil, nil, fmt.Errorf("reading VerticalScaler %s: %w", vpa.GetName(), err)
		}
	}
	if scaler != nil && !metav1.IsControlledBy(scaler, vpa) {
		return nil, []string{fmt.Sprintf("VerticalScaler %s exists and was not made from this VerticalPodAutoscaler: a VerticalPodAutoscaler is carried out through the VerticalScaler of its name, so rename or delete one of them", scaler.Name)}, nil
	}
	if scaler != nil && equality.Semantic.DeepEqual(scaler.Spec, desired) {
		return scaler, nil, nil
	}
	err := r.applyScaler(ctx, vpa, desired)
	if apierrors.IsInvalid(err) {
		return nil, []string{"spec: the VerticalScaler it becomes is refused: " + apiMessage(err)}, nil
	}
	return nil, nil, err
}

// apiMessage is the API server's message of a refused write.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

// applyScaler writes the whole VerticalScaler by server-side apply, under the field manager
// VPAControllerName, with the VerticalPodAutoscaler as its controller owner: the garbage
// collector deletes it with the VerticalPodAutoscaler. The reference does not block the owner's
// deletion, which would need the right to update VerticalPodAutoscalers' finalizers.
func (r *VPAReconciler) applyScaler(ctx context.Context, vpa *unstructured.Unstructured, spec v1alpha1.VerticalScalerSpec) error {
	scaler := &v1alpha1.VerticalScaler{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "VerticalScaler"},
		ObjectMeta: metav1.ObjectMeta{Namespace: vpa.GetNamespace(), Name: vpa.GetName(), OwnerReferences: []metav1.OwnerReference{{
			APIVersion: vpa.GetAPIVersion(), Kind: vpa.GetKind(), Name: vpa.GetName(), UID: vpa.GetUID(), Controller: new(true)}}},
		Spec: spec,
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(scaler)
	if err != nil {
		return fmt.Errorf("encoding VerticalScaler %s: %w", scaler.Name, err)
	}
	// Neither a creation time nor a status is what this manager sets.
	unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(obj, "status")
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: obj}),
		client.FieldOwner(VPAControllerName), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying VerticalScaler %s: %w", scaler.Name, err)
	}
	return nil
}

// removeScaler deletes scaler if the VerticalPodAutoscaler controls it: one made while the
// VerticalPodAutoscaler could be acted on, which must not keep sizing its target.
func (r *VPAReconciler) removeScaler(ctx context.Context, vpa *unstructured.Unstructured, scaler *v1alpha1.VerticalScaler) error {
	if scaler == nil || !metav1.IsControlledBy(scaler, vpa) {
		return nil
	}
	err := r.Client.Delete(ctx, scaler, client.Preconditions{UID: &scaler.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting VerticalScaler %s: %w", scaler.Name, err)
	}
	return nil
}

// podsMatched says whether a live Pod of the scaler's target exists, read from the cache, where
// the verticalscaler keeps the Pods; false until the verticalscaler recorded the target's Pod
// selector.
func (r *VPAReconciler) podsMatched(ctx context.Context, scaler *v1alpha1.VerticalScaler) (bool, error) {
	if scaler == nil || scaler.Status.TargetSelector == nil {
		return false, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(scaler.Status.TargetSelector)
	if err != nil {
		// The verticalscaler reports it in the VerticalScaler's status.
		return false, nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(scaler.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return false, fmt.Errorf("listing the Pods of %s: %w", scaler.Status.Target, err)
	}
	for i := range pods.Items {
		if phase := pods.Items[i].Status.Phase; phase != corev1.PodSucceeded && phase != corev1.PodFailed {
			return true, nil
		}
	}
	return false, nil
}

// writeStatus writes the VerticalPodAutoscaler's status computed from obs, when it changed.
func (r *VPAReconciler) writeStatus(ctx context.Context, vpa *unstructured.Unstructured, obs vpaObservation) error {
	raw, _, err := unstructured.NestedMap(vpa.Object, "status")
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	var old vpav1.Status
	// Not strict: the status may hold what another recommender wrote; only what this one
	// writes is replaced.
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &old); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	next, err := runtime.DefaultUnstructuredConverter.ToUnstructured(new(computeVPAStatus(vpa.GetGeneration(), &old, obs)))
	if err != nil {
		return fmt.Errorf("encoding status: %w", err)
	}
	return status.Update(ctx, r.Client, vpa, func() {
		merged := maps.Clone(raw)
		if merged == nil {
			merged = map[string]any{}
		}
		// Only the fields this recommender writes: any other a newer VPA keeps there stays.
		for _, field := range []string{"recommendation", "conditions", "observedGeneration"} {
			delete(merged, field)
		}
		maps.Copy(merged, next)
		vpa.Object["status"] = merged
	})
}
