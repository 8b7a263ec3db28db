package configmapwatcher

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/indexers"
	"github.com/example/switchboard/internal/podrefs"
)

// ControllerName names the controller in the table, in logs and metrics, and is its field
// manager.
const ControllerName = "configmapwatcher"

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles opted-in Deployments.
type Reconciler struct {
	Client client.Client
	// APIReader reads ConfigMaps from the API server: the cache holds none.
	APIReader client.Reader
	Recorder  events.EventRecorder
}

// ConfigMapChanges returns the controller's watch of ConfigMaps on mgr over namespaces (none for
// every namespace): metadata only and uncached (see configMapChanges), mapped to the Deployments
// through the shared index on the manager's cache.
func ConfigMapChanges(mgr ctrl.Manager, namespaces []string) (source.Source, error) {
	configMapClient, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating the ConfigMap metadata client: %w", err)
	}
	return newConfigMapChanges(mgr.GetClient(), configMapClient, namespaces,
		mgr.GetLogger().WithValues("controller", ControllerName)), nil
}

// OptedIn is a predicate of Deployment events. It lets through the events of Deployments that
// carry the reload annotation (before or after the change).
func OptedIn() predicate.Predicate {
	has := func(obj client.Object) bool {
		_, ok := obj.GetAnnotations()[v1alpha1.ReloadAnnotation]
		return ok
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return has(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return has(e.ObjectOld) || has(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return has(e.Object) },
	}
}

// deploymentsFor maps a ConfigMap to the opted-in Deployments that reload on it, through the
// shared index on reader, the manager's cache.
func deploymentsFor(ctx context.Context, reader client.Reader, obj client.Object) []reconcile.Request {
	var list appsv1.DeploymentList
	if err := reader.List(ctx, &list, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{indexers.DeploymentConfigMapsField: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Deployments by ConfigMap failed")
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return requests
}

// optedInDeployments lists, from reader (the manager's cache), the requests of every opted-in
// Deployment of namespace ("" for all) that references a ConfigMap.
func optedInDeployments(ctx context.Context, reader client.Reader, namespace string) ([]reconcile.Request, error) {
	var list appsv1.DeploymentList
	if err := reader.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Deployments: %w", err)
	}
	var requests []reconcile.Request
	for i := range list.Items {
		if len(podrefs.ReloadConfigMaps(list.Items[i].Annotations, &list.Items[i].Spec.Template.Spec)) > 0 {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return requests, nil
}

// Reconcile sets an opted-in Deployment's config hash from the data of the ConfigMaps it uses.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	deployment := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, deployment); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	names := podrefs.ReloadConfigMaps(deployment.Annotations, &deployment.Spec.Template.Spec)
	if len(names) == 0 || !deployment.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	configMaps, missing, err := r.readConfigMaps(ctx, deployment.Namespace, names)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(missing) > 0 {
		// Not an error: retrying cannot help. The ConfigMap's creation triggers a reconcile.
		r.warnMissing(ctx, deployment, missing)
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.applyHash(ctx, deployment, configHash(configMaps))
}

// readConfigMaps reads the named ConfigMaps from the API server and lists the missing ones.
func (r *Reconciler) readConfigMaps(ctx context.Context, namespace string, names []string) ([]corev1.ConfigMap, []string, error) {
	var found []corev1.ConfigMap
	var missing []string
	for _, name := range names {
		var cm corev1.ConfigMap
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cm)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, name)
		case err != nil:
			return nil, nil, fmt.Errorf("reading ConfigMap %s: %w", name, err)
		default:
			found = append(found, cm)
		}
	}
	return found, missing, nil
}

// applyHash writes the hash to the Pod template unless it is already there. The annotation is
// the only field the configmapwatcher owns, so comparing its value is enough: no need to read
// the managed fields back (client-go's Extract helpers parse the schema of every built-in kind
// on first use, a peak that a configmapwatcher-only manager would keep resident; README,
// Performance, has the figure).
func (r *Reconciler) applyHash(ctx context.Context, deployment *appsv1.Deployment, hash string) error {
	previous := deployment.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]
	if previous == hash {
		return nil
	}
	desired := appsv1ac.Deployment(deployment.Name, deployment.Namespace).
		WithSpec(appsv1ac.DeploymentSpec().WithTemplate(corev1ac.PodTemplateSpec().
			WithAnnotations(map[string]string{v1alpha1.ConfigHashAnnotation: hash})))
	if err := r.Client.Apply(ctx, desired, client.FieldOwner(ControllerName), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying the config hash to Deployment as %s: %w", ControllerName, err)
	}
	ctrl.LoggerFrom(ctx).Info("Rolled Deployment", "fieldManager", ControllerName, "previousHash", previous, "hash", hash)
	r.Recorder.Eventf(deployment, nil, corev1.EventTypeNormal, v1alpha1.ReasonConfigChanged, "Roll",
		"Rolled Deployment %s: the data of its ConfigMaps changed", deployment.Name)
	return nil
}

// warnMissing says which referenced ConfigMaps are missing.
func (r *Reconciler) warnMissing(ctx context.Context, deployment *appsv1.Deployment, missing []string) {
	msg := fmt.Sprintf("not rolled: ConfigMap %s not found", strings.Join(missing, ", "))
	ctrl.LoggerFrom(ctx).Info("ConfigMap missing; Deployment not rolled", "configMaps", missing)
	r.Recorder.Eventf(deployment, nil, corev1.EventTypeWarning, v1alpha1.ReasonConfigMapMissing, "Roll", "%s", msg)
}

// TrimDeployment keeps of a Deployment what this controller reads: its metadata without managed
// fields and, if it opted in, the Pod template's annotations and the ConfigMap references of its
// Pod spec. The cache stores Deployments so when this is the only selected controller that
// watches them: a real Deployment's spec and status are several KiB, of which the controller
// reads a few names.
func TrimDeployment(obj any) (any, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return obj, nil
	}
	trimmed := &appsv1.Deployment{TypeMeta: d.TypeMeta, ObjectMeta: d.ObjectMeta}
	trimmed.ManagedFields = nil
	if _, optedIn := d.Annotations[v1alpha1.ReloadAnnotation]; optedIn {
		trimmed.Spec.Template.Annotations = d.Spec.Template.Annotations
		trimmed.Spec.Template.Spec = podrefs.ConfigMapReferencesOnly(&d.Spec.Template.Spec)
	}
	return trimmed, nil
}
