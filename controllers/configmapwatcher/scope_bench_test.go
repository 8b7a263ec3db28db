package configmapwatcher_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
	"github.com/example/switchboard/internal/testenv"
)

// BenchmarkAutoReloadAll runs the manager as it ships (a process, the configmapwatcher group
// alone) with --auto-reload-all over SWITCHBOARD_BENCH_AUTO_WORKLOADS workloads (default 500,
// Deployments, StatefulSets and DaemonSets in turn) that never opted in: workload i takes its
// environment from the ConfigMaps auto-i and shared-(i%50); every tenth says
// reloader.stakater.com/auto: "false". Per run:
//   - install: the workloads exist before the manager starts; rolls counted until it is quiet
//     (install-rolls, target 0), and how long it took to record them (install-s);
//   - change: SWITCHBOARD_BENCH_AUTO_CHANGES shared ConfigMaps (default 5, shared-9 first, whose
//     users all opted out) are changed one at a time; each must roll exactly the workloads that
//     use it and did not opt out:
//     wrong-rolls counts a roll of any other workload and a user that did not roll, over all
//     changes (target 0), users-rolled the rolls that were due (for scale).
func BenchmarkAutoReloadAll(b *testing.B) {
	workloads := testenv.BenchSetting("SWITCHBOARD_BENCH_AUTO_WORKLOADS", 500)
	changes := testenv.BenchSetting("SWITCHBOARD_BENCH_AUTO_CHANGES", 5)
	if os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" {
		workloads, changes = 30, 2
	}
	const shared = 50
	bin := testenv.BuildBinary(b, ".")
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config, ""); err != nil {
		b.Fatal(err)
	}
	c := fastClient(b)
	for b.Loop() {
		ns := env.Namespace(b, "cmw-auto-")
		var objs []client.Object
		for j := range min(shared, workloads) {
			objs = append(objs, configMap(ns, fmt.Sprintf("shared-%d", j), map[string]string{"payload": payload()}))
		}
		users := map[int][]string{} // shared ConfigMap -> workloads that roll on it
		for i := range workloads {
			spec := envFrom(fmt.Sprintf("auto-%d", i))
			spec.Containers[0].EnvFrom = append(spec.Containers[0].EnvFrom, envFrom(fmt.Sprintf("shared-%d", i%shared)).Containers[0].EnvFrom...)
			w := benchKinds[i%len(benchKinds)].workload(ns, fmt.Sprintf("w-%d", i), "", spec)
			if i%10 == 9 {
				w.SetAnnotations(map[string]string{v1alpha1.ReloaderAutoAnnotation: "false"})
			} else {
				users[i%shared] = append(users[i%shared], w.GetName())
			}
			objs = append(objs, configMap(ns, fmt.Sprintf("auto-%d", i), map[string]string{"payload": payload()}), w)
		}
		createAll(b, c, objs)
		counters := countBenchRolls(b, ns)

		start := time.Now()
		m := startManagerProcess(b, bin, kubeconfig, []string{"--auto-reload-all"})
		waitBenchRecorded(b, ns, workloads-workloads/10)
		installSeconds := time.Since(start).Seconds()
		waitSettled(b, m, workloads-workloads/10, 10*time.Minute)
		installRolls := takeRolls(b, counters, ns)

		wrong, due := 0, 0
		for n := range changes {
			// The first is shared-9, whose ten users all opted out: nothing may roll.
			j := (9 + n*7) % min(shared, workloads)
			updateConfigMap(b, ns, fmt.Sprintf("shared-%d", j), map[string]string{"payload": payload()})
			waitQuietFor(b, m, 0, 2*time.Second, 2*time.Minute)
			rolled := rolledNames(b, counters, ns)
			want := slices.Sorted(slices.Values(users[j]))
			due += len(want)
			for _, name := range rolled {
				if !slices.Contains(want, name) {
					wrong++
				}
			}
			for _, name := range want {
				if !slices.Contains(rolled, name) {
					wrong++
				}
			}
		}
		if err := m.Stop(30 * time.Second); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(installRolls), "install-rolls")
		b.ReportMetric(installSeconds, "install-s")
		b.ReportMetric(float64(wrong), "wrong-rolls")
		b.ReportMetric(float64(due), "users-rolled")
		deleteAll(b, c, ns)
	}
}

// BenchmarkRateLimit runs the manager as it ships with --max-rollouts-per-minute=L
// (SWITCHBOARD_BENCH_RATE, default 40) over SWITCHBOARD_BENCH_RATE_WORKLOADS Deployments
// (default 100) that all use one ConfigMap, changes it once, and times every roll from a watch
// until all have rolled: the most rolls seen in any 60 s (max-per-minute, target at most L),
// rolls missing (lost, target 0), how long until the last (span-s; about
// ceil(N/L)-1 minutes), and the most rolls of one Deployment (target 1).
func BenchmarkRateLimit(b *testing.B) {
	limit := testenv.BenchSetting("SWITCHBOARD_BENCH_RATE", 40)
	workloads := testenv.BenchSetting("SWITCHBOARD_BENCH_RATE_WORKLOADS", 100)
	if os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" {
		limit, workloads = 3, 5
	}
	bin := testenv.BuildBinary(b, ".")
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config, ""); err != nil {
		b.Fatal(err)
	}
	c := fastClient(b)
	k := kinds[0]
	for b.Loop() {
		ns := env.Namespace(b, "cmw-rate-")
		objs := []client.Object{configMap(ns, "app", map[string]string{"payload": payload()})}
		for i := range workloads {
			objs = append(objs, k.workload(ns, fmt.Sprintf("w-%d", i), "true", envFrom("app")))
		}
		createAll(b, c, objs)
		m := startManagerProcess(b, bin, kubeconfig, []string{fmt.Sprintf("--max-rollouts-per-minute=%d", limit)})
		waitSettled(b, m, workloads, 10*time.Minute)
		times := watchRollTimes(b, k, ns)

		changed := time.Now()
		updateConfigMap(b, ns, "app", map[string]string{"payload": payload()})
		minutes := (workloads + limit - 1) / limit
		deadline := changed.Add(time.Duration(minutes)*rolloutWindowForBench + 2*time.Minute)
		for time.Now().Before(deadline) && len(times.names()) < workloads {
			time.Sleep(time.Second)
		}
		// A few seconds more, to see a roll made twice.
		time.Sleep(5 * time.Second)
		if err := m.Stop(30 * time.Second); err != nil {
			b.Fatal(err)
		}
		at, perWorkload := times.all()
		b.ReportMetric(float64(maxInWindow(at, time.Minute)), "max-per-minute")
		b.ReportMetric(float64(workloads-len(perWorkload)), "missing-rolls")
		most := 0
		for _, n := range perWorkload {
			most = max(most, n)
		}
		b.ReportMetric(float64(most), "max-rolls/workload")
		if len(at) > 0 {
			b.ReportMetric(at[len(at)-1].Sub(changed).Seconds(), "span-s")
		}
		deleteAll(b, c, ns)
	}
}

// rolloutWindowForBench is how long the benchmark expects each batch to wait: the limiter's
// window, a minute and a second.
const rolloutWindowForBench = time.Minute + time.Second

// maxInWindow returns the most times in any window of length w (times sorted).
func maxInWindow(times []time.Time, w time.Duration) int {
	most, first := 0, 0
	for last := range times {
		for times[last].Sub(times[first]) >= w {
			first++
		}
		most = max(most, last-first+1)
	}
	return most
}

// rollTimes records when a watch saw each workload's Pod template change.
type rollTimes struct {
	mu    sync.Mutex
	at    []time.Time
	count map[string]int
}

func (r *rollTimes) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(func(yield func(string) bool) {
		for name := range r.count {
			if !yield(name) {
				return
			}
		}
	})
}

func (r *rollTimes) all() ([]time.Time, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := slices.Clone(r.at)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	counts := map[string]int{}
	for name, n := range r.count {
		counts[name] = n
	}
	return at, counts
}

// watchRollTimes records, from now on, when each workload of kind k in ns rolls (its config
// hash changes), until the benchmark ends.
func watchRollTimes(b *testing.B, k workloadKind, ns string) *rollTimes {
	b.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	hashes := map[string]string{}
	for name, s := range k.states(b, ns) {
		hashes[name] = s.Hash
	}
	list := k.newList()
	if err := wc.List(b.Context(), list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	w, err := wc.Watch(b.Context(), k.newList(), client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	r := &rollTimes{count: map[string]int{}}
	go func() {
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(client.Object)
			if !ok || ev.Type != watch.Modified {
				continue
			}
			hash := podrefs.PodTemplate(obj).Annotations[v1alpha1.ConfigHashAnnotation]
			if hash == hashes[obj.GetName()] {
				continue
			}
			hashes[obj.GetName()] = hash
			r.mu.Lock()
			r.at = append(r.at, time.Now())
			r.count[obj.GetName()]++
			r.mu.Unlock()
		}
	}()
	return r
}

// rolledNames returns the names of the workloads that rolled since the last take, over every
// benchmark kind, sorted.
func rolledNames(b *testing.B, counters []*rollCounter, ns string) []string {
	var out []string
	for i, counter := range counters {
		for name := range counter.take(b, benchKinds[i], ns) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// createAll creates objs with 8 workers; one that exists already is left as it is.
func createAll(b *testing.B, c client.Client, objs []client.Object) {
	b.Helper()
	work := make(chan client.Object)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for obj := range work {
				if err := c.Create(b.Context(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
					select {
					case errs <- fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err):
					default:
					}
				}
			}
		})
	}
	for _, obj := range objs {
		work <- obj
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}
