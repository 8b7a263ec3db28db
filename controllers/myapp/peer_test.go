package myapp_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/testenv"
)

// seedReconciler is the peer of BenchmarkConvergence: a MyApp controller written the way the
// project's seed sketches one, and the way a user would write it: CreateOrUpdate of the
// Deployment and of the Service, Update for the finalizer, Status().Update, controller-runtime's
// default client, For MyApp and Owns both kinds without predicates. Users compare Switchboard's
// myapp with what they would write themselves, so this is the controller to beat.
type seedReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

func (r *seedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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

// startPeerManager starts a manager on ns that runs the seed-style reconciler with the given
// number of workers, with controller-runtime's defaults otherwise: no client-side rate limit
// (as ctrl.GetConfig gives), a cache of the namespace.
func startPeerManager(tb testing.TB, ns string, workers int) (ctrl.Manager, func()) {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	scheme := controllers.NewScheme()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		// Benchmarks start one manager after another in one process.
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		tb.Fatal(err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("seed").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&v1alpha1.MyApp{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Complete(&seedReconciler{Client: mgr.GetClient(), Scheme: scheme})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				tb.Errorf("peer manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			tb.Error("the peer manager did not stop within 30s")
		}
	}
	return mgr, stop
}

// TestSeedReconcilerConverges: the peer of the benchmark does what it must, so that beating it
// means something: a MyApp gets its finalizer, Deployment, Service and observed generation.
func TestSeedReconcilerConverges(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "myapp-")
	_, stop := startPeerManager(t, ns, 1)
	defer stop()
	app := newMyApp(ns, "peer")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		got := &v1alpha1.MyApp{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
			return err
		}
		if got.Status.ObservedGeneration != got.Generation || !controllerutil.ContainsFinalizer(got, v1alpha1.MyAppFinalizer) {
			return fmt.Errorf("not converged: %+v", got.Status)
		}
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), obj); err != nil {
				return err
			}
			if !metav1.IsControlledBy(obj, got) {
				return fmt.Errorf("%T not controlled by the MyApp", obj)
			}
		}
		return nil
	})
}
