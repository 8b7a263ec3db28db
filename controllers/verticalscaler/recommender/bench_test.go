package recommender

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
)

// benchSetting reads a positive integer from the environment, else def (or smoke under
// SWITCHBOARD_BENCH_SMOKE). The recommender cannot use testenv.BenchSetting: testenv imports the
// controller table, which imports this package.
func benchSetting(name string, def, smoke int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	if os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" {
		return smoke
	}
	return def
}

// usageWave is the usage of a Pod's container at minute i: a daily wave between 100m and 1 core
// and between 200Mi and 600Mi, with 10% noise, so that the histograms span as many buckets as a
// busy service's would.
func usageWave(rng *rand.Rand, i int) (milliCPU, memoryBytes int64) {
	wave := (1 + math.Sin(2*math.Pi*float64(i)/(24*60))) / 2
	noise := func() float64 { return 1 + 0.1*(2*rng.Float64()-1) }
	return int64((100 + 900*wave) * noise()), int64((200 + 400*wave) * noise() * (1 << 20))
}

// reader makes the reads of Deployments' Pods, as the poller gets them: usage per Pod and
// container. It reuses one read's memory, so that the benchmarks measure the recommender, not
// the making of its input.
type reader struct {
	rng   *rand.Rand
	usage []PodUsage
}

func newReader(seed uint64, pods int, containers []string) *reader {
	r := &reader{rng: rand.New(rand.NewPCG(seed, seed+1)), usage: make([]PodUsage, pods)}
	for i := range r.usage {
		r.usage[i].Containers = map[string]corev1.ResourceList{}
		for _, c := range containers {
			r.usage[i].Containers[c] = corev1.ResourceList{}
		}
	}
	return r
}

// read returns the read of pods at minute i.
func (r *reader) read(pods []corev1.Pod, at time.Time, i int) []PodUsage {
	for j := range r.usage {
		u := &r.usage[j]
		u.Pod, u.Timestamp = pods[j].Name, at
		for _, l := range u.Containers {
			cpu, memory := usageWave(r.rng, i)
			l[corev1.ResourceCPU] = *resource.NewMilliQuantity(cpu, resource.DecimalSI)
			l[corev1.ResourceMemory] = *resource.NewQuantity(memory, resource.BinarySI)
		}
	}
	return r.usage
}

// benchRequests are the requests of the benchmarks' containers in their Pod template; the CPU
// request weighs each CPU sample.
var benchRequests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}

// benchPods returns n Pods of the workload named deployment, each with the containers "app" and
// "proxy" requesting benchRequests.
func benchPods(deployment string, n int) []corev1.Pod {
	pods := make([]corev1.Pod, n)
	for i := range pods {
		pods[i] = corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", deployment, i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "app", Resources: corev1.ResourceRequirements{Requests: benchRequests}},
				{Name: "proxy", Resources: corev1.ResourceRequirements{Requests: benchRequests}},
			}}}
	}
	return pods
}

// benchScaler returns a VerticalScaler of the Deployment name, found by the controller.
func benchScaler(name string) v1alpha1.VerticalScaler {
	return v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name, UID: types.UID(name)},
		Spec:   v1alpha1.VerticalScalerSpec{DeploymentName: name},
		Status: v1alpha1.VerticalScalerStatus{Target: "Deployment.apps/" + name, TargetSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
}

// BenchmarkRecommenderSample measures the recommender's CPU per usage sample: one read of a
// Deployment with 2 Pods of 2 containers (4 samples, each CPU and memory) added to its history
// as the poller adds it, the Pods' statuses checked for OOM kills included; then one Estimate per
// container, as the poller draws for each VerticalScaler. Reported per sample.
//
//	go test ./controllers/verticalscaler/recommender/ -run '^$' -bench RecommenderSample
func BenchmarkRecommenderSample(b *testing.B) {
	containers := []string{"app", "proxy"}
	pods := benchPods("web", 2)
	r := newReader(1, len(pods), containers)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// A day of history first, so that the histograms have their working size.
	h := &targetHistory{containers: map[string]*ContainerHistory{}}
	for i := range 24 * 60 {
		at := t0.Add(time.Duration(i) * time.Minute)
		h.add(r.read(pods, at, i), pods, at)
	}
	samples := len(pods) * len(containers)
	i := 24 * 60
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		at := t0.Add(time.Duration(i) * time.Minute)
		read := r.read(pods, at, i)
		b.StartTimer()
		h.add(read, pods, at)
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*samples), "ns/sample")

	var estimate time.Duration
	const estimates = 1000
	start := time.Now()
	for range estimates {
		for _, c := range h.containers {
			c.Estimate(DefaultPolicy, 2)
		}
	}
	estimate = time.Since(start)
	b.ReportMetric(float64(estimate.Nanoseconds())/float64(estimates*len(h.containers)), "ns/estimate")
}

// BenchmarkRecommenderMemory measures the memory the poller keeps per tracked container: the
// histories of SWITCHBOARD_BENCH_SCALERS Deployments (10,000; 100 under SWITCHBOARD_BENCH_SMOKE),
// one VerticalScaler each, of 2 containers and 2 Pods, after SWITCHBOARD_BENCH_HOURS (24) of
// one read a minute, measured as live heap after a GC, divided by the containers. It includes
// the histograms, the per-Pod state, the maps that hold them, and what the poller remembers of
// each VerticalScaler's last checkpoint.
//
//	go test ./controllers/verticalscaler/recommender/ -run '^$' -bench RecommenderMemory -benchtime 1x
func BenchmarkRecommenderMemory(b *testing.B) {
	scalers := benchSetting("SWITCHBOARD_BENCH_SCALERS", 10000, 100)
	hours := benchSetting("SWITCHBOARD_BENCH_HOURS", 24, 2)
	containers := []string{"app", "proxy"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		r := newReader(3, 2, containers)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		p := &UsageProducer{histories: map[historyKey]*targetHistory{}}
		p.written = map[types.NamespacedName]checkpointMark{}
		for d := range scalers {
			name := fmt.Sprintf("web-%d", d)
			key := historyKey{Namespace: "bench", Target: "Deployment.apps/" + name}
			h := &targetHistory{containers: map[string]*ContainerHistory{}}
			p.histories[key] = h
			pods := benchPods(name, 2)
			for i := range hours * 60 {
				at := t0.Add(time.Duration(i) * time.Minute)
				h.add(r.read(pods, at, i+d), pods, at)
			}
			// What the poller remembers of the VerticalScaler's last checkpoint.
			p.written[types.NamespacedName{Namespace: "bench", Name: name}] = checkpointMark{at: t0, target: key.Target, version: h.version}
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		tracked := float64(scalers * len(containers))
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/tracked/1024, "KiB/container")
		b.ReportMetric(tracked, "containers")
		runtime.KeepAlive(p)
	}
}

// benchWriter is a client that counts the checkpoints written through it: by VerticalScaler,
// the times of its writes on the benchmark's clock, and the size of the last object sent.
type benchWriter struct {
	client.Writer
	now    *time.Time
	writes map[string][]time.Time
	bytes  int
}

func (w *benchWriter) Apply(_ context.Context, obj kruntime.ApplyConfiguration, _ ...client.ApplyOption) error {
	u := obj.(interface{ GetName() string })
	w.writes[u.GetName()] = append(w.writes[u.GetName()], *w.now)
	if data, err := json.Marshal(obj); err == nil {
		w.bytes = len(data)
	}
	return nil
}

// BenchmarkCheckpointWrites drives the checkpoint writer with a fake clock over a simulated
// hour (SWITCHBOARD_BENCH_MINUTES, 60) at SWITCHBOARD_BENCH_SCALERS VerticalScalers (10,000; 100
// under SWITCHBOARD_BENCH_SMOKE), each of its own Deployment of 2 Pods with 2 containers, read
// once a minute, with the default interval (a minute) and bound on writes (15 a second), against
// a client that counts the writes. Every VerticalScaler is due at the start, as after a restart
// with no checkpoints. It reports the writes in the hour, the writes per VerticalScaler and
// interval (the mean, and the most in any interval-long window of one VerticalScaler: the bound
// is 1), the most in a cycle, the longest a VerticalScaler waited between two checkpoints (what
// a crash loses at most) in minutes, and the size of a checkpoint sent at the end of the hour.
//
//	go test ./controllers/verticalscaler/recommender/ -run '^$' -bench CheckpointWrites -benchtime 1x
func BenchmarkCheckpointWrites(b *testing.B) {
	scalers := benchSetting("SWITCHBOARD_BENCH_SCALERS", 10000, 100)
	minutes := benchSetting("SWITCHBOARD_BENCH_MINUTES", 60, 60)
	const interval = DefaultCheckpointInterval
	containers := []string{"app", "proxy"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		now := t0
		w := &benchWriter{now: &now, writes: map[string][]time.Time{}}
		p := &UsageProducer{Interval: DefaultUsageInterval, CheckpointInterval: interval, CheckpointWritesPerSecond: DefaultCheckpointWritesPerSecond,
			CheckpointReader: fakeReader{}, CheckpointWriter: w, FieldManager: "verticalscaler", Now: func() time.Time { return now },
			histories: map[historyKey]*targetHistory{}, written: map[types.NamespacedName]checkpointMark{}}
		list := make([]v1alpha1.VerticalScaler, scalers)
		pods := make([][]corev1.Pod, scalers)
		for d := range list {
			name := fmt.Sprintf("web-%d", d)
			list[d] = benchScaler(name)
			p.histories[historyKey{Namespace: "bench", Target: "Deployment.apps/" + name}] = &targetHistory{containers: map[string]*ContainerHistory{}}
			pods[d] = benchPods(name, 2)
		}
		r := newReader(7, 2, containers)
		most := 0
		for i := range minutes {
			now = t0.Add(time.Duration(i) * time.Minute)
			// The cycle's reads, then its writes, as the poller runs them.
			for d := range list {
				h := p.histories[historyKey{Namespace: "bench", Target: "Deployment.apps/" + list[d].Name}]
				h.add(r.read(pods[d], now, i+d), pods[d], now)
			}
			before := w.total()
			p.writeCheckpoints(context.Background(), list)
			most = max(most, w.total()-before)
		}
		intervals := float64(minutes) / interval.Minutes()
		b.ReportMetric(float64(w.total())*60/float64(minutes), "writes/hour")
		b.ReportMetric(float64(w.total())/float64(scalers)/intervals, "writes/scaler/interval")
		b.ReportMetric(float64(w.mostInAnInterval(interval)), "max-writes/scaler/interval")
		b.ReportMetric(float64(most), "max-writes/cycle")
		b.ReportMetric(w.longestGap(t0.Add(time.Duration(minutes-1)*time.Minute)).Minutes(), "max-minutes-between-checkpoints")
		b.ReportMetric(float64(w.bytes), "bytes/checkpoint")
	}
}

// longestGap is the longest a VerticalScaler went without a checkpoint, up to end (the last
// cycle), counting from its first.
func (w *benchWriter) longestGap(end time.Time) time.Duration {
	var longest time.Duration
	for _, at := range w.writes {
		for i := 1; i < len(at); i++ {
			longest = max(longest, at[i].Sub(at[i-1]))
		}
		longest = max(longest, end.Sub(at[len(at)-1]))
	}
	return longest
}

// total is how many checkpoints were written.
func (w *benchWriter) total() int {
	n := 0
	for _, at := range w.writes {
		n += len(at)
	}
	return n
}

// mostInAnInterval is the most checkpoints of one VerticalScaler written within any window
// shorter than interval.
func (w *benchWriter) mostInAnInterval(interval time.Duration) int {
	most := 0
	for _, at := range w.writes {
		for i := range at {
			n := 0
			for j := i; j < len(at) && at[j].Sub(at[i]) < interval; j++ {
				n++
			}
			most = max(most, n)
		}
	}
	return most
}

// fakeReader finds no checkpoint: the benchmark starts with none.
type fakeReader struct{ client.Reader }

// BenchmarkCheckpointSize reports the size of the checkpoint of a VerticalScaler of 2
// containers and 2 Pods after a day of reads once a minute (a daily wave with noise, so that
// the histograms span as many buckets as a busy service's), as the poller sends it: the JSON of
// the whole object. The API server adds its metadata (uid, resourceVersion, creationTimestamp,
// managedFields) to what it stores.
//
//	go test ./controllers/verticalscaler/recommender/ -run '^$' -bench CheckpointSize -benchtime 1x
func BenchmarkCheckpointSize(b *testing.B) {
	h, end := dayOfHistory()
	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "web", UID: "7d3e0f4c-7b0e-4d5c-9a53-4f0b3a3f2a61"},
		Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web"}}
	for b.Loop() {
		w := &benchWriter{now: &end, writes: map[string][]time.Time{}}
		p := &UsageProducer{CheckpointWriter: w, FieldManager: "verticalscaler"}
		if err := p.writeCheckpoint(context.Background(), vs, h, end); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(w.bytes), "bytes/checkpoint")
	}
}

// BenchmarkStatusWrites counts the status writes the poller's news causes, at most one per
// VerticalScaler and cycle: SWITCHBOARD_BENCH_SCALERS VerticalScalers (10,000; 100 under
// SWITCHBOARD_BENCH_SMOKE), each of its own Deployment of 2 Pods with 2 containers, read once a
// minute over SWITCHBOARD_BENCH_HOURS (24) of a steady load (300m and 400Mi, 10% noise), each
// report written into the status as the controller writes it. It reports the writes per
// VerticalScaler and minute in the first hour and in the last, and the writes per second they
// make for all of them.
//
//	go test ./controllers/verticalscaler/recommender/ -run '^$' -bench StatusWrites -benchtime 1x
func BenchmarkStatusWrites(b *testing.B) {
	scalers := benchSetting("SWITCHBOARD_BENCH_SCALERS", 10000, 100)
	hours := benchSetting("SWITCHBOARD_BENCH_HOURS", 24, 2)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		rng := rand.New(rand.NewPCG(11, 12))
		list := make([]v1alpha1.VerticalScaler, scalers)
		histories := make([]*targetHistory, scalers)
		pods := make([][]corev1.Pod, scalers)
		for d := range list {
			name := fmt.Sprintf("web-%d", d)
			list[d] = benchScaler(name)
			histories[d] = &targetHistory{containers: map[string]*ContainerHistory{}}
			pods[d] = benchPods(name, 2)
		}
		usage := make([]PodUsage, 2)
		writesInHour := make([]int, hours)
		for i := range hours * 60 {
			now := t0.Add(time.Duration(i) * time.Minute)
			for d := range list {
				for j := range usage {
					noise := func() float64 { return 1 + 0.1*(2*rng.Float64()-1) }
					l := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(300*noise()), resource.DecimalSI),
						corev1.ResourceMemory: *resource.NewQuantity(int64(400*noise())<<20, resource.BinarySI)}
					usage[j] = PodUsage{Pod: pods[d][j].Name, Timestamp: now, Containers: map[string]corev1.ResourceList{"app": l, "proxy": l}}
				}
				perPod := histories[d].add(usage, pods[d], now)
				r := report(&list[d], observation{histories: histories[d].containers, containers: perPod})
				if r == nil {
					continue
				}
				// As the controller writes it (no container policy bounds it).
				list[d].Status.Recommendation = r.Recommendation
				list[d].Status.Conditions = []metav1.Condition{r.Provided}
				writesInHour[i/60]++
			}
		}
		perScalerMinute := func(hour int) float64 { return float64(writesInHour[hour]) / float64(scalers) / 60 }
		b.ReportMetric(perScalerMinute(0), "writes/scaler/minute-first-hour")
		b.ReportMetric(perScalerMinute(hours-1), "writes/scaler/minute-last-hour")
		b.ReportMetric(float64(writesInHour[0])/3600, "writes/s-first-hour")
		b.ReportMetric(float64(writesInHour[hours-1])/3600, "writes/s-last-hour")
	}
}
