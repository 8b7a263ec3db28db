package verticalscaler_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/controllers/verticalscaler"
	"github.com/example/switchboard/indexers"
	"github.com/example/switchboard/internal/testenv"
)

// BenchmarkMapFunction measures the map function from a Deployment to its VerticalScaler with
// 100, 1,000 and 10,000 VerticalScalers in the namespace, on a real informer cache (filled from
// envtest) with the shared index: the time per event should not grow with the number of objects.
//
//	go test ./controllers/verticalscaler/ -run '^$' -bench BenchmarkMapFunction -benchtime 20000x
func BenchmarkMapFunction(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("scalers=%d", n), func(b *testing.B) {
			ctx := context.Background()
			ns := env.Namespace(b, "bench-")
			createScalers(b, ns, n)
			mapDeployment := verticalscaler.VerticalScalersOf(verticalscaler.TemplateKinds[0])(cachedClient(b, ns, n))
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("d-%d", n/2)}}
			b.ReportAllocs()
			for b.Loop() {
				if got := mapDeployment(ctx, d); len(got) != 1 {
					b.Fatalf("mapped to %d VerticalScalers, want 1", len(got))
				}
			}
		})
	}
}

// createScalers creates n VerticalScalers vs-i naming Deployments d-i.
func createScalers(b *testing.B, ns string, n int) {
	b.Helper()
	createMany(b, n, func(i int) client.Object {
		return &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("vs-%d", i)},
			Spec: v1alpha1.VerticalScalerSpec{DeploymentName: fmt.Sprintf("d-%d", i)}}
	})
}

// createMany creates the n objects newObject makes, with a few writers at once.
func createMany(b testing.TB, n int, newObject func(i int) client.Object) {
	b.Helper()
	inParallel(b, n, func(i int) error { return env.Client.Create(context.Background(), newObject(i)) })
}

// inParallel calls do(0..n-1) with a few callers at once, and fails b on the first error.
func inParallel(b testing.TB, n int, do func(i int) error) {
	b.Helper()
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// cachedClient returns a client that reads from an informer cache with the shared index
// registered, once the cache holds the n VerticalScalers of namespace ns.
func cachedClient(b *testing.B, ns string, n int) client.Client {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	scheme := controllers.NewScheme()
	// Cluster-wide, as the manager's cache is without --watch-namespaces: it also holds the
	// VerticalScalers of the smaller runs before this one.
	c, err := cache.New(env.Config, cache.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	if err := indexers.Register(ctx, c, indexers.VerticalScalerByTarget); err != nil {
		b.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("cache did not sync")
	}
	var list v1alpha1.VerticalScalerList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != n {
		b.Fatalf("cache holds %d VerticalScalers (%v), want %d", len(list.Items), err, n)
	}
	cl, err := client.New(env.Config, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// BenchmarkOneUpdateReconcilesOne creates N VerticalScalers and the N Deployments they name
// (N=10,000, or 100 under SWITCHBOARD_BENCH_SMOKE; SWITCHBOARD_BENCH_SCALERS overrides),
// lets the controller settle, then changes the resources of one Deployment: exactly one
// VerticalScaler must be reconciled, whatever N.
func BenchmarkOneUpdateReconcilesOne(b *testing.B) {
	n := 10000
	if os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" {
		n = 100
	}
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_BENCH_SCALERS")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	ns := env.Namespace(b, "bench-one-")
	createScalers(b, ns, n)
	createDeployments(b, ns, n)
	// The reconcile counter is the process's: it includes what earlier runs (-count) did.
	before, err := testenv.ReconcileTotal(verticalscaler.ControllerName)
	if err != nil {
		b.Fatal(err)
	}
	env.StartManager(b, "--controllers=verticalscaler", "--resync-interval=0", "--usage-source=off",
		"--concurrency=verticalscaler=8", "--watch-namespaces="+ns)
	// Settled: the count unchanged over two readings two seconds apart, nothing queued, no
	// worker busy.
	quiet := testenv.Quiet{Controllers: []string{verticalscaler.ControllerName}, Idle: true,
		For: 2 * time.Second, Interval: 2 * time.Second, Timeout: 15 * time.Minute}
	first := quiet
	first.Since, first.AtLeast = before, n
	settled := testenv.WaitQuiet(b, testenv.InProcess, first)

	for range b.N {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("d-%d", n/2)}, d); err != nil {
			b.Fatal(err)
		}
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(fmt.Sprintf("%dm", 100+b.N))}
		if err := env.Client.Patch(ctx, d, patch); err != nil {
			b.Fatal(err)
		}
		after := testenv.WaitQuiet(b, testenv.InProcess, quiet)
		b.ReportMetric(after-settled, "reconciles/update")
		if after-settled != 1 {
			b.Errorf("one Deployment update among %d caused %v reconciles, want 1", n, after-settled)
		}
		settled = after
	}
	b.ReportMetric(float64(n), "scalers")
}

// createDeployments creates n Deployments d-i with one container.
func createDeployments(b *testing.B, ns string, n int) {
	b.Helper()
	createMany(b, n, func(i int) client.Object {
		labels := map[string]string{"app": fmt.Sprintf("d-%d", i)}
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("d-%d", i)},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}}},
				},
			},
		}
	})
}

// namedPodOnly keeps of a Pod its name, namespace and resourceVersion: the floor of what an
// informer costs per object, whatever it keeps of it.
func namedPodOnly(obj any) (any, error) {
	p := obj.(*corev1.Pod)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, ResourceVersion: p.ResourceVersion}}, nil
}

// BenchmarkPodCacheMemory measures what the verticalscaler's Pod cache costs per Pod: the heap an
// informer cache of SWITCHBOARD_BENCH_PODS Pods (2,000; 100 under SWITCHBOARD_BENCH_SMOKE) of the
// shape a busy cluster has (testenv.BusyPod, running) holds after a GC, trimmed by TrimPod as the
// manager caches them when the verticalscaler alone watches Pods, and with only their managed
// fields stripped as it would cache them otherwise; and the floor, an empty Pod of the same
// name. What the whole manager process needs per Pod is test/scale's
// BenchmarkScaleVerticalScalerPods.
//
//	go test ./controllers/verticalscaler/ -run '^$' -bench PodCacheMemory -benchtime 1x
func BenchmarkPodCacheMemory(b *testing.B) {
	ctx := context.Background()
	n := testenv.BenchSetting("SWITCHBOARD_BENCH_PODS", 2000)
	for b.Loop() {
		ns := env.Namespace(b, "bench-pods-")
		inParallel(b, n, func(i int) error { return testenv.CreatePod(ctx, env.Client, testenv.BusyPod(ns, i)) })
		for _, mode := range []struct {
			name      string
			transform toolscache.TransformFunc
		}{{"floor", namedPodOnly}, {"trimmed", verticalscaler.TrimPod}, {"whole", cache.TransformStripManagedFields()}} {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			cacheCtx, cancel := context.WithCancel(ctx)
			c, err := cache.New(env.Config, cache.Options{Scheme: controllers.NewScheme(), DefaultNamespaces: map[string]cache.Config{ns: {}},
				ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: mode.transform}}})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.GetInformer(cacheCtx, &corev1.Pod{}); err != nil {
				b.Fatal(err)
			}
			go func() { _ = c.Start(cacheCtx) }()
			if !c.WaitForCacheSync(cacheCtx) {
				b.Fatal("cache did not sync")
			}
			var pods corev1.PodList
			if err := c.List(cacheCtx, &pods); err != nil || len(pods.Items) != n {
				b.Fatalf("cache holds %d Pods (%v), want %d", len(pods.Items), err, n)
			}
			pods = corev1.PodList{}
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n)/1024, "KiB/pod-"+mode.name)
			b.ReportMetric(float64(n), "pods")
			runtime.KeepAlive(c)
			cancel()
			// Let the informer's goroutines end, so that the next cache is measured alone.
			time.Sleep(time.Second)
		}
	}
}
