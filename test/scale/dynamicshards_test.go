package scale_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// shardGroup is the benchmark's --shard-group, its Leases in leaseNamespace.
const (
	shardGroup     = "bench"
	leaseNamespace = "default"
	// rangesAnnotation is where a member's Lease records the hash ranges it acts on, "first-last"
	// in hex, comma separated (controllers/internal/shards).
	rangesAnnotation = "shards.app.example.com/ranges"
)

// peopleNamespaces returns n namespace names as people name them: teams, environments,
// numbered.
func peopleNamespaces(n int) []string {
	teams := []string{"payments", "checkout", "search", "ml", "data", "platform", "web", "mobile-api", "billing", "ci"}
	envs := []string{"dev", "staging", "prod"}
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s-%s-%02d", teams[i%len(teams)], envs[(i/len(teams))%len(envs)], i/(len(teams)*len(envs))))
	}
	return out
}

// unevenCounts spreads total objects over n namespaces as 1/sqrt(rank): a few big namespaces,
// most small, every one with at least one.
func unevenCounts(total, n int) []int {
	sum := 0.0
	for i := range n {
		sum += 1 / math.Sqrt(float64(i+1))
	}
	counts := make([]int, n)
	left := total
	for i := range n {
		counts[i] = max(1, int(float64(total)/math.Sqrt(float64(i+1))/sum))
		left -= counts[i]
	}
	for i := 0; left > 0; i = (i + 1) % n {
		counts[i]++
		left--
	}
	return counts
}

// namespaceHash is the API server's shard hash of a namespace.
func namespaceHash(ns string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(ns))
	return h.Sum64()
}

// claim is a member's hash ranges, [first, last] each.
type claim [][2]uint64

func (c claim) holds(hash uint64) bool {
	for _, r := range c {
		if r[0] <= hash && hash <= r[1] {
			return true
		}
	}
	return false
}

// liveClaims reads the shard group's member Leases renewed within the lease duration, and
// their claims, by Lease name.
func liveClaims(ctx context.Context, c client.Client, leaseDuration time.Duration) (map[string]claim, error) {
	leases := &coordinationv1.LeaseList{}
	if err := c.List(ctx, leases, client.InNamespace(leaseNamespace), client.MatchingLabels{"shards.app.example.com/group": shardGroup}); err != nil {
		return nil, err
	}
	out := map[string]claim{}
	for _, l := range leases.Items {
		if !strings.HasPrefix(l.Name, shardGroup+"-member-") || l.Spec.RenewTime == nil || time.Since(l.Spec.RenewTime.Time) > leaseDuration {
			continue
		}
		var cl claim
		for part := range strings.SplitSeq(l.Annotations[rangesAnnotation], ",") {
			first, last, ok := strings.Cut(part, "-")
			f, err1 := strconv.ParseUint(first, 16, 64)
			t, err2 := strconv.ParseUint(last, 16, 64)
			if ok && err1 == nil && err2 == nil {
				cl = append(cl, [2]uint64{f, t})
			}
		}
		out[l.Name] = cl
	}
	return out, nil
}

// BenchmarkDynamicShards runs myapp as one shard group (--shard-group) of 1, then 2, then 3
// replicas over SWITCHBOARD_BENCH_SCALE_DYNAMIC_MYAPPS MyApps (default 30,000) spread unevenly
// over 300 namespaces named as people name them, on an API server that filters by shard
// (ShardedListAndWatch on). For each replica count it reports each replica's settled heap
// growth over the base's against 1/N of one replica's (heap-vs-share-max: the largest ratio,
// want at most 1.1; the base is a replica of a group of its own that holds one MyApp, started
// afresh beside them, so that what every replica holds whatever its share, as the group's
// machinery, is not counted as share) and the MyApps each holds, by the Leases' claims
// (myapps-max-vs-min, want at most 1.2); the time until the claims cover every namespace again
// when the third replica joins and when one of three is killed; and the pairs of live replicas
// whose claims overlapped, sampled every 100 ms throughout (double-claims, want 0). For the
// watch traffic, every MyApp is annotated once per replica count and each replica's bytes read
// meanwhile (rchar) are compared with 1/N of one replica's (watch-read-vs-share-max).
func BenchmarkDynamicShards(b *testing.B) {
	n := testenv.BenchSetting("SWITCHBOARD_BENCH_SCALE_DYNAMIC_MYAPPS", 30000)
	namespaceCount := 300
	if smoke() {
		n, namespaceCount = 300, 30
	}
	// The manager's default lease timings; shorter at smoke size, where a kill's wait for the
	// Lease to expire would be most of the run.
	leaseDuration, leaseFlags := 15*time.Second, []string(nil)
	if smoke() {
		leaseDuration = 4 * time.Second
		leaseFlags = []string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s"}
	}
	bin := testenv.BuildBinary(b, ".")
	load := load1(b)
	cl := newCluster(b, "feature-gates=ShardedListAndWatch=true")
	names := peopleNamespaces(namespaceCount)
	counts := unevenCounts(n, namespaceCount)
	cl.create(b, namespaceCount, func(i int) []client.Object {
		return []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}}
	})
	// owner[i] is the namespace of MyApp i.
	var owner []string
	for i, c := range counts {
		for range c {
			owner = append(owner, names[i])
		}
	}
	cl.create(b, n, func(i int) []client.Object {
		return []client.Object{&v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: owner[i], Name: fmt.Sprintf("app-%05d", i)},
			Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}}
	})
	single := cl.env.Namespace(b, "single-")
	cl.create(b, 1, func(int) []client.Object {
		return []client.Object{&v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: single, Name: "one"},
			Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}}
	})

	// Overlapping claims of live replicas, sampled throughout.
	var (
		mu      sync.Mutex
		doubles int
	)
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for sampleCtx.Err() == nil {
			claims, err := liveClaims(sampleCtx, cl.client, leaseDuration)
			if err == nil {
				for a, ca := range claims {
					for bb, cb := range claims {
						if a < bb && overlap(ca, cb) {
							mu.Lock()
							doubles++
							mu.Unlock()
							b.Logf("the claims of %s and %s overlap", a, bb)
						}
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	defer func() { stopSampling(); <-sampled }()

	start := func() *testenv.Process {
		return cl.startManager(b, bin, "myapp", "", append([]string{"--shard-group=" + shardGroup, "--leader-election-namespace=" + leaseNamespace}, leaseFlags...)...)
	}
	startBase := func() *testenv.Process {
		return cl.startManager(b, bin, "myapp", single, append([]string{"--shard-group=" + shardGroup + "-base", "--leader-election-namespace=" + leaseNamespace}, leaseFlags...)...)
	}
	// covered waits until the live claims number members and cover every namespace, and
	// returns when, with the MyApps each claim holds.
	covered := func(members int, timeout time.Duration) (time.Time, []int) {
		b.Helper()
		for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			claims, err := liveClaims(context.Background(), cl.client, leaseDuration)
			if err != nil || len(claims) != members {
				continue
			}
			held := make([]int, 0, members)
			total := 0
			for _, c := range claims {
				count := 0
				for i, ns := range names {
					if c.holds(namespaceHash(ns)) {
						count += counts[i]
					}
				}
				held = append(held, count)
				total += count
			}
			if total == n && !slices.Contains(held, 0) {
				return time.Now(), held
			}
		}
		b.Fatalf("the claims of %d replicas did not cover every namespace within %s", members, timeout)
		return time.Time{}, nil
	}

	done, stopWatching := cl.watchConverged(b, func() client.ObjectList { return &v1alpha1.MyAppList{} }, "", n+1, func(obj client.Object) bool {
		app := obj.(*v1alpha1.MyApp)
		return app.Status.ObservedGeneration == app.Generation
	})
	defer stopWatching()
	base := startBase()
	replicas := []*testenv.Process{start()}
	waitConverged(b, done, fmt.Sprintf("%d MyApps", n), 60*time.Minute)

	// annotateEvery sets every MyApp's round annotation to round: no new generation, so
	// nothing is reconciled. The watch traffic of each replica count is measured over it.
	annotateEvery := func(round int) {
		b.Helper()
		cl.each(b, n, func(ctx context.Context, i int) error {
			app := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: owner[i], Name: fmt.Sprintf("app-%05d", i)}}
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"bench.app.example.com/round":"%d"}}}`, round)
			return cl.client.Patch(ctx, app, client.RawPatch(types.MergePatchType, []byte(patch)))
		})
	}
	// Every replica count holds MyApps of the same shape: the annotation (and the managed
	// fields entry it brings) is there before the first count's heap is measured. Added after
	// it, the objects of the later counts were larger than the first's, and their heaps were
	// compared with a share of a smaller one.
	annotateEvery(0)

	// measureFresh starts members replicas and the base afresh over the converged MyApps
	// (without the garbage of the convergence's burst), waits until they split every namespace
	// and are quiet, and reports their settled heap against 1/members of one replica's.
	var growth1, read1 float64
	round := 0
	measureFresh := func(members int) {
		b.Helper()
		for _, p := range append(replicas, base) {
			stop(b, p)
		}
		replicas = nil
		base = startBase()
		for range members {
			replicas = append(replicas, start())
		}
		_, held := covered(members, 10*time.Minute)
		for _, p := range append(replicas, base) {
			settle(b, p, []string{"myapp"}, 30*time.Minute)
		}
		since := time.Now()
		baseMem := settledMemory(b, base, since)
		b.ReportMetric(baseMem.heap/(1<<20), fmt.Sprintf("heap-live-MiB-%d-replicas-base", members))
		worst := 0.0
		for i, p := range replicas {
			mem := settledMemory(b, p, since)
			growth := mem.heap - baseMem.heap
			if members == 1 {
				growth1 = growth
			}
			worst = max(worst, growth/(growth1/float64(members)))
			b.ReportMetric(mem.heap/(1<<20), fmt.Sprintf("heap-live-MiB-%d-replicas-%d", members, i))
		}
		b.ReportMetric(worst, fmt.Sprintf("heap-vs-share-max-%d-replicas", members))
		b.ReportMetric(float64(slices.Max(held))/float64(slices.Min(held)), fmt.Sprintf("myapps-max-vs-min-%d-replicas", members))
		b.Logf("%d replicas: MyApps held %v, the largest heap growth %.2f of its share", members, held, worst)

		// Watch traffic: every MyApp gets a new annotation (no new generation, so nothing is
		// reconciled), and each replica reads what its watches bring.
		before := make([]float64, len(replicas))
		for i, p := range replicas {
			before[i] = bytesRead(b, p)
		}
		round++
		annotateEvery(round)
		// The last events' way to the replicas.
		if smoke() {
			time.Sleep(time.Second)
		} else {
			time.Sleep(10 * time.Second)
		}
		worstRead := 0.0
		for i, p := range replicas {
			read := bytesRead(b, p) - before[i]
			if members == 1 {
				read1 = read
			}
			worstRead = max(worstRead, read/(read1/float64(members)))
			b.ReportMetric(read/(1<<20), fmt.Sprintf("watch-read-MiB-%d-replicas-%d", members, i))
		}
		b.ReportMetric(worstRead, fmt.Sprintf("watch-read-vs-share-max-%d-replicas", members))
	}
	measureFresh(1)
	measureFresh(2)
	joined := time.Now()
	replicas = append(replicas, start())
	at, _ := covered(3, 10*time.Minute)
	b.ReportMetric(at.Sub(joined).Seconds(), "rebalance-s-join")
	measureFresh(3)

	killed := time.Now()
	if err := replicas[1].Kill(); err != nil {
		b.Fatal(err)
	}
	at, held := covered(2, 10*time.Minute)
	b.ReportMetric(at.Sub(killed).Seconds(), "rebalance-s-kill")
	b.Logf("after a kill, the two replicas hold %v MyApps", held)

	mu.Lock()
	b.ReportMetric(float64(doubles), "double-claims")
	mu.Unlock()
	b.ReportMetric(float64(n), "myapps")
	b.ReportMetric(load, "load1-start")
	b.ReportMetric(load1(b), "load1-end")
	for _, p := range []*testenv.Process{replicas[0], replicas[2], base} {
		stop(b, p)
	}
}

// bytesRead is what process p has read so far (rchar of /proc/PID/io): its watch streams
// above all, while nothing else happens.
func bytesRead(b *testing.B, p *testenv.Process) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", p.Pid()))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if value, ok := strings.CutPrefix(line, "rchar: "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				b.Fatal(err)
			}
			return v
		}
	}
	b.Fatalf("no rchar in /proc/%d/io", p.Pid())
	return 0
}

// overlap says whether two claims share a hash.
func overlap(a, b claim) bool {
	for _, x := range a {
		for _, y := range b {
			if max(x[0], y[0]) <= min(x[1], y[1]) {
				return true
			}
		}
	}
	return false
}
