package scale_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// shardKey is the label that assigns an object to a shard: Flux's convention.
const shardKey = "sharding.fluxcd.io/key"

// otherLabel is the label of the unlabelled shard's MyApps, of the same size as shardKey and its
// values: a cached object's labels cost heap (a MyApp with one label takes 0.35 KiB more than one
// with none, measured with encoding/json on the MyApp type), and a shard's objects must cost the
// same as the others' for their memory to be compared.
const otherLabel = "app.example.com/tenant"

// BenchmarkShards runs myapp as three label shards over one namespace, as the sharded overlay
// does: shard1 (sharding.fluxcd.io/key=shard1) over SWITCHBOARD_BENCH_SCALE_SHARD_MYAPPS MyApps
// (default 5,000), shard2 over twice as many, and the shard of unlabelled objects
// (!sharding.fluxcd.io/key; its MyApps carry otherLabel instead) over as many as shard1; each
// shard a manager process with its own selector. Once every MyApp converged, each shard is
// restarted and its settled memory read. Its growth over the same binary's over a single
// object should follow its own objects, not the namespace's: shard2's twice shard1's, the
// unlabelled shard's equal to it (ratios near 2 and 1; shard-memory-deviation is the larger
// relative error of the two).
func BenchmarkShards(b *testing.B) {
	n := testenv.BenchSetting("SWITCHBOARD_BENCH_SCALE_SHARD_MYAPPS", 5000)
	if smoke() {
		n = 20
	}
	bin := testenv.BuildBinary(b, ".")
	load := load1(b)
	cl := newCluster(b)
	ns, single := cl.env.Namespace(b, "shards-"), cl.env.Namespace(b, "single-")
	cl.env.BindFinalizerPolicy(b, ns)
	myApp := func(ns string, i int, shard string) *v1alpha1.MyApp {
		app := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%05d", i)},
			Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}
		if shard != "" {
			app.Labels = map[string]string{shardKey: shard}
		} else {
			app.Labels = map[string]string{otherLabel: "team-a"}
		}
		return app
	}
	cl.create(b, 1, func(int) []client.Object { return []client.Object{myApp(single, 0, "")} })
	base := cl.startManager(b, bin, "myapp", single)
	// shard1: [0, n), shard2: [n, 3n), unlabelled: [3n, 4n).
	shards := []struct {
		name, selector string
		objects        int
	}{{"shard1", shardKey + "=shard1", n}, {"shard2", shardKey + "=shard2", 2 * n}, {"none", "!" + shardKey, n}}
	cl.create(b, 4*n, func(i int) []client.Object {
		switch {
		case i < n:
			return []client.Object{myApp(ns, i, "shard1")}
		case i < 3*n:
			return []client.Object{myApp(ns, i, "shard2")}
		}
		return []client.Object{myApp(ns, i, "")}
	})
	done, stopWatching := cl.watchConverged(b, func() client.ObjectList { return &v1alpha1.MyAppList{} }, ns, 4*n, func(obj client.Object) bool {
		app := obj.(*v1alpha1.MyApp)
		return app.Status.ObservedGeneration == app.Generation
	})
	defer stopWatching()
	start := func(selector string) *testenv.Process {
		return cl.startManager(b, bin, "myapp", ns, "--watch-label-selector="+selector)
	}
	var processes []*testenv.Process
	for _, s := range shards {
		processes = append(processes, start(s.selector))
	}
	waitConverged(b, done, fmt.Sprintf("%d MyApps", 4*n), 60*time.Minute)
	// Restarted over the converged MyApps: settled memory without a burst's garbage.
	for i, s := range shards {
		settle(b, processes[i], []string{"myapp"}, 10*time.Minute)
		stop(b, processes[i])
		processes[i] = start(s.selector)
		quietAt(b, processes[i], []string{"myapp"}, 0, s.objects, 30*time.Minute)
	}
	stop(b, base)
	base = cl.startManager(b, bin, "myapp", single)
	quietAt(b, base, []string{"myapp"}, 0, 1, 5*time.Minute)
	restarted := time.Now()
	baseMem := settledMemory(b, base, restarted)
	stop(b, base)
	growth := map[string]float64{}
	for i, s := range shards {
		mem := settledMemory(b, processes[i], restarted)
		growth[s.name] = mem.heap - baseMem.heap
		b.ReportMetric(mem.perObject(baseMem, s.objects).heap/1024, "heap-live-KiB/myapp-"+s.name)
		b.ReportMetric(mem.rss/(1<<20), "VmRSS-MiB-"+s.name)
		stop(b, processes[i])
	}
	twice, same := growth["shard2"]/growth["shard1"], growth["none"]/growth["shard1"]
	b.ReportMetric(float64(n), "myapps-shard1")
	b.ReportMetric(twice, "x-heap-live-shard2-vs-shard1")
	b.ReportMetric(same, "x-heap-live-none-vs-shard1")
	b.ReportMetric(math.Max(math.Abs(twice/2-1), math.Abs(same-1)), "shard-memory-deviation")
	b.ReportMetric(load, "load1-start")
	b.ReportMetric(load1(b), "load1-end")
	b.Logf("heap growth over one MyApp: shard1 %.1f MiB (%d MyApps), shard2 %.1f MiB (%d), unlabelled %.1f MiB (%d)",
		growth["shard1"]/(1<<20), n, growth["shard2"]/(1<<20), 2*n, growth["none"]/(1<<20), n)
}
