package myapp_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/testenv"
)

// benchWorkers is both the controller's concurrency and the floor's parallel workers.
const benchWorkers = 4

// objectResources are the resources a MyApp controller must write; events are counted apart.
var objectResources = []string{"myapps", "myapps/status", "deployments", "services"}

// BenchmarkConvergence converges N MyApps with the controller and, in the same run, measures
// the floor: a plain client with as many workers doing only the writes any MyApp controller must
// make. It reports the medians of several rounds, their ratio, the API writes per MyApp counted
// by the API server, and the writes of a steady state that includes periodic resyncs of every
// MyApp.
func BenchmarkConvergence(b *testing.B) {
	n := testenv.BenchSetting("SWITCHBOARD_BENCH_MYAPPS", 1000)
	rounds := testenv.BenchSetting("SWITCHBOARD_BENCH_ROUNDS", 1)
	steady := time.Duration(testenv.BenchSetting("SWITCHBOARD_BENCH_STEADY", 60)) * time.Second
	ctx := context.Background()
	b.Logf("N=%d MyApps, %d rounds, %d workers, client QPS %g burst %d for both, steady window %s; envtest service-cluster-ip-range 10.96.0.0/16 (the default /24 holds about 250 Services)",
		n, rounds, benchWorkers, env.Config.QPS, env.Config.Burst, steady)

	// Warm up both paths (the API server's first writes of a kind and namespace are slower),
	// so that neither pays it in the measured rounds.
	runFloor(b, ctx, 20)
	runController(b, ctx, 20, false, 0)

	var floors, controlled, ratios []float64
	var objectWrites, eventWrites float64
	for range b.N {
		for round := range rounds {
			floor := runFloor(b, ctx, n)
			took, writes, events := runController(b, ctx, n, round == rounds-1, steady)
			floors = append(floors, floor.Seconds())
			controlled = append(controlled, took.Seconds())
			ratios = append(ratios, took.Seconds()/floor.Seconds())
			objectWrites, eventWrites = writes, events
		}
	}
	b.ReportMetric(float64(n), "myapps")
	b.ReportMetric(median(floors), "floor-s")
	b.ReportMetric(median(controlled), "controller-s")
	b.ReportMetric(median(ratios), "x-floor")
	b.ReportMetric(objectWrites/float64(n), "writes/myapp")
	b.ReportMetric(eventWrites/float64(n), "events/myapp")
}

// runFloor does, with a plain client and benchWorkers workers, only the writes any MyApp
// controller must make for each of n MyApps, and returns the wall time.
func runFloor(b *testing.B, ctx context.Context, n int) time.Duration {
	ns := benchNamespace(b, "floor-")
	start := time.Now()
	parallel(b, n, func(i int) error {
		app := benchMyApp(ns, i)
		if err := env.Client.Create(ctx, app); err != nil {
			return err
		}
		patch := client.MergeFrom(app.DeepCopy())
		controllerutil.AddFinalizer(app, v1alpha1.MyAppFinalizer)
		if err := env.Client.Patch(ctx, app, patch); err != nil {
			return err
		}
		owner := metav1.OwnerReference{APIVersion: "app.example.com/v1alpha1", Kind: "MyApp", Name: app.Name, UID: app.UID, Controller: new(true)}
		labels := map[string]string{"app.kubernetes.io/instance": app.Name}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app.Name, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: appsv1.DeploymentSpec{
				Replicas: new(app.Spec.Replicas),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: app.Spec.Image,
						Ports: []corev1.ContainerPort{{ContainerPort: app.Spec.Port}}}}},
				},
			},
		}
		if err := env.Client.Create(ctx, d); err != nil {
			return err
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app.Name, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: app.Spec.Port}}},
		}
		if err := env.Client.Create(ctx, svc); err != nil {
			return err
		}
		app.Status.ObservedGeneration = app.Generation
		app.Status.Phase = v1alpha1.MyAppPending
		return env.Client.Status().Update(ctx, app)
	})
	return time.Since(start)
}

// runController creates n MyApps with benchWorkers workers while a manager runs the myapp
// controller, and returns the time until every one converged with the controller's object and
// event writes. When checkSteady is set it then restarts the manager (a forced resync of every
// MyApp) with a periodic resync, watches a steady window, and reports what was written.
func runController(b *testing.B, ctx context.Context, n int, checkSteady bool, steady time.Duration) (time.Duration, float64, float64) {
	// The manager watches only this round's namespace: the floor's MyApps are not its business.
	ns := benchNamespace(b, "converge-")
	m := startBenchManager(b, ns, "0")
	before := apiWrites(b, ctx)

	start := time.Now()
	parallel(b, n, func(i int) error { return env.Client.Create(ctx, benchMyApp(ns, i)) })
	waitAllConverged(b, ctx, ns, n)
	took := time.Since(start)

	// Events are sent in the background: let them land before counting.
	time.Sleep(2 * time.Second)
	after := apiWrites(b, ctx)
	writes := sum(after, objectResources) - sum(before, objectResources) - float64(n) // minus our creates
	events := after["events"] - before["events"]
	m.Stop()
	if checkSteady {
		checkSteadyState(b, ctx, ns, n, steady)
	}
	return took, writes, events
}

// checkSteadyState starts a new manager on converged MyApps, which reconciles every one of
// them (a forced resync), with a periodic resync that covers them twice more within the window,
// and reports the writes of the window: there should be none.
func checkSteadyState(b *testing.B, ctx context.Context, ns string, n int, steady time.Duration) {
	before := apiWrites(b, ctx)
	reconciles, _ := testenv.ReconcileTotal("myapp")
	m := startBenchManager(b, ns, (steady / 3).String())
	defer m.Stop()
	time.Sleep(steady)
	resynced, _ := testenv.ReconcileTotal("myapp")
	kinds := append(slices.Clone(objectResources), "events")
	b.ReportMetric(sum(apiWrites(b, ctx), kinds)-sum(before, kinds), "steady-writes")
	b.ReportMetric(resynced-reconciles, "steady-reconciles")
	if resynced-reconciles < float64(2*n) {
		b.Errorf("only %v reconciles in the steady window: the restart and the resync did not cover every MyApp twice", resynced-reconciles)
	}
}

// startBenchManager starts a manager with only myapp, on ns, with the floor's rate limits.
func startBenchManager(b *testing.B, ns, resync string) *testenv.Manager {
	// The same client-side rate limits as the floor's client (envtest's admin config), so that
	// the comparison is of the work done, not of the limits.
	return env.StartManager(b, "--controllers=myapp", fmt.Sprintf("--concurrency=myapp=%d", benchWorkers),
		"--resync-interval="+resync, "--watch-namespaces="+ns,
		fmt.Sprintf("--kube-api-qps=%g", env.Config.QPS), fmt.Sprintf("--kube-api-burst=%d", env.Config.Burst))
}

// waitAllConverged watches the MyApps of ns until n of them report their generation. A watch,
// not polling: listing 1,000 MyApps ten times a second would load the API server the
// controller is measured on, and the floor pays no such cost.
func waitAllConverged(b *testing.B, ctx context.Context, ns string, n int) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	w, err := wc.Watch(ctx, &v1alpha1.MyAppList{}, client.InNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	converged := map[string]bool{}
	for e := range w.ResultChan() {
		app, ok := e.Object.(*v1alpha1.MyApp)
		if !ok {
			continue
		}
		converged[app.Name] = app.Status.ObservedGeneration == app.Generation
		done := 0
		for _, ok := range converged {
			if ok {
				done++
			}
		}
		if done == n {
			return
		}
	}
	b.Fatalf("watch ended before %d MyApps converged: %v", n, ctx.Err())
}

func benchNamespace(b *testing.B, prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	return ns.Name
}

func benchMyApp(ns string, i int) *v1alpha1.MyApp {
	return &v1alpha1.MyApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%05d", i)},
		Spec:       v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080},
	}
}

// parallel runs do(0..n-1) on benchWorkers workers and fails b on the first error.
func parallel(b *testing.B, n int, do func(i int) error) {
	next := make(chan int)
	errs := make(chan error, benchWorkers)
	var wg sync.WaitGroup
	for range benchWorkers {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			b.Fatal(err)
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func apiWrites(b *testing.B, ctx context.Context) map[string]float64 {
	w, err := env.APIWrites(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

func sum(m map[string]float64, keys []string) float64 {
	var s float64
	for _, k := range keys {
		s += m[k]
	}
	return s
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
