// Package scale_test holds the scale benchmarks of `make bench-scale`: each controller on
// thousands to tens of thousands of objects, each size on a fresh control plane, the manager
// (and the seed-style peer) as processes of their own as `make build` builds them. They measure
// what the issue of scale asks, not the setup: the objects are created (in parallel, by an
// unthrottled client) before the manager starts, and every figure is taken from the manager's
// start on.
//
// Per size they report the manager's settled memory per object (VmRSS, RssAnon and the Go heap
// live after a GC, of a manager restarted over the converged objects, less the same binary's
// over a single object, so that neither the binary's own pages nor what any work loads once
// count), the time to converge per object from the manager's start, the API server's CPU time
// per object meanwhile, and a restart over the converged objects: the time until every object
// was reconciled once, and what it wrote. The largest size also reports its figures per object
// as ratios to the smallest size's: 1 is linear.
//
// The sizes come from SWITCHBOARD_BENCH_SCALE_* (comma-separated); SWITCHBOARD_BENCH_SMOKE runs
// each scenario at a few dozen objects, as `make bench-smoke` does, so that none rots.
package scale_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/testenv"
)

func TestMain(m *testing.M) {
	// The benchmarks run their managers as processes; envtest logs through controller-runtime.
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// forcedGCPeriod is how often, at the least, the Go runtime collects garbage (its forcegcperiod):
// a process that idles this long has dropped the garbage of its start.
const forcedGCPeriod = 2 * time.Minute

// smoke says whether the benchmarks run at their smoke size (`make bench-smoke`).
func smoke() bool { return os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" }

// sizes reads a comma-separated list of sizes from the environment variable name: full when it
// is unset, tiny under smoke.
func sizes(b *testing.B, name string, full, tiny []int) []int {
	b.Helper()
	if smoke() {
		return tiny
	}
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return full
	}
	var out []int
	for _, field := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want comma-separated positive sizes", name, v)
		}
		out = append(out, n)
	}
	return out
}

// idle is how long a process idles before its memory is read: past the runtime's forced GC, so
// that the garbage of the start is gone.
func idle() time.Duration {
	if smoke() {
		return 2 * time.Second
	}
	return forcedGCPeriod + 10*time.Second
}

// cluster is a fresh control plane of one scenario, with an unthrottled admin client and a
// kubeconfig for the processes.
type cluster struct {
	env        *testenv.Env
	client     client.WithWatch
	kubeconfig string
}

// newCluster starts a fresh control plane with kube-apiserver's apiServerFlags (name=value),
// stopped when the benchmark ends (its etcd data goes with it).
func newCluster(b *testing.B, apiServerFlags ...string) *cluster {
	b.Helper()
	env, err := testenv.Start(apiServerFlags...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := env.Stop(); err != nil {
			b.Errorf("stopping the control plane: %v", err)
		}
	})
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		b.Fatal(err)
	}
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config, ""); err != nil {
		b.Fatal(err)
	}
	return &cluster{env: env, client: c, kubeconfig: kubeconfig}
}

// createWorkers is how many creates are in flight at once: enough to keep the API server busy
// on 2 cores.
const createWorkers = 16

// create creates objects(i) for every i below n, in parallel, and fails on the first error.
func (cl *cluster) create(b *testing.B, n int, objects func(i int) []client.Object) {
	b.Helper()
	cl.each(b, n, func(ctx context.Context, i int) error {
		for _, obj := range objects(i) {
			if err := cl.client.Create(ctx, obj); err != nil {
				return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
			}
		}
		return nil
	})
}

// each calls do for every i below n, createWorkers at once, and fails on the first error.
func (cl *cluster) each(b *testing.B, n int, do func(ctx context.Context, i int) error) {
	b.Helper()
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next := make(chan int)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for range createWorkers {
		wg.Go(func() {
			for i := range next {
				if err := do(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	b.Logf("created %d sets of objects in %s", n, time.Since(start).Round(time.Second))
}

// apiServerCPU is the API server's CPU time so far, in seconds.
func (cl *cluster) apiServerCPU(b *testing.B) float64 {
	b.Helper()
	cpu, err := cl.env.APIServerCPUSeconds(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return cpu
}

// writes is how many writes the API server has served to the given resources.
func (cl *cluster) writes(b *testing.B, resources []string) float64 {
	b.Helper()
	all, err := cl.env.APIWrites(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, r := range resources {
		total += all[r]
	}
	return total
}

// startProcess runs bin with args and its metrics over plain HTTP on a free port.
func startProcess(b *testing.B, bin string, args ...string) *testenv.Process {
	b.Helper()
	metrics := testenv.FreeAddress(b)
	return testenv.RunProcess(b, testenv.Command{Binary: bin, MetricsAddress: metrics,
		Args: append(slices.Clone(args), "--metrics-bind-address="+metrics)})
}

// startManager runs the manager binary on the cluster with controllers over namespace, with
// the default flags otherwise.
func (cl *cluster) startManager(b *testing.B, bin, controllers, namespace string, extra ...string) *testenv.Process {
	b.Helper()
	return startProcess(b, bin, append([]string{"--kubeconfig=" + cl.kubeconfig, "--controllers=" + controllers,
		"--watch-namespaces=" + namespace, "--metrics-secure=false", "--health-probe-bind-address=0", "--zap-log-level=error"}, extra...)...)
}

// memory is a process's settled memory, in bytes: VmRSS and RssAnon from /proc/PID/status,
// and the Go heap live after the last GC (go_gc_heap_live_bytes): the objects it holds, without
// the garbage and the free room of the heap, which RSS counts too.
type memory struct {
	rss, anon, heap float64
}

// perObject is m over n objects less base over one, per object.
func (m memory) perObject(base memory, n int) memory {
	extra := float64(n - 1)
	return memory{rss: (m.rss - base.rss) / extra, anon: (m.anon - base.anon) / extra, heap: (m.heap - base.heap) / extra}
}

// settledMemory waits until p has idled for idle() since since, then reads its memory three
// times, 5 s apart (under smoke, 100 ms), and returns the medians. It fails when no GC ran in p
// while it idled (not settled).
func settledMemory(b *testing.B, p *testenv.Process, since time.Time) memory {
	b.Helper()
	time.Sleep(time.Until(since.Add(idle())))
	gap := 5 * time.Second
	if smoke() {
		gap = 100 * time.Millisecond
	}
	var rss, anon, heap []float64
	for i := range 3 {
		if i > 0 {
			time.Sleep(gap)
		}
		status, err := p.Status("VmRSS", "RssAnon")
		if err != nil {
			b.Fatal(err)
		}
		metrics, err := p.Metrics(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if lastGC := metrics["go_memstats_last_gc_time_seconds"]; !smoke() && lastGC < float64(since.UnixNano())/1e9 {
			b.Fatalf("no GC ran in %s while it idled for %s (last at %.0f s): not settled", filepath.Base(p.Binary), idle(), lastGC)
		}
		rss, anon, heap = append(rss, status["VmRSS"]), append(anon, status["RssAnon"]), append(heap, metrics["go_gc_heap_live_bytes"])
	}
	return memory{rss: testenv.Median(rss), anon: testenv.Median(anon), heap: testenv.Median(heap)}
}

// quietAt waits until the controllers of p are idle (empty queues, no busy worker) with at
// least atLeast reconciles since since, and returns when it first saw that, read every 250 ms.
func quietAt(b *testing.B, p *testenv.Process, names []string, since float64, atLeast int, timeout time.Duration) time.Time {
	b.Helper()
	testenv.WaitQuiet(b, p.ControllerMetrics, testenv.Quiet{Controllers: names, Since: since, AtLeast: atLeast, Idle: true,
		Interval: 250 * time.Millisecond, Timeout: timeout})
	return time.Now()
}

// settle waits until the controllers of p have been quiet for 5 s, or reports that they were
// not within timeout (a peer may keep writing) and goes on.
func settle(b *testing.B, p *testenv.Process, names []string, timeout time.Duration) {
	b.Helper()
	q := testenv.Quiet{Controllers: names, Idle: true, For: 5 * time.Second, Timeout: timeout}
	if _, err := q.Wait(context.Background(), p.ControllerMetrics); err != nil {
		b.Logf("not settled, measuring anyway: %v", err)
	}
}

// restart is what a manager started again over converged objects did.
type restart struct {
	// took is the time from its start until every object was reconciled once.
	took time.Duration
	// writes are the writes to the given resources until it was quiet for 5 s.
	writes float64
}

// restartOver starts a manager with start over n converged objects, after the previous one
// has stopped, and measures it: the time until its controllers names have reconciled n times
// and are idle, and the writes to resources until they have been quiet for 5 s.
func restartOver(b *testing.B, cl *cluster, start func() *testenv.Process, names, resources []string, n int) (restart, *testenv.Process) {
	b.Helper()
	before := cl.writes(b, resources)
	began := time.Now()
	p := start()
	done := quietAt(b, p, names, 0, n, 30*time.Minute)
	settle(b, p, names, 5*time.Minute)
	return restart{took: done.Sub(began), writes: cl.writes(b, resources) - before}, p
}

// load1 is the machine's load average over the last minute.
func load1(b *testing.B) float64 {
	b.Helper()
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	v, err := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// watchConverged returns a channel that receives the time at which n objects of ns (listed
// with newList) were converged, as a watch of this process sees them, and a function that
// stops watching. One watch, as the manager has: polling lists of tens of thousands of objects
// would load the API server the benchmark measures.
func (cl *cluster) watchConverged(b *testing.B, newList func() client.ObjectList, ns string, n int, converged func(client.Object) bool) (<-chan time.Time, func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan time.Time, 1)
	state := map[string]bool{}
	count := 0
	observe := func(obj client.Object) {
		now := converged(obj)
		if now != state[obj.GetName()] {
			if now {
				count++
			} else {
				count--
			}
		}
		state[obj.GetName()] = now
		if count == n {
			select {
			case done <- time.Now():
			default:
			}
		}
	}
	list := newList()
	if err := cl.client.List(ctx, list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	if err := apimeta.EachListItem(list, func(o runtime.Object) error { observe(o.(client.Object)); return nil }); err != nil {
		b.Fatal(err)
	}
	rv := list.GetResourceVersion()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for ctx.Err() == nil {
			w, err := cl.client.Watch(ctx, newList(), client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err != nil {
				if ctx.Err() == nil {
					b.Errorf("watching %T: %v", list, err)
				}
				return
			}
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(client.Object)
				if !ok {
					if ev.Type == watch.Error && ctx.Err() == nil {
						b.Errorf("watching %T: %v", list, ev.Object)
						w.Stop()
						return
					}
					continue
				}
				rv = obj.GetResourceVersion()
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					observe(obj)
				}
			}
		}
	}()
	return done, func() { cancel(); <-stopped }
}

// waitConverged waits for done, at most timeout.
func waitConverged(b *testing.B, done <-chan time.Time, what string, timeout time.Duration) time.Time {
	b.Helper()
	select {
	case at := <-done:
		return at
	case <-time.After(timeout):
		b.Fatalf("%s did not converge within %s", what, timeout)
	}
	return time.Time{}
}

// scenario is what one run of a controller over n objects measured.
type scenario struct {
	n int
	// converge is the time from the manager's start until every object converged.
	converge time.Duration
	// apiServerCPU is the API server's CPU time meanwhile, in seconds, and writes the writes it
	// served to the controller's resources.
	apiServerCPU, writes float64
	// restart is a restart over the converged objects.
	restart restart
	// mem is the settled memory of the restarted manager, base the same binary's over one
	// object.
	mem, base memory
	// load is the load average at the start and the end of the scenario.
	loadStart, loadEnd float64
}

// run is what a scenario runs: a controller (the manager's or the peer's) over n objects on a
// fresh control plane.
type run struct {
	n int
	// controllers name the controllers whose metrics say when they are quiet, and resources
	// the resources their writes are counted under.
	controllers, resources []string
	// start starts the controller over namespace.
	start func(cl *cluster, namespace string) *testenv.Process
	// prepare is called on the fresh control plane with the namespace of the objects: the
	// finalizer policy of the shipped manifests, for example.
	prepare func(cl *cluster, namespace string)
	// objects returns the objects of set i.
	objects func(namespace string, i int) []client.Object
	// watch returns how to wait until every object converged, from a watch started before the
	// controller (watchConverged), or nil to wait until the controllers reconciled n times and
	// are idle.
	watch func(b *testing.B, cl *cluster, namespace string) (<-chan time.Time, func())
}

// measure runs r: creates the objects, starts the controller and measures its convergence,
// stops it and measures a restart over the converged objects, then the restarted controller's
// settled memory. Memory is read from the restarted process: a manager that runs over
// converged objects, without the garbage and the Event cache of a burst of creations.
func measure(b *testing.B, r run) scenario {
	b.Helper()
	s := scenario{n: r.n, loadStart: load1(b)}
	cl := newCluster(b)
	ns, single := cl.env.Namespace(b, "scale-"), cl.env.Namespace(b, "single-")
	if r.prepare != nil {
		r.prepare(cl, ns)
	}
	// The same binary over a namespace of one object, converged, then restarted as the manager
	// is: what it costs before the objects, with what any work loads once (client-go's schemas
	// of the built-in kinds, say).
	cl.create(b, 1, func(int) []client.Object { return r.objects(single, 0) })
	base := r.start(cl, single)
	cl.create(b, r.n, func(i int) []client.Object { return r.objects(ns, i) })
	var done <-chan time.Time
	if r.watch != nil {
		var stopWatching func()
		done, stopWatching = r.watch(b, cl, ns)
		defer stopWatching()
	}

	cpu, writes := cl.apiServerCPU(b), cl.writes(b, r.resources)
	began := time.Now()
	p := r.start(cl, ns)
	if done != nil {
		s.converge = waitConverged(b, done, fmt.Sprintf("%d objects", r.n), 60*time.Minute).Sub(began)
	} else {
		s.converge = quietAt(b, p, r.controllers, 0, r.n, 60*time.Minute).Sub(began)
	}
	s.apiServerCPU, s.writes = cl.apiServerCPU(b)-cpu, cl.writes(b, r.resources)-writes
	settle(b, p, r.controllers, 10*time.Minute)
	stop(b, p)

	s.restart, p = restartOver(b, cl, func() *testenv.Process { return r.start(cl, ns) }, r.controllers, r.resources, r.n)
	// The base goes through the same: restarted over its converged object.
	stop(b, base)
	base = r.start(cl, single)
	quietAt(b, base, r.controllers, 0, 1, 5*time.Minute)
	restarted := time.Now()
	s.base = settledMemory(b, base, restarted)
	s.mem = settledMemory(b, p, restarted)
	stop(b, base)
	stop(b, p)
	s.loadEnd = load1(b)
	return s
}

// reportGrowthOnce keeps the scenario of the first size (i == 0) in first, and reports at the
// last size (i == last) its time and memory per object as ratios to the first's. When the first
// size did not run (SCALE_RUN picked the last alone), there is nothing to divide by, and it says
// so.
func reportGrowthOnce(b *testing.B, unit string, i, last int, first *scenario, s scenario) {
	switch {
	case i == 0:
		*first = s
	case i == last && first.n == 0:
		b.Logf("no ratios to the smallest size: it did not run")
	case i == last:
		reportGrowth(b, unit, *first, s)
	}
}

// report reports s per object (named by unit, "myapp" for example) and in total.
func (s scenario) report(b *testing.B, unit string) {
	per := s.mem.perObject(s.base, s.n)
	b.ReportMetric(float64(s.n), unit+"s")
	b.ReportMetric(s.converge.Seconds(), "converge-s")
	b.ReportMetric(s.converge.Seconds()*1000/float64(s.n), "ms/"+unit)
	b.ReportMetric(s.apiServerCPU*1000/float64(s.n), "apiserver-cpu-ms/"+unit)
	b.ReportMetric(s.writes/float64(s.n), "writes/"+unit)
	b.ReportMetric(per.heap/1024, "heap-live-KiB/"+unit)
	b.ReportMetric(per.rss/1024, "VmRSS-KiB/"+unit)
	b.ReportMetric(per.anon/1024, "RssAnon-KiB/"+unit)
	b.ReportMetric(s.mem.heap/(1<<20), "heap-live-MiB")
	b.ReportMetric(s.mem.rss/(1<<20), "VmRSS-MiB")
	b.ReportMetric(s.base.heap/(1<<20), "single-heap-live-MiB")
	b.ReportMetric(s.base.rss/(1<<20), "single-VmRSS-MiB")
	b.ReportMetric(s.restart.took.Seconds(), "restart-s")
	b.ReportMetric(s.restart.took.Seconds()*1000/float64(s.n), "restart-ms/"+unit)
	b.ReportMetric(s.restart.writes, "restart-writes")
	b.ReportMetric(s.loadStart, "load1-start")
	b.ReportMetric(s.loadEnd, "load1-end")
	b.Logf("%d %ss: converged in %s (%.2f ms/%s), API server %.2f ms/%s, live heap %.2f KiB/%s, VmRSS %.2f KiB/%s (settled %.1f MiB, over one %.1f MiB), restart %s with %v writes; load %.1f to %.1f",
		s.n, unit, s.converge.Round(time.Millisecond), s.converge.Seconds()*1000/float64(s.n), unit, s.apiServerCPU*1000/float64(s.n), unit,
		per.heap/1024, unit, per.rss/1024, unit, s.mem.rss/(1<<20), s.base.rss/(1<<20), s.restart.took.Round(time.Millisecond), s.restart.writes,
		s.loadStart, s.loadEnd)
}

// reportGrowth reports, for the largest size, its time and memory per object as ratios to the
// smallest size's: 1 is linear.
func reportGrowth(b *testing.B, unit string, smallest, largest scenario) {
	small, large := smallest.mem.perObject(smallest.base, smallest.n), largest.mem.perObject(largest.base, largest.n)
	perObject := func(s scenario) float64 { return s.converge.Seconds() / float64(s.n) }
	b.ReportMetric(perObject(largest)/perObject(smallest), "x-ms/"+unit+"-vs-smallest")
	b.ReportMetric(large.heap/small.heap, "x-heap-live/"+unit+"-vs-smallest")
	b.ReportMetric(large.rss/small.rss, "x-VmRSS/"+unit+"-vs-smallest")
	b.ReportMetric(largest.apiServerCPU/float64(largest.n)/(smallest.apiServerCPU/float64(smallest.n)), "x-apiserver-cpu/"+unit+"-vs-smallest")
}

// stop stops p, failing b when it does not stop within 30 s.
func stop(b *testing.B, p *testenv.Process) {
	b.Helper()
	if err := p.Stop(30 * time.Second); err != nil {
		b.Fatal(err)
	}
}
