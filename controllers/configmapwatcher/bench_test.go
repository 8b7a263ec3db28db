package configmapwatcher_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/controllers/configmapwatcher"
	"github.com/example/switchboard/internal/testenv"
)

// forcedGCPeriod is how often, at the least, the Go runtime collects garbage (its forcegcperiod):
// a manager that idles this long has dropped the garbage of its start.
const forcedGCPeriod = 2 * time.Minute

// BenchmarkMemoryAndLatency measures the manager as a separate process (built from main.go as
// `make build` builds it, only the configmapwatcher enabled) on the envtest control plane:
// SWITCHBOARD_BENCH_DEPLOYMENTS opted-in Deployments (default 500), each using one ConfigMap,
// among 2,000 and then 10,000 ConfigMaps of 2 KiB of data each (a sub-benchmark per size).
// Per size it reports the manager's VmRSS once it has reconciled every Deployment and stayed
// idle for 5 s (busy-VmRSS), and, settled, after it has idled for forcedGCPeriod more, so that
// the runtime's periodic GC has dropped the garbage of the start: VmRSS, VmHWM, RssAnon and
// RssFile from /proc/PID/status and the Go heap in use from its /metrics. In the same idle
// period it runs hack/memfloor, a controller-runtime manager that caches the same objects
// (Deployments) and does nothing else, and reports its VmRSS (floor-VmRSS). Then it measures
// the latency from a ConfigMap update returning to a watch seeing the Deployment's Pod template
// change, over SWITCHBOARD_BENCH_UPDATES updates (default 50). From the second size on it also
// reports the growth of RssAnon per extra ConfigMap over the first size (its mean RssAnon when
// -count repeats it).
func BenchmarkMemoryAndLatency(b *testing.B) {
	deployments := testenv.BenchSetting("SWITCHBOARD_BENCH_DEPLOYMENTS", 500)
	updates := testenv.BenchSetting("SWITCHBOARD_BENCH_UPDATES", 50)
	sizes := []int{2000, 10000}
	idle := forcedGCPeriod + 10*time.Second
	if os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" {
		deployments, updates, sizes, idle = 20, 5, []int{50, 100}, 5*time.Second
	}
	bin := testenv.BuildBinary(b, ".")
	floorBin := testenv.BuildBinary(b, "github.com/example/switchboard/hack/memfloor")
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config, ""); err != nil {
		b.Fatal(err)
	}
	c := fastClient(b)
	ns := env.Namespace(b, "cmw-")
	// envtest runs no namespace controller: delete the objects themselves, so that the next
	// run (-count) does not find this run's objects in the cache it measures.
	b.Cleanup(func() { deleteAll(b, c, ns) })
	created := 0
	var firstSizeRssAnon []float64 // every run's, under -count
	for _, size := range sizes {
		b.Run(fmt.Sprintf("configmaps=%d", size), func(b *testing.B) {
			createConfigMaps(b, c, ns, created, size)
			created = max(created, size)
			// New Deployments at every size, without a config hash: each manager measured
			// has rolled every one of them, not only the first.
			if err := c.DeleteAllOf(context.Background(), &appsv1.Deployment{}, client.InNamespace(ns)); err != nil {
				b.Fatal(err)
			}
			for i := range min(deployments, size) {
				d := deployment(ns, fmt.Sprintf("d-%d", i), "true", envFrom(fmt.Sprintf("cm-%d", i)))
				if err := c.Create(context.Background(), d); err != nil {
					b.Fatal(err)
				}
			}
			m := startManagerProcess(b, bin, kubeconfig)
			// Settled: every Deployment reconciled, then nothing queued, no worker busy and
			// the count unchanged for 5 s. One reading a second, not faster: every scrape
			// allocates in the manager, and scraping as often as a poll loop would makes
			// garbage that the memory figures would then include.
			testenv.WaitQuiet(b, m.ControllerMetrics, testenv.Quiet{
				Controllers: []string{configmapwatcher.ControllerName}, AtLeast: min(deployments, size), Idle: true,
				For: 5 * time.Second, Interval: time.Second, Timeout: 10 * time.Minute})
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
			latencies := measureLatency(b, c, ns, min(deployments, size), updates)
			b.ReportMetric(busy["VmRSS"]/(1<<20), "busy-VmRSS-MiB")
			for _, name := range []string{"VmRSS", "VmHWM", "RssAnon", "RssFile"} {
				b.ReportMetric(mem[name]/(1<<20), name+"-MiB")
			}
			b.ReportMetric(heap["go_memstats_heap_inuse_bytes"]/(1<<20), "heap-inuse-MiB")
			if size == sizes[0] {
				firstSizeRssAnon = append(firstSizeRssAnon, mem["RssAnon"])
			} else if len(firstSizeRssAnon) > 0 {
				perConfigMap := (mem["RssAnon"] - mean(firstSizeRssAnon)) / float64(size-sizes[0]) / 1024
				b.ReportMetric(perConfigMap, "KiB/extra-configmap")
			}
			b.ReportMetric(floorRSS["VmRSS"]/(1<<20), "floor-VmRSS-MiB")
			b.ReportMetric(percentile(latencies, 0.5), "p50-ms")
			b.ReportMetric(percentile(latencies, 0.9), "p90-ms")
			b.ReportMetric(slices.Max(latencies), "max-ms")
		})
	}
}

func mean(values []float64) float64 {
	total := 0.0
	for _, v := range values {
		total += v
	}
	return total / float64(len(values))
}

// deleteAll deletes the ConfigMaps and Deployments of ns.
func deleteAll(b *testing.B, c client.Client, ns string) {
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}} {
		if err := c.DeleteAllOf(context.Background(), obj, client.InNamespace(ns)); err != nil {
			b.Errorf("deleting the %T objects of %s: %v", obj, ns, err)
		}
	}
}

// fastClient is an admin client without client-side rate limiting, to create objects quickly.
func fastClient(b *testing.B) client.Client {
	b.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
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

// createConfigMaps creates cm-from .. cm-(to-1) with 8 workers.
func createConfigMaps(b *testing.B, c client.Client, ns string, from, to int) {
	b.Helper()
	work := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				cm := configMap(ns, fmt.Sprintf("cm-%d", i), map[string]string{"payload": payload()})
				if err := c.Create(context.Background(), cm); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- err
					return
				}
			}
		})
	}
	for i := from; i < to; i++ {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			b.Fatal(err)
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// startManagerProcess runs the manager as it ships, as its own process, with only the
// configmapwatcher and its metrics served over plain HTTP on a free port.
func startManagerProcess(b *testing.B, bin, kubeconfig string) *testenv.Process {
	b.Helper()
	addr := testenv.FreeAddress(b)
	return testenv.RunProcess(b, testenv.Command{Binary: bin, MetricsAddress: addr, Args: []string{
		"--kubeconfig=" + kubeconfig, "--controllers=configmapwatcher",
		"--metrics-bind-address=" + addr, "--metrics-secure=false", "--health-probe-bind-address=0", "--zap-log-level=error"}})
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

// measureLatency updates the data of the ConfigMaps of updates Deployments in turn and returns,
// in milliseconds, how long after each Update returned a watch saw that Deployment's config
// hash change.
func measureLatency(b *testing.B, c client.Client, ns string, deployments, updates int) []float64 {
	b.Helper()
	ctx := context.Background()
	cs, err := env.Clientset()
	if err != nil {
		b.Fatal(err)
	}
	list, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	w, err := cs.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	hashes := map[string]string{}
	for _, d := range list.Items {
		hashes[d.Name] = d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]
	}
	var latencies []float64
	for k := range updates {
		i := k % deployments
		name := fmt.Sprintf("d-%d", i)
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
			case e, ok := <-w.ResultChan():
				if !ok {
					b.Fatal("the Deployment watch ended")
				}
				d, isDeployment := e.Object.(*appsv1.Deployment)
				if e.Type != watch.Modified || !isDeployment {
					continue
				}
				hash := d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]
				if hash != hashes[d.Name] {
					hashes[d.Name] = hash
					if d.Name == name {
						latencies = append(latencies, float64(time.Since(start).Microseconds())/1000)
						done = true
					}
				}
			case <-timeout:
				b.Fatalf("Deployment %s not rolled 30 s after its ConfigMap changed", name)
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
