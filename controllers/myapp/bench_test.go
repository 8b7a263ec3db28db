package myapp_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// objectResources are the resources a MyApp controller must write; events are counted apart.
var objectResources = []string{"myapps", "myapps/status", "deployments", "services"}

// BenchmarkConvergence converges N MyApps with the myapp controller, as shipped (the default
// flags but for --concurrency, and the myapp component's finalizer policy, which sets the
// finalizer as a MyApp is created), and, in the same run and from the same starting cluster:
//   - the peer: a MyApp controller written the seed's way (internal/testenv/seedpeer), in this process,
//     with the same number of workers. Users compare myapp with what they would write
//     themselves; x-peer is the ratio;
//   - the plain floor: only the writes any MyApp controller must make, as creates, by a plain
//     client with as many workers.
//
// It runs at 1, 4 and 8 workers: on a 2-core machine the API server is idle enough at 1 and
// saturated at 4 and 8, where the wall times follow its CPU time per MyApp, which each phase
// reports. The API server gets slower as a benchmark process goes on, so a phase that runs
// later pays more: each run makes SWITCHBOARD_BENCH_ROUNDS rounds (2 by default) in which the
// phases take turns, every odd round in the reverse order of the round before, so that every
// phase runs as often before as after each other one. It reports the medians of the rounds,
// the ratios, and for the two controllers the object writes per MyApp until convergence and the
// writes in the window after it, counted by the API server; at 1 worker it then checks a steady
// state that includes periodic resyncs of every MyApp.
func BenchmarkConvergence(b *testing.B) {
	for _, workers := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchConvergence(b, workers, workers == 1) })
	}
}

func benchConvergence(b *testing.B, workers int, checkSteady bool) {
	n := testenv.BenchSetting("SWITCHBOARD_BENCH_MYAPPS", 1000)
	rounds := testenv.BenchSetting("SWITCHBOARD_BENCH_ROUNDS", 2)
	steady := time.Duration(testenv.BenchSetting("SWITCHBOARD_BENCH_STEADY", 60)) * time.Second
	after := time.Duration(testenv.BenchSetting("SWITCHBOARD_BENCH_AFTER", 15)) * time.Second
	ctx := context.Background()
	b.Logf("N=%d MyApps, %d rounds, %d workers, floors' client QPS %g burst %d, controllers unthrottled, window after convergence %s, steady window %s",
		n, rounds, workers, env.Config.QPS, env.Config.Burst, after, steady)

	// Warm up every path (the API server's first writes of a kind and namespace are slower),
	// so that none pays it in the measured rounds.
	runFloor(b, ctx, workers, 20)
	runPeer(b, ctx, workers, 20, 0)
	runController(b, ctx, workers, 20, 0, false, 0)

	var floors, peers, controlled []phase
	var peerRatios, floorRatios []float64
	for range b.N {
		for round := range rounds {
			var plain, peer, converged phase
			phases := []namedPhase{
				{"floor", func() { plain = runFloor(b, ctx, workers, n) }},
				{"peer", func() { peer = runPeer(b, ctx, workers, n, after) }},
				{"controller", func() {
					converged = runController(b, ctx, workers, n, after, checkSteady && round == rounds-1, steady)
				}},
			}
			var order []string
			for _, p := range roundOrder(phases, round) {
				p.run()
				order = append(order, p.name)
			}
			b.Logf("round %d, in the order %v: floor %.1f s, peer %.1f s, controller %.1f s", round, order,
				plain.took.Seconds(), peer.took.Seconds(), converged.took.Seconds())
			floors = append(floors, plain)
			peers = append(peers, peer)
			controlled = append(controlled, converged)
			peerRatios = append(peerRatios, converged.took.Seconds()/peer.took.Seconds())
			floorRatios = append(floorRatios, converged.took.Seconds()/plain.took.Seconds())
		}
	}
	b.ReportMetric(float64(n), "myapps")
	reportPhases(b, "floor-", floors, n)
	reportPhases(b, "peer-", peers, n)
	reportPhases(b, "controller-", controlled, n)
	b.ReportMetric(testenv.Median(peerRatios), "x-peer")
	b.ReportMetric(testenv.Median(floorRatios), "x-floor")
}

// namedPhase is one phase of a round, named for the log.
type namedPhase struct {
	name string
	run  func()
}

// roundOrder is the order of the phases in a round: an even round rotates them by half its
// number, an odd round reverses the round before it.
func roundOrder[T any](phases []T, round int) []T {
	order := testenv.Rotated(phases, round/2)
	if round%2 == 1 {
		slices.Reverse(order)
	}
	return order
}

// phase is what one side of the comparison cost.
type phase struct {
	took time.Duration
	// apiServerCPU is the CPU time the API server used meanwhile, in seconds. When the API
	// server is the bottleneck, the wall times follow it.
	apiServerCPU float64
	// processCPU is the CPU time this process used meanwhile, in seconds: the controller's (in
	// process for both controllers) and the clients', which are the same for every phase. On a
	// 2-core machine it competes with the API server's.
	processCPU float64
	// writes are the object writes until convergence (the MyApps' own creates left out), and
	// writesAfter those in the window after it; events are the Events written until the end of
	// that window. Only the controllers' phases count them: the floors write by construction.
	writes, writesAfter, events float64
}

// timePhase runs do and measures it.
func timePhase(b *testing.B, ctx context.Context, do func()) phase {
	cpu, own := apiServerCPU(b, ctx), processCPU(b)
	start := time.Now()
	do()
	took := time.Since(start)
	return phase{took: took, apiServerCPU: apiServerCPU(b, ctx) - cpu, processCPU: processCPU(b) - own}
}

// processCPU returns the CPU time, user and system, this process has used, in seconds.
func processCPU(b *testing.B) float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatal(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
}

// reportPhases reports the median wall time of phases and the median API server CPU time per
// MyApp and this process's, and for a controller's phases the median writes per MyApp until convergence, writes
// after it and Events per MyApp.
func reportPhases(b *testing.B, prefix string, phases []phase, n int) {
	var took, cpu, own, writes, after, events []float64
	for _, p := range phases {
		took = append(took, p.took.Seconds())
		cpu = append(cpu, p.apiServerCPU*1000/float64(n))
		own = append(own, p.processCPU*1000/float64(n))
		writes = append(writes, p.writes/float64(n))
		after = append(after, p.writesAfter)
		events = append(events, p.events/float64(n))
	}
	b.ReportMetric(testenv.Median(took), prefix+"s")
	b.ReportMetric(testenv.Median(cpu), prefix+"apiserver-cpu-ms/myapp")
	b.ReportMetric(testenv.Median(own), prefix+"process-cpu-ms/myapp")
	if strings.HasPrefix(prefix, "peer") || strings.HasPrefix(prefix, "controller") {
		b.ReportMetric(testenv.Median(writes), prefix+"writes/myapp")
		b.ReportMetric(testenv.Median(after), prefix+"writes-after")
		b.ReportMetric(testenv.Median(events), prefix+"events/myapp")
	}
}

// runFloor does, with a plain client and the given number of workers, for each of n MyApps:
// create it, add the finalizer, create the Deployment and the Service, write status. It returns
// the wall time and the API server's CPU time.
func runFloor(b *testing.B, ctx context.Context, workers, n int) phase {
	ns := env.Namespace(b, "floor-")
	floor := timePhase(b, ctx, func() {
		parallel(b, workers, n, func(i int) error { return floorWrites(ctx, benchMyApp(ns, i)) })
	})
	clearNamespace(b, ctx, ns)
	return floor
}

// floorWrites makes the writes of one MyApp, in the order a controller must make them.
func floorWrites(ctx context.Context, app *v1alpha1.MyApp) error {
	if err := env.Client.Create(ctx, app); err != nil {
		return err
	}
	patch := client.MergeFrom(app.DeepCopy())
	controllerutil.AddFinalizer(app, v1alpha1.MyAppFinalizer)
	if err := env.Client.Patch(ctx, app, patch); err != nil {
		return err
	}
	if err := createOwned(ctx, app); err != nil {
		return err
	}
	app.Status.ObservedGeneration = app.Generation
	app.Status.Phase = v1alpha1.MyAppPending
	return env.Client.Status().Update(ctx, app)
}

// createOwned creates app's Deployment and Service.
func createOwned(ctx context.Context, app *v1alpha1.MyApp) error {
	owner := metav1.OwnerReference{APIVersion: "app.example.com/v1alpha1", Kind: "MyApp", Name: app.Name, UID: app.UID, Controller: new(true)}
	labels := map[string]string{"app.kubernetes.io/instance": app.Name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name, OwnerReferences: []metav1.OwnerReference{owner}},
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
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: app.Spec.Port}}},
	}
	return env.Client.Create(ctx, svc)
}

// runController creates n MyApps with the given number of workers while a manager runs the
// myapp controller with that concurrency, and returns the time until every one converged (with
// the API server's CPU time meanwhile) and the controller's writes until then and in the window
// after. The namespace is bound by the myapp component's finalizer policy, as installing
// Switchboard (config/default) binds every namespace; the peer and the floor run without it,
// as a controller of one's own would. When checkSteady is set it then restarts the manager (a
// forced resync of every MyApp) with a periodic resync, watches a steady window, and reports
// what was written.
func runController(b *testing.B, ctx context.Context, workers, n int, after time.Duration, checkSteady bool, steady time.Duration) phase {
	// The manager watches only this round's namespace: the floor's MyApps are not its business.
	ns := env.Namespace(b, "converge-")
	defer env.BindFinalizerPolicy(b, ns)()
	m := startBenchManager(b, ns, workers, "0")
	converged := converge(b, ctx, m.GetCache(), ns, workers, n, after)
	m.Stop()
	if checkSteady {
		checkSteadyState(b, ctx, ns, workers, n, steady)
	}
	clearNamespace(b, ctx, ns)
	return converged
}

// runPeer is runController for the seed-style peer.
func runPeer(b *testing.B, ctx context.Context, workers, n int, after time.Duration) phase {
	ns := env.Namespace(b, "peer-")
	mgr, stop := startPeerManager(b, ns, workers)
	converged := converge(b, ctx, mgr.GetCache(), ns, workers, n, after)
	stop()
	clearNamespace(b, ctx, ns)
	return converged
}

// converge creates n MyApps in ns with the given number of workers while a controller runs, and
// measures the time until the controller's informer (from) sees every one converged, the API
// server's CPU time meanwhile, the object writes until then, and the writes and Events until the
// end of the window after. A canary MyApp converges first, outside the measure, so that neither
// controller's start-up (cache sync, workers starting) is counted.
func converge(b *testing.B, ctx context.Context, from cache.Informers, ns string, workers, n int, after time.Duration) phase {
	canary, stopCanary := allConverged(b, ctx, from, 1)
	if err := env.Client.Create(ctx, &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "canary"},
		Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}); err != nil {
		b.Fatal(err)
	}
	select {
	case <-canary:
	case <-time.After(time.Minute):
		b.Fatal("the canary MyApp did not converge within a minute: is the controller running?")
	}
	stopCanary()
	// Let the canary's Events land before counting.
	time.Sleep(time.Second)

	done, stopObserving := allConverged(b, ctx, from, n+1)
	before := apiWrites(b, ctx)
	converged := timePhase(b, ctx, func() {
		parallel(b, workers, n, func(i int) error { return env.Client.Create(ctx, benchMyApp(ns, i)) })
		select {
		case <-done:
		case <-time.After(10 * time.Minute):
			b.Fatalf("%d MyApps did not all converge within 10 minutes", n)
		}
	})
	stopObserving()
	atConvergence := apiWrites(b, ctx)
	converged.writes = sum(atConvergence, objectResources) - sum(before, objectResources) - float64(n) // minus our creates
	// Events are sent in the background: the window lets them land too.
	time.Sleep(after)
	end := apiWrites(b, ctx)
	converged.writesAfter = sum(end, objectResources) - sum(atConvergence, objectResources)
	converged.events = end["events"] - before["events"]
	return converged
}

// clearNamespace deletes what a phase made in ns, so that every phase of every round starts
// from the same cluster. Without it each phase pays for the ones before: the
// API server's ClusterIP allocator lists every allocated address on each Service creation, so
// creating a Service costs more the more Services exist, and the controller, measured after the
// floor, paid for the floor's N Services. No manager runs by then, so the MyApps' finalizers
// are removed here.
func clearNamespace(b *testing.B, ctx context.Context, ns string) {
	const clearWorkers = 4
	apps := &v1alpha1.MyAppList{}
	if err := env.Client.List(ctx, apps, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	parallel(b, clearWorkers, len(apps.Items), func(i int) error {
		app := &apps.Items[i]
		patch := client.MergeFrom(app.DeepCopy())
		app.Finalizers = nil
		return env.Client.Patch(ctx, app, patch)
	})
	for _, obj := range []client.Object{&v1alpha1.MyApp{}, &appsv1.Deployment{}, &corev1.Service{}, &eventsv1.Event{}} {
		if err := env.Client.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
			b.Fatalf("clearing %T from %s: %v", obj, ns, err)
		}
	}
}

// checkSteadyState starts a new manager on converged MyApps, which reconciles every one of
// them (a forced resync), with a periodic resync that covers them twice more within the window,
// and reports the writes of the window: there should be none.
func checkSteadyState(b *testing.B, ctx context.Context, ns string, workers, n int, steady time.Duration) {
	before := apiWrites(b, ctx)
	reconciles, _ := testenv.ReconcileTotal("myapp")
	m := startBenchManager(b, ns, workers, (steady / 3).String())
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

// startBenchManager starts a manager with only myapp, on ns, with the given concurrency and
// otherwise the default flags, as a user would run it.
func startBenchManager(b *testing.B, ns string, workers int, resync string) *testenv.Manager {
	return env.StartManager(b, "--controllers=myapp", fmt.Sprintf("--concurrency=myapp=%d", workers),
		"--resync-interval="+resync, "--watch-namespaces="+ns)
}

// allConverged returns a channel closed once n MyApps report their generation, as the
// controller's own MyApp informer (from) sees them, and a function that stops observing. The informer's
// watch is one the controller has anyway: observing convergence adds nothing to the load on the
// API server the controller is measured on, as the floors' observation (their own writes
// returning) adds nothing to theirs. A second watch or polling would.
func allConverged(b *testing.B, ctx context.Context, from cache.Informers, n int) (<-chan struct{}, func()) {
	informer, err := from.GetInformer(ctx, &v1alpha1.MyApp{})
	if err != nil {
		b.Fatal(err)
	}
	var (
		mu        sync.Mutex
		converged = map[string]bool{}
		count     int
		done      = make(chan struct{})
		closeDone sync.Once
	)
	observe := func(obj any) {
		app, ok := obj.(*v1alpha1.MyApp)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		now := app.Status.ObservedGeneration == app.Generation
		if now != converged[app.Name] {
			if now {
				count++
			} else {
				count--
			}
		}
		converged[app.Name] = now
		if count == n {
			closeDone.Do(func() { close(done) })
		}
	}
	registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	})
	if err != nil {
		b.Fatal(err)
	}
	return done, func() {
		if err := informer.RemoveEventHandler(registration); err != nil {
			b.Error(err)
		}
	}
}

func benchMyApp(ns string, i int) *v1alpha1.MyApp {
	return &v1alpha1.MyApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%05d", i)},
		Spec:       v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080},
	}
}

// parallel runs do(0..n-1) on the given number of workers and fails b on the first error.
func parallel(b *testing.B, workers, n int, do func(i int) error) {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
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

func apiServerCPU(b *testing.B, ctx context.Context) float64 {
	cpu, err := env.APIServerCPUSeconds(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return cpu
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
