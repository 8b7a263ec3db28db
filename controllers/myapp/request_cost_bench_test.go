package myapp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/myapp"
	"github.com/example/switchboard/internal/testenv"
)

// requestKind is one write a MyApp controller makes to a new MyApp, or one its peer makes.
type requestKind struct {
	name  string
	write func(ctx context.Context, c client.Client, app *v1alpha1.MyApp) error
}

var requestKinds = []requestKind{
	// Without the finalizer admission policy, myapp adds its finalizer with a merge patch
	// guarded by the resourceVersion.
	{"finalizer-patch", func(ctx context.Context, c client.Client, app *v1alpha1.MyApp) error {
		patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(app, v1alpha1.MyAppFinalizer)
		return c.Patch(ctx, app, patch)
	}},
	// The peer sends the whole MyApp.
	{"finalizer-update", func(ctx context.Context, c client.Client, app *v1alpha1.MyApp) error {
		controllerutil.AddFinalizer(app, v1alpha1.MyAppFinalizer)
		return c.Update(ctx, app)
	}},
	// myapp's first status: its Ready condition (Available and Progressing come once the
	// Deployment reports them), phase and observed generation, as a merge patch of the status
	// subresource.
	{"status-patch", func(ctx context.Context, c client.Client, app *v1alpha1.MyApp) error {
		before := app.DeepCopy()
		created := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name, Generation: 1}}
		app.Status = myapp.CreatedStatus(app, created)
		return c.Status().Patch(ctx, app, client.MergeFrom(before))
	}},
	// The peer's status: phase, ready replicas and observed generation, no conditions.
	{"status-update", func(ctx context.Context, c client.Client, app *v1alpha1.MyApp) error {
		app.Status.Phase = v1alpha1.MyAppPending
		app.Status.ObservedGeneration = app.Generation
		return c.Status().Update(ctx, app)
	}},
	// The Event myapp records when it created the Deployment and the Service.
	{"event", func(ctx context.Context, c client.Client, app *v1alpha1.MyApp) error {
		now := time.Now()
		return c.Create(ctx, &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Namespace: app.Namespace, Name: fmt.Sprintf("%s.%x", app.Name, now.UnixNano())},
			EventTime:           metav1.NewMicroTime(now),
			ReportingController: myapp.ControllerName,
			ReportingInstance:   "benchmark",
			Action:              "Apply",
			Reason:              v1alpha1.ReasonCreated,
			Regarding:           corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MyApp", Namespace: app.Namespace, Name: app.Name, UID: app.UID},
			Note:                "Created Deployment, created Service for MyApp " + app.Name,
			Type:                corev1.EventTypeNormal,
		})
	}},
}

// BenchmarkRequestCost measures the API server's CPU per request for the writes in which myapp
// and its peer in BenchmarkConvergence differ (the creates of the MyApp, its Deployment and its
// Service are the same on both sides): the finalizer as myapp adds it and as the peer does, the
// status as each writes it first, and myapp's Event. Each kind writes to its own new MyApps, the
// kinds take turns in a rotated order in each of several rounds (the API server's cost drifts
// over a run), and each reports its median over the rounds.
func BenchmarkRequestCost(b *testing.B) {
	ctx := context.Background()
	perRound := testenv.BenchSetting("SWITCHBOARD_BENCH_WRITES", 200)
	rounds := testenv.BenchSetting("SWITCHBOARD_BENCH_WRITE_ROUNDS", 3)
	c := env.UnthrottledClient(b)
	cpu := map[string][]float64{}
	for range b.N {
		for round := range rounds {
			for _, kind := range testenv.Rotated(requestKinds, round) {
				ns := env.Namespace(b, "cost-")
				apps := make([]*v1alpha1.MyApp, perRound)
				for i := range apps {
					apps[i] = benchMyApp(ns, i)
					if err := c.Create(ctx, apps[i]); err != nil {
						b.Fatal(err)
					}
				}
				perCall, err := env.APIServerCPUPerCall(ctx, perRound, func(i int) error { return kind.write(ctx, c, apps[i]) })
				if err != nil {
					b.Fatalf("%s: %v", kind.name, err)
				}
				cpu[kind.name] = append(cpu[kind.name], perCall)
				clearNamespace(b, ctx, ns)
			}
		}
	}
	for _, kind := range requestKinds {
		b.ReportMetric(testenv.Median(cpu[kind.name]), kind.name+"-apiserver-cpu-ms/op")
	}
}
