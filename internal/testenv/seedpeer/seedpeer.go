// Package seedpeer is the MyApp controller the benchmarks hold myapp against: written the way
// the project's seed sketches one, and the way a user would write it. CreateOrUpdate of the
// Deployment and of the Service, Update for the finalizer, Status().Update, controller-runtime's
// default client and cache (whole objects, managed fields included), For MyApp and Owns both
// kinds without predicates. Users compare Switchboard's myapp with what they would write
// themselves, so this is the controller to beat.
//
// BenchmarkConvergence (controllers/myapp) runs it in its own process; the scale benchmarks
// (test/scale) run it as a process of its own, hack/seedmanager, to read its memory.
package seedpeer

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/example/switchboard/apis/v1alpha1"
)

// ControllerName names the peer's controller in controller-runtime's metrics.
const ControllerName = "seed"

// Reconciler reconciles MyApps the seed's way.
type Reconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// Reconcile creates or updates the MyApp's Deployment and Service and writes its status, on
// every call.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var app v1alpha1.MyApp
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !app.DeletionTimestamp.IsZero() {
		if controllerutil.RemoveFinalizer(&app, v1alpha1.MyAppFinalizer) {
			return ctrl.Result{}, r.Update(ctx, &app)
		}
		return ctrl.Result{}, nil
	}
	if controllerutil.AddFinalizer(&app, v1alpha1.MyAppFinalizer) {
		if err := r.Update(ctx, &app); err != nil {
			return ctrl.Result{}, err
		}
	}

	labels := map[string]string{"app.kubernetes.io/name": "myapp", "app.kubernetes.io/instance": app.Name}
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, deployment, func() error {
		deployment.Spec.Replicas = &app.Spec.Replicas
		if deployment.Spec.Selector == nil {
			deployment.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		}
		deployment.Spec.Template.Labels = labels
		if len(deployment.Spec.Template.Spec.Containers) == 0 {
			deployment.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app"}}
		}
		c := &deployment.Spec.Template.Spec.Containers[0]
		c.Image = app.Spec.Image
		c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: app.Spec.Port, Protocol: corev1.ProtocolTCP}}
		return controllerutil.SetControllerReference(&app, deployment, r.Scheme)
	}); err != nil {
		return ctrl.Result{}, err
	}
	service := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, service, func() error {
		service.Spec.Selector = labels
		service.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: app.Spec.Port, Protocol: corev1.ProtocolTCP}}
		return controllerutil.SetControllerReference(&app, service, r.Scheme)
	}); err != nil {
		return ctrl.Result{}, err
	}

	app.Status.ReadyReplicas = deployment.Status.ReadyReplicas
	app.Status.Phase = v1alpha1.MyAppPending
	if deployment.Status.ReadyReplicas == app.Spec.Replicas {
		app.Status.Phase = v1alpha1.MyAppRunning
	}
	app.Status.ObservedGeneration = app.Generation
	return ctrl.Result{}, r.Status().Update(ctx, &app)
}

// NewManager returns a manager on cfg that runs the peer over namespace ns with the given number
// of workers, with controller-runtime's defaults otherwise: no client-side rate limit (as
// ctrl.GetConfig gives), a cache of whole objects. It serves metrics at metricsAddress ("0":
// none).
func NewManager(cfg *rest.Config, ns string, workers int, metricsAddress string) (ctrl.Manager, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddress},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		// Benchmarks start one manager after another in one process.
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		return nil, err
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&v1alpha1.MyApp{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Complete(&Reconciler{Client: mgr.GetClient(), Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return mgr, nil
}
