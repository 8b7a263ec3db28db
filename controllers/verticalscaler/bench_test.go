package verticalscaler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/controllers/verticalscaler"
	"github.com/example/switchboard/indexers"
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
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
			if err := env.Client.Create(ctx, ns); err != nil {
				b.Fatal(err)
			}
			createScalers(b, ns.Name, n)
			r := &verticalscaler.Reconciler{Client: cachedClient(b, ns.Name, n)}
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: fmt.Sprintf("d-%d", n/2)}}
			b.ReportAllocs()
			for b.Loop() {
				if got := r.MapDeployment(ctx, d); len(got) != 1 {
					b.Fatalf("mapped to %d VerticalScalers, want 1", len(got))
				}
			}
		})
	}
}

// createScalers creates n VerticalScalers vs-i naming Deployments d-i, with a few writers at once.
func createScalers(b *testing.B, ns string, n int) {
	b.Helper()
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("vs-%d", i)},
					Spec: v1alpha1.VerticalScalerSpec{DeploymentName: fmt.Sprintf("d-%d", i)}}
				if err := env.Client.Create(context.Background(), vs); err != nil {
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
	if err := indexers.Register(ctx, c, indexers.VerticalScalerByDeploymentName); err != nil {
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
