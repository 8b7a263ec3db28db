package scale_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
	"github.com/example/switchboard/internal/testenv/seedpeer"
)

// myAppResources are what a MyApp controller writes.
var myAppResources = []string{"myapps", "myapps/status", "deployments", "services", "events"}

// myAppWorkers is both sides' number of workers: myapp's default.
const myAppWorkers = 4

// BenchmarkScaleMyApp runs myapp, as shipped (its default flags, the finalizer policy of
// config/default), over SWITCHBOARD_BENCH_SCALE_MYAPPS MyApps (default 1,000, 10,000 and
// 30,000), and the seed-style peer (internal/testenv/seedpeer, as a process of its own, with as
// many workers and controller-runtime's defaults) over as many, each on a fresh control plane,
// the peer first. The MyApps exist before the controller starts; it creates a Deployment and a
// Service for each. Figures per MyApp are with its Deployment and Service. myapp's
// sub-benchmark also reports its memory and time per MyApp as ratios to the peer's (x-seed-*).
func BenchmarkScaleMyApp(b *testing.B) {
	sizes := sizes(b, "SWITCHBOARD_BENCH_SCALE_MYAPPS", []int{1000, 10000, 30000}, []int{20, 40})
	bin := testenv.BuildBinary(b, ".")
	seedBin := testenv.BuildBinary(b, "github.com/example/switchboard/hack/seedmanager")
	var first scenario
	for i, n := range sizes {
		b.Run("myapps="+strconv.Itoa(n), func(b *testing.B) {
			var seed scenario
			b.Run("controller=seed", func(b *testing.B) {
				seed = measure(b, myAppRun(n, []string{seedpeer.ControllerName}, func(cl *cluster, ns string) *testenv.Process {
					return startProcess(b, seedBin, "--kubeconfig="+cl.kubeconfig, "--namespace="+ns, fmt.Sprintf("--workers=%d", myAppWorkers))
				}, nil))
				seed.report(b, "myapp")
			})
			b.Run("controller=myapp", func(b *testing.B) {
				ours := measure(b, myAppRun(n, []string{"myapp"}, func(cl *cluster, ns string) *testenv.Process {
					return cl.startManager(b, bin, "myapp", ns)
				}, func(cl *cluster, ns string) { cl.env.BindFinalizerPolicy(b, ns) }))
				ours.report(b, "myapp")
				if seed.n == 0 {
					b.Logf("no ratios to the seed style: it did not run at %d MyApps", n)
				} else {
					reportAgainstSeed(b, ours, seed)
				}
				reportGrowthOnce(b, "myapp", i, len(sizes)-1, &first, ours)
			})
		})
	}
}

// myAppRun is the run of a MyApp controller over n MyApps.
func myAppRun(n int, controllers []string, start func(cl *cluster, ns string) *testenv.Process, prepare func(cl *cluster, ns string)) run {
	return run{n: n, controllers: controllers, resources: myAppResources, start: start, prepare: prepare,
		objects: func(ns string, i int) []client.Object {
			return []client.Object{&v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%05d", i)},
				Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}}
		},
		watch: func(b *testing.B, cl *cluster, ns string) (<-chan time.Time, func()) {
			return cl.watchConverged(b, func() client.ObjectList { return &v1alpha1.MyAppList{} }, ns, n, func(obj client.Object) bool {
				app := obj.(*v1alpha1.MyApp)
				return app.Status.ObservedGeneration == app.Generation
			})
		}}
}

// reportAgainstSeed reports myapp's time and memory per MyApp as ratios to the peer's.
func reportAgainstSeed(b *testing.B, ours, seed scenario) {
	o, p := ours.mem.perObject(ours.base, ours.n), seed.mem.perObject(seed.base, seed.n)
	b.ReportMetric(ours.converge.Seconds()/seed.converge.Seconds(), "x-seed-time")
	b.ReportMetric(o.heap/p.heap, "x-seed-heap-live/myapp")
	b.ReportMetric(o.rss/p.rss, "x-seed-VmRSS/myapp")
	b.ReportMetric(o.anon/p.anon, "x-seed-RssAnon/myapp")
}
