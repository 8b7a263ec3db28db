package configmapwatcher_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/podrefs"
	"github.com/example/switchboard/internal/testenv"
)

// forcedGCPeriod is how often, at the least, the Go runtime collects garbage (its forcegcperiod):
// a manager that idles this long has dropped the garbage of its start.
const forcedGCPeriod = 2 * time.Minute

// benchKinds are the workload kinds the benchmark spreads its workloads over, in turn.
var benchKinds = kinds[:3]

// BenchmarkMemoryAndLatency measures the manager as a separate process (built from main.go as
// `make build` builds it, only the configmapwatcher group enabled, default flags) on the
// envtest control plane: SWITCHBOARD_BENCH_WORKLOADS opted-in workloads (default 500), spread
// over Deployments, StatefulSets and DaemonSets, workload i taking its environment from the
// ConfigMaps cm-i and cm-(2W+i) and the Secret s-i, among 2,000 and then 10,000 ConfigMaps and as
// many Secrets of 2 KiB of data each (a sub-benchmark per size). Per size, in order:
//   - install: the workloads exist before the manager starts; rolls counted until it has
//     recorded every one and is quiet (install-rolls);
//   - memory: VmRSS once it has stayed idle for 5 s (busy-VmRSS), and, settled, after it has
//     idled for forcedGCPeriod more, so that the runtime's periodic GC has dropped the garbage
//     of the start: VmRSS, VmHWM, RssAnon and RssFile from /proc/PID/status and the Go heap in
//     use from its /metrics; hack/memfloor's VmRSS in the same idle period (floor-VmRSS); from
//     the second size on the growth of RssAnon per extra object (ConfigMap or Secret) over the
//     first size (its mean RssAnon when -count repeats it);
//   - creation: 10% more workloads created while it runs, opted in (creation-rolls);
//   - label-only: the labels of a ConfigMap and a Secret of 10% of the workloads changed
//     (label-rolls);
//   - latency: SWITCHBOARD_BENCH_UPDATES single changes (default 50) of one workload's ConfigMap
//     data, each timed from the Update's return to a watch seeing that workload's Pod template
//     change (p50, p90, max);
//   - bursts: SWITCHBOARD_BENCH_BURSTS workloads (default 10) each get their three sources
//     changed one right after the other, as a helm upgrade does; the rolls of each are counted
//     (min- and max-rolls/burst), and the time the three updates took (burst-span-ms, the
//     longest);
//   - restart: the manager stopped and started again with nothing changed; rolls and writes
//     counted until it is quiet (restart-rolls, restart-writes).
//
// A roll is a change of a workload's Pod template, counted from a watch.
func BenchmarkMemoryAndLatency(b *testing.B) {
	workloads := testenv.BenchSetting("SWITCHBOARD_BENCH_WORKLOADS", 500)
	updates := testenv.BenchSetting("SWITCHBOARD_BENCH_UPDATES", 50)
	bursts := testenv.BenchSetting("SWITCHBOARD_BENCH_BURSTS", 10)
	sizes := []int{2000, 10000}
	idle := forcedGCPeriod + 10*time.Second
	if os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" {
		workloads, updates, bursts, sizes, idle = 12, 5, 3, []int{50, 100}, 5*time.Second
	}
	args := strings.Fields(os.Getenv("SWITCHBOARD_BENCH_ARGS")) // e.g. --reload-debounce=20ms
	bin := testenv.BuildBinary(b, ".")
	floorBin := testenv.BuildBinary(b, "github.com/example/switchboard/hack/memfloor")
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config, ""); err != nil {
		b.Fatal(err)
	}
	c := fastClient(b)
	ns := env.Namespace(b, "cmw-bench-")
	// envtest runs no namespace controller: delete the objects themselves, so that the next
	// run (-count) does not find this run's objects in the cache it measures.
	b.Cleanup(func() { deleteAll(b, c, ns) })
	created := 0
	var firstSizeRssAnon []float64 // every run's, under -count
	for _, size := range sizes {
		b.Run(fmt.Sprintf("objects=%d", size), func(b *testing.B) {
			w := min(workloads, size/4) // sources up to cm-(3w+extra), see benchWorkload
			createSources(b, c, ns, created, size)
			created = max(created, size)
			// New workloads at every size, without a record: each manager measured has
			// recorded every one of them, not only the first.
			deleteWorkloads(b, c, ns)
			for i := range w {
				create(b, benchWorkload(ns, i, w))
			}
			counters := countBenchRolls(b, ns)

			m := startManagerProcess(b, bin, kubeconfig, args)
			waitSettled(b, m, w, 10*time.Minute)
			installRolls := takeRolls(b, counters, ns)
			busy, err := m.Status("VmRSS")
			if err != nil {
				b.Fatal(err)
			}
			floor := startFloor(b, floorBin, kubeconfig)
			idleFrom := time.Now()
			time.Sleep(idle)
			mem, err := m.Status("VmRSS", "VmHWM", "RssAnon", "RssFile")
			if err != nil {
				b.Fatal(err)
			}
			floorRSS, err := floor.Status("VmRSS")
			if err != nil {
				b.Fatal(err)
			}
			if err := floor.Kill(); err != nil {
				b.Fatal(err)
			}
			heap, err := m.Metrics(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if lastGC := heap["go_memstats_last_gc_time_seconds"]; idle >= forcedGCPeriod && lastGC < float64(idleFrom.UnixNano())/1e9 {
				b.Fatalf("no GC ran in the manager during %s of idling (last at %.0f s): not settled", idle, lastGC)
			}

			extra := max(1, w/10)
			for i := range extra {
				create(b, benchWorkload(ns, w+i, w))
			}
			waitSettled(b, m, w+extra, 2*time.Minute)
			waitBenchRecorded(b, ns, w+extra)
			creationRolls := takeRolls(b, counters, ns)

			for i := range extra {
				relabel(b, c, &corev1.ConfigMap{}, ns, fmt.Sprintf("cm-%d", i))
				relabel(b, c, &corev1.Secret{}, ns, fmt.Sprintf("s-%d", i))
			}
			waitSettled(b, m, w+extra, 2*time.Minute)
			labelRolls := takeRolls(b, counters, ns)

			latencies := measureLatency(b, c, ns, w, updates)
			waitSettled(b, m, w+extra, 2*time.Minute)
			takeRolls(b, counters, ns)

			burstRolls, span := measureBursts(b, m, c, ns, counters, w, bursts, 5*time.Second)

			if err := m.Stop(30 * time.Second); err != nil {
				b.Fatal(err)
			}
			writes := workloadWrites(b)
			m = startManagerProcess(b, bin, kubeconfig, args)
			waitSettled(b, m, w+extra, 10*time.Minute)
			restartWrites := workloadWrites(b) - writes
			restartRolls := takeRolls(b, counters, ns)

			b.ReportMetric(busy["VmRSS"]/(1<<20), "busy-VmRSS-MiB")
			for _, name := range []string{"VmRSS", "VmHWM", "RssAnon", "RssFile"} {
				b.ReportMetric(mem[name]/(1<<20), name+"-MiB")
			}
			b.ReportMetric(heap["go_memstats_heap_inuse_bytes"]/(1<<20), "heap-inuse-MiB")
			if size == sizes[0] {
				firstSizeRssAnon = append(firstSizeRssAnon, mem["RssAnon"])
			} else if len(firstSizeRssAnon) > 0 {
				perObject := (mem["RssAnon"] - mean(firstSizeRssAnon)) / float64(2*(size-sizes[0])) / 1024
				b.ReportMetric(perObject, "KiB/extra-object")
			}
			b.ReportMetric(floorRSS["VmRSS"]/(1<<20), "floor-VmRSS-MiB")
			b.ReportMetric(percentile(latencies, 0.5), "p50-ms")
			b.ReportMetric(percentile(latencies, 0.9), "p90-ms")
			b.ReportMetric(slices.Max(latencies), "max-ms")
			b.ReportMetric(float64(installRolls), "install-rolls")
			b.ReportMetric(float64(creationRolls), "creation-rolls")
			b.ReportMetric(float64(labelRolls), "label-rolls")
			b.ReportMetric(float64(restartRolls), "restart-rolls")
			b.ReportMetric(restartWrites, "restart-writes")
			b.ReportMetric(float64(slices.Min(burstRolls)), "min-rolls/burst")
			b.ReportMetric(float64(slices.Max(burstRolls)), "max-rolls/burst")
			b.ReportMetric(float64(span.Microseconds())/1000, "burst-span-ms")
		})
	}
}

// BenchmarkDebounce is how --reload-debounce's default was chosen: for each delay (0, 10, 20,
// 30 and 50 ms), a manager process (as `make build` builds it, the configmapwatcher group alone)
// over SWITCHBOARD_BENCH_DEBOUNCE_WORKLOADS workloads (default 30; the sources of
// BenchmarkMemoryAndLatency, three each) measures the latency of single changes (p50, p90,
// max, over SWITCHBOARD_BENCH_UPDATES) and the rolls of bursts of three changes to one
// workload made as fast as a client makes them (SWITCHBOARD_BENCH_BURSTS, default 30): how many
// of them rolled more than once, and the longest time the three updates took.
func BenchmarkDebounce(b *testing.B) {
	workloads := testenv.BenchSetting("SWITCHBOARD_BENCH_DEBOUNCE_WORKLOADS", 30)
	updates := testenv.BenchSetting("SWITCHBOARD_BENCH_UPDATES", 50)
	bursts := testenv.BenchSetting("SWITCHBOARD_BENCH_BURSTS", 30)
	delays := []time.Duration{0, 10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 50 * time.Millisecond}
	if os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" {
		workloads, updates, bursts, delays = 6, 5, 3, []time.Duration{0, 20 * time.Millisecond}
	}
	bin := testenv.BuildBinary(b, ".")
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config, ""); err != nil {
		b.Fatal(err)
	}
	c := fastClient(b)
	ns := env.Namespace(b, "cmw-debounce-")
	b.Cleanup(func() { deleteAll(b, c, ns) })
	createSources(b, c, ns, 0, 3*workloads)
	for i := range workloads {
		create(b, benchWorkload(ns, i, workloads))
	}
	counters := countBenchRolls(b, ns)
	for _, delay := range delays {
		b.Run(fmt.Sprintf("debounce=%s", delay), func(b *testing.B) {
			m := startManagerProcess(b, bin, kubeconfig, []string{fmt.Sprintf("--reload-debounce=%s", delay)})
			waitQuietFor(b, m, workloads, time.Second, 5*time.Minute)
			takeRolls(b, counters, ns)
			latencies := measureLatency(b, c, ns, workloads, updates)
			waitQuietFor(b, m, 0, time.Second, time.Minute)
			takeRolls(b, counters, ns)
			rolls, span := measureBursts(b, m, c, ns, counters, workloads, bursts, 500*time.Millisecond)
			split := 0
			for _, n := range rolls {
				if n > 1 {
					split++
				}
			}
			b.ReportMetric(percentile(latencies, 0.5), "p50-ms")
			b.ReportMetric(percentile(latencies, 0.9), "p90-ms")
			b.ReportMetric(slices.Max(latencies), "max-ms")
			b.ReportMetric(float64(split), "split-bursts")
			b.ReportMetric(float64(len(rolls)), "bursts")
			b.ReportMetric(float64(span.Microseconds())/1000, "burst-span-ms")
			if err := m.Stop(30 * time.Second); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// benchWorkload is workload i of the benchmark: of kind benchKinds[i%3], opted in, taking its
// environment from cm-i, cm-(2w+i) and s-i. No two workloads share a source, the extra ones
// (i from w to 2w) included, so that a change rolls one workload and the counts of a burst are
// that workload's.
func benchWorkload(ns string, i, w int) client.Object {
	spec := envFrom(fmt.Sprintf("cm-%d", i))
	spec.Containers[0].EnvFrom = append(spec.Containers[0].EnvFrom, envFrom(fmt.Sprintf("cm-%d", 2*w+i)).Containers[0].EnvFrom...)
	spec.Containers[0].EnvFrom = append(spec.Containers[0].EnvFrom, secretEnvFrom(fmt.Sprintf("s-%d", i)).Containers[0].EnvFrom...)
	return benchKinds[i%len(benchKinds)].workload(ns, fmt.Sprintf("w-%d", i), "true", spec)
}

// benchSources are the three sources of workload i.
func benchSources(i, w int) []client.Object {
	return []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", 2*w+i)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)}},
	}
}

// countBenchRolls counts the rolls of the benchmark's workloads, per kind.
func countBenchRolls(b *testing.B, ns string) []*rollCounter {
	var counters []*rollCounter
	for _, k := range benchKinds {
		counters = append(counters, k.countRolls(b, ns))
	}
	return counters
}

// takeRolls returns the rolls counted since the last take, over every kind.
func takeRolls(b *testing.B, counters []*rollCounter, ns string) int {
	total := 0
	for i, counter := range counters {
		for _, n := range counter.take(b, benchKinds[i], ns) {
			total += n
		}
	}
	return total
}

// waitSettled waits until the manager process has reconciled at least atLeast workloads, then
// nothing is queued, no worker is busy and the count has not moved for 5 s (far longer than the
// debounce delay a request may still wait out). One reading a second, not faster: every scrape allocates in the manager, and
// scraping as often as a poll loop would makes garbage that the memory figures would include.
func waitSettled(b *testing.B, m *testenv.Process, atLeast int, timeout time.Duration) {
	b.Helper()
	waitQuietFor(b, m, atLeast, 5*time.Second, timeout)
}

// waitQuietFor is waitSettled with another quiet time, read five times over it.
func waitQuietFor(b *testing.B, m *testenv.Process, atLeast int, quiet, timeout time.Duration) {
	b.Helper()
	testenv.WaitQuiet(b, m.ControllerMetrics, testenv.Quiet{Controllers: controllerNames, AtLeast: atLeast, Idle: true,
		For: quiet, Interval: quiet / 5, Timeout: timeout})
}

// waitBenchRecorded waits until the first n workloads carry a record.
func waitBenchRecorded(b *testing.B, ns string, n int) {
	b.Helper()
	testenv.Eventually(b, 2*time.Minute, func() error {
		recorded := 0
		for _, k := range benchKinds {
			for _, s := range k.states(b, ns) {
				if s.Record != "" {
					recorded++
				}
			}
		}
		if recorded < n {
			return fmt.Errorf("%d of %d workloads recorded", recorded, n)
		}
		return nil
	})
}

// relabel changes the labels of a source, and nothing else.
func relabel(b *testing.B, c client.Client, obj client.Object, ns, name string) {
	b.Helper()
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		b.Fatal(err)
	}
	obj.SetLabels(map[string]string{"relabelled": fmt.Sprint(time.Now().UnixNano())})
	if err := c.Update(context.Background(), obj); err != nil {
		b.Fatal(err)
	}
}

// workloadWrites returns how many writes to workloads the API server has served.
func workloadWrites(b *testing.B) float64 {
	b.Helper()
	total := 0.0
	for _, k := range benchKinds {
		total += k.writes(b)
	}
	return total
}

// measureBursts changes the three sources of each of the first n workloads one right after the
// other, as fast as a client can, and returns the rolls of each and the longest time the three
// updates took.
func measureBursts(b *testing.B, m *testenv.Process, c client.Client, ns string, counters []*rollCounter, w, n int, quiet time.Duration) ([]int, time.Duration) {
	b.Helper()
	ctx := context.Background()
	var rolls []int
	var span time.Duration
	for burst := range n {
		i := burst % w
		k := benchKinds[i%len(benchKinds)]
		before := k.states(b, ns)
		sources := benchSources(i, w)
		for _, src := range sources {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: src.GetName()}, src); err != nil {
				b.Fatal(err)
			}
		}
		data := payload()
		start := time.Now()
		for _, src := range sources {
			switch s := src.(type) {
			case *corev1.ConfigMap:
				s.Data = map[string]string{"payload": data}
			case *corev1.Secret:
				s.Data = map[string][]byte{"payload": []byte(data)}
			}
			if err := c.Update(ctx, src); err != nil {
				b.Fatal(err)
			}
		}
		span = max(span, time.Since(start))
		k.waitRolled(b, ns, before, fmt.Sprintf("w-%d", i))
		waitQuietFor(b, m, 0, quiet, 2*time.Minute)
		rolls = append(rolls, takeRolls(b, counters, ns))
	}
	return rolls, span
}

func mean(values []float64) float64 {
	total := 0.0
	for _, v := range values {
		total += v
	}
	return total / float64(len(values))
}

// deleteAll deletes the sources and workloads of ns. A deletion of 10,000 Secrets can outlast
// the API server's request timeout on a busy machine (it resets the stream, having deleted
// some): it is tried again until none is left.
func deleteAll(b *testing.B, c client.Client, ns string) {
	deleteWorkloads(b, c, ns)
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		testenv.Poll(b, 5*time.Minute, time.Second, func() error {
			if err := c.DeleteAllOf(context.Background(), obj, client.InNamespace(ns)); err != nil {
				return fmt.Errorf("deleting the %T objects of %s: %w", obj, ns, err)
			}
			return nil
		})
	}
}

// deleteWorkloads deletes the workloads of ns, of every benchmark kind.
func deleteWorkloads(b *testing.B, c client.Client, ns string) {
	for _, k := range benchKinds {
		if err := c.DeleteAllOf(context.Background(), k.make(ns, "x", corev1.PodSpec{}), client.InNamespace(ns)); err != nil {
			b.Errorf("deleting the %ss of %s: %v", k.name, ns, err)
		}
	}
}

// fastClient is an admin client without client-side rate limiting, to create objects quickly.
func fastClient(b *testing.B) client.Client {
	b.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func payload() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	var sb strings.Builder
	for range 2048 {
		sb.WriteByte(letters[rand.IntN(len(letters))])
	}
	return sb.String()
}

// createSources creates cm-from .. cm-(to-1) and s-from .. s-(to-1), 2 KiB of data each.
func createSources(b *testing.B, c client.Client, ns string, from, to int) {
	b.Helper()
	var objs []client.Object
	for i := from; i < to; i++ {
		objs = append(objs, configMap(ns, fmt.Sprintf("cm-%d", i), map[string]string{"payload": payload()}),
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("s-%d", i)},
				Data: map[string][]byte{"payload": []byte(payload())}})
	}
	createAll(b, c, objs)
}

// startManagerProcess runs the manager as it ships, as its own process, with only the
// configmapwatcher and its metrics served over plain HTTP on a free port.
func startManagerProcess(b *testing.B, bin, kubeconfig string, extra []string) *testenv.Process {
	b.Helper()
	addr := testenv.FreeAddress(b)
	return testenv.RunProcess(b, testenv.Command{Binary: bin, MetricsAddress: addr, Args: append([]string{
		"--kubeconfig=" + kubeconfig, "--controllers=configmapwatcher",
		"--metrics-bind-address=" + addr, "--metrics-secure=false", "--health-probe-bind-address=0", "--zap-log-level=error"}, extra...)})
}

// startFloor starts hack/memfloor (a controller-runtime manager that caches what the
// configmapwatcher caches and does nothing else) and returns once it has synced.
func startFloor(b *testing.B, bin, kubeconfig string) *testenv.Process {
	b.Helper()
	floor := testenv.RunProcess(b, testenv.Command{Binary: bin, Args: []string{"--kubeconfig=" + kubeconfig}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := floor.WaitOutput(ctx, "synced\n"); err != nil {
		b.Fatalf("memfloor did not sync: %v", err)
	}
	return floor
}

// measureLatency changes the data of one ConfigMap of a workload at a time, updates times in
// turn over the first w workloads, and returns, in milliseconds, how long after each Update
// returned a watch saw that workload's Pod template change.
func measureLatency(b *testing.B, c client.Client, ns string, w, updates int) []float64 {
	b.Helper()
	ctx := context.Background()
	type seen struct {
		kind, name, hash string
	}
	changes := make(chan seen, 64)
	hashes := map[[2]string]string{}
	for _, k := range benchKinds {
		wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
		if err != nil {
			b.Fatal(err)
		}
		list := k.newList()
		if err := wc.List(ctx, list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		for name, s := range k.states(b, ns) {
			hashes[[2]string{k.name, name}] = s.Hash
		}
		watcher, err := wc.Watch(ctx, k.newList(), client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
		if err != nil {
			b.Fatal(err)
		}
		defer watcher.Stop()
		go func() {
			for ev := range watcher.ResultChan() {
				if obj, ok := ev.Object.(client.Object); ok && ev.Type == watch.Modified {
					changes <- seen{k.name, obj.GetName(), podrefs.PodTemplate(obj).Annotations[v1alpha1.ConfigHashAnnotation]}
				}
			}
		}()
	}
	var latencies []float64
	for n := range updates {
		i := n % w
		k := benchKinds[i%len(benchKinds)]
		name := fmt.Sprintf("w-%d", i)
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}, cm); err != nil {
			b.Fatal(err)
		}
		cm.Data = map[string]string{"payload": payload()}
		if err := c.Update(ctx, cm); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		timeout := time.After(30 * time.Second)
		for done := false; !done; {
			select {
			case s := <-changes:
				key := [2]string{s.kind, s.name}
				if s.hash != hashes[key] {
					hashes[key] = s.hash
					if s.kind == k.name && s.name == name {
						latencies = append(latencies, float64(time.Since(start).Microseconds())/1000)
						done = true
					}
				}
			case <-timeout:
				b.Fatalf("%s %s not rolled 30 s after its ConfigMap changed", k.name, name)
			}
		}
	}
	return latencies
}

// percentile returns the nearest-rank percentile q of values.
func percentile(values []float64, q float64) float64 {
	sorted := slices.Sorted(slices.Values(values))
	rank := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}
