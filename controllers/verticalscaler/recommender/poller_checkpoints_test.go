package recommender

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/compare"
	"github.com/example/switchboard/sources"
)

// countingWriter counts the checkpoints written through it, by VerticalScaler name, in order.
// A planned stop writes from several goroutines, hence the lock; the tests read written only
// once the write calls have returned.
type countingWriter struct {
	client.Writer
	mu      sync.Mutex
	written []string
}

func (w *countingWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if u, ok := obj.(interface{ GetName() string }); ok {
		w.mu.Lock()
		w.written = append(w.written, u.GetName())
		w.mu.Unlock()
	}
	if w.Writer == nil {
		return nil
	}
	return w.Writer.Apply(ctx, obj, opts...)
}

// checkpointWorld is a fake cluster and a clock, on which managers come and go: each
// newProducer is the poller of a newly started manager.
type checkpointWorld struct {
	t        *testing.T
	c        client.Client
	now      time.Time
	usage    *fakeUsage
	reports  *Reports
	registry *sources.Registry
	ch       <-chan event.GenericEvent
	recorder *events.FakeRecorder
	writer   *countingWriter
}

func newCheckpointWorld(t *testing.T, now time.Time, objects ...client.Object) *checkpointWorld {
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(objects...).
		WithStatusSubresource(&v1alpha1.VerticalScaler{}).Build()
	registry := newTestRegistry(t, 100)
	return &checkpointWorld{t: t, c: c, now: now, usage: &fakeUsage{}, registry: registry,
		ch: registry.Subscribe(Source, "verticalscaler"), recorder: events.NewFakeRecorder(10), writer: &countingWriter{Writer: c}}
}

// newProducer is the poller of a manager started now, with checkpoints every interval.
func (w *checkpointWorld) newProducer(interval time.Duration) *UsageProducer {
	w.reports = &Reports{}
	return &UsageProducer{Cache: w.c, Pods: w.c, Usage: w.usage, Interval: time.Minute, Reports: w.reports,
		Now: func() time.Time { return w.now }, ReadTimeout: time.Second, CheckpointInterval: interval,
		CheckpointReader: w.c, CheckpointWriter: w.writer, FieldManager: "verticalscaler", Recorder: w.recorder}
}

// cycle runs one cycle of p at the world's time with the given usage and returns the reports
// it sent.
func (w *checkpointWorld) cycle(p *UsageProducer, pods ...PodUsage) map[string]*Report {
	w.usage.pods = pods
	p.cycle(context.Background(), w.registry.Producer(Source))
	return received(w.t, w.ch, w.reports)
}

// checkpoint reads the checkpoint of VerticalScaler name.
func (w *checkpointWorld) checkpoint(name string) *v1alpha1.VerticalScalerCheckpoint {
	w.t.Helper()
	cp := &v1alpha1.VerticalScalerCheckpoint{}
	if err := w.c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, cp); err != nil {
		w.t.Fatalf("reading checkpoint %s: %v", name, err)
	}
	return cp
}

// ownedScaler is a VerticalScaler with a UID, which its checkpoint's owner reference names.
func ownedScaler(name, deploymentName string) *v1alpha1.VerticalScaler {
	vs := scaler(name, deploymentName)
	vs.UID = types.UID("uid-" + name)
	return vs
}

// usageAt is one read of Pod web-1's container app at time at.
func usageAt(at time.Time, cpu, memory string) PodUsage {
	return PodUsage{Pod: "web-1", Timestamp: at, Containers: map[string]corev1.ResourceList{"app": list(cpu, memory)}}
}

func TestCheckpointWrittenAtMostOncePerIntervalAndOnlyWhenChanged(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	vs := ownedScaler("web", "web")
	w := newCheckpointWorld(t, t0, vs, pod("web-1", ""))
	p := w.newProducer(10 * time.Minute)

	w.cycle(p, usageAt(t0, "200m", "300Mi"))
	cp := w.checkpoint("web")
	wantOwner := []metav1.OwnerReference{{APIVersion: "app.example.com/v1alpha1", Kind: "VerticalScaler", Name: "web", UID: "uid-web", Controller: new(true)}}
	if diff := cmp.Diff(wantOwner, cp.OwnerReferences); diff != "" {
		t.Errorf("owner references (-want +got):\n%s", diff)
	}
	if cp.Spec.Target != "Deployment.apps/web" || cp.Spec.DeploymentName != "web" || cp.Status.Version != CheckpointVersion || !cp.Status.WriteTime.Time.Equal(t0) ||
		len(cp.Status.Containers) != 1 || cp.Status.Containers[0].Name != "app" || cp.Status.Containers[0].Samples != 1 {
		t.Errorf("checkpoint %+v, want Deployment web's history of app, one sample, written at %v", cp, t0)
	}

	// Within the interval, new samples wait.
	for m := 1; m < 10; m++ {
		w.now = t0.Add(time.Duration(m) * time.Minute)
		w.cycle(p, usageAt(w.now, "200m", "300Mi"))
	}
	if got := len(w.writer.written); got != 1 {
		t.Errorf("%d writes in the first interval, want 1", got)
	}
	// The interval is over and the history changed: the next cycle writes.
	w.now = t0.Add(10 * time.Minute)
	w.cycle(p, usageAt(w.now, "200m", "300Mi"))
	if cp := w.checkpoint("web"); len(w.writer.written) != 2 || cp.Status.Containers[0].Samples != 11 || !cp.Status.WriteTime.Time.Equal(w.now) {
		t.Errorf("after the interval: %d writes, checkpoint of %d samples at %v; want 2 writes, 11 samples at %v",
			len(w.writer.written), cp.Status.Containers[0].Samples, cp.Status.WriteTime, w.now)
	}
	// Another interval later, but the same sample read again: nothing changed, nothing written.
	w.now = t0.Add(30 * time.Minute)
	w.cycle(p, usageAt(t0.Add(10*time.Minute), "200m", "300Mi"))
	if got := len(w.writer.written); got != 2 {
		t.Errorf("%d writes with an unchanged history, want 2", got)
	}
}

func TestRestartedPollerRecommendsWhatTheLastOneDid(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	vs := ownedScaler("web", "web")
	killed := t0.Add(20 * time.Minute)
	w := newCheckpointWorld(t, t0, vs, pod("web-1", "512Mi", oomKilled(killed)))
	first := w.newProducer(10 * time.Minute)
	// Fifty minutes of reads of a busy container; the last checkpoint, at minute 50, holds them
	// all. The kill, still in the Pod's last state, is recorded once.
	cpu := []string{"100m", "250m", "900m", "400m", "1500m"}
	for m := 0; m <= 50; m++ {
		w.now = t0.Add(time.Duration(m) * time.Minute)
		w.cycle(first, usageAt(w.now, cpu[m%len(cpu)], fmt.Sprintf("%dMi", 300+m)))
	}
	last := report(vs, observation{histories: first.histories[historyKey{Namespace: "ns", Target: "Deployment.apps/web"}].containers, containers: 1})
	if last == nil || last.Recommendation.ContainerRecommendations[0].LastOOMKillTime == nil {
		t.Fatalf("the first manager's recommendation %+v, want one with the OOM kill", last)
	}

	// A new manager starts (the first one stopped, or lost the lease): its first cycle reads the
	// history back before anything else, and recommends what the first did, though its first
	// read has no usage yet. The Pod still shows the kill.
	w.now = t0.Add(51 * time.Minute)
	second := w.newProducer(10 * time.Minute)
	got := w.cycle(second)
	if got["web"] == nil || got["web"].Recommendation == nil {
		t.Fatalf("the new manager's first cycle sent %v, want the recommendation", got)
	}
	if diff := cmp.Diff(last.Recommendation, got["web"].Recommendation, compare.Quantities); diff != "" {
		t.Errorf("the new manager's first recommendation (-last before +first after):\n%s", diff)
	}
	// It reads the checkpoint once, and waits the interval after its write time to write again.
	w.now = t0.Add(55 * time.Minute)
	w.cycle(second, usageAt(w.now, "300m", "320Mi"))
	if got := len(w.writer.written); got != 6 {
		t.Errorf("%d writes, want the first manager's 6 (minutes 0 to 50) and none yet from the second", got)
	}
	w.now = t0.Add(60 * time.Minute)
	w.cycle(second, usageAt(w.now, "300m", "320Mi"))
	if got := len(w.writer.written); got != 7 {
		t.Errorf("%d writes, want the second manager's first at minute 60, ten minutes after the last", got)
	}
}

func TestInvalidCheckpointIsReportedAndReplaced(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	vs := ownedScaler("web", "web")
	owned := func(name string, status v1alpha1.VerticalScalerCheckpointStatus, deploymentName string) *v1alpha1.VerticalScalerCheckpoint {
		return &v1alpha1.VerticalScalerCheckpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "app.example.com/v1alpha1", Kind: "VerticalScaler", Name: name, UID: types.UID("uid-" + name), Controller: new(true)}}},
			Spec: v1alpha1.VerticalScalerCheckpointSpec{DeploymentName: deploymentName}, Status: status}
	}
	bad := owned("web", v1alpha1.VerticalScalerCheckpointStatus{Version: "v0", WriteTime: metav1.NewTime(t0)}, "web")
	w := newCheckpointWorld(t, t0, vs, bad, pod("web-1", ""))
	p := w.newProducer(10 * time.Minute)
	got := w.cycle(p, usageAt(t0, "200m", "300Mi"))
	if got["web"] == nil || got["web"].Recommendation.ContainerRecommendations[0].Samples != 1 {
		t.Fatalf("sent %v, want a recommendation from the one new sample", got)
	}
	select {
	case e := <-w.recorder.Events:
		if !strings.Contains(e, "Warning CheckpointInvalid") || !strings.Contains(e, `checkpoint version "v0", this manager reads "v1"`) {
			t.Errorf("Event %q, want a CheckpointInvalid warning that says why", e)
		}
	default:
		t.Error("no Event for the invalid checkpoint")
	}
	// It is replaced at once, without waiting for the interval after its write time.
	if cp := w.checkpoint("web"); cp.Status.Version != CheckpointVersion || !cp.Status.WriteTime.Time.Equal(t0) {
		t.Errorf("checkpoint version %q written %v, want it replaced by this manager's", cp.Status.Version, cp.Status.WriteTime)
	}

	// A checkpoint of the Deployment a VerticalScaler named before is not this history, and
	// nothing to report; the next write waits the interval after it.
	api := ownedScaler("api", "api")
	old := owned("api", v1alpha1.VerticalScalerCheckpointStatus{Version: CheckpointVersion, WriteTime: metav1.NewTime(t0)}, "api-v1")
	w = newCheckpointWorld(t, t0.Add(time.Minute), podOf("api", "web-1", "app"), api, old)
	p = w.newProducer(10 * time.Minute)
	w.cycle(p, usageAt(w.now, "200m", "300Mi"))
	if len(w.recorder.Events) != 0 || len(w.writer.written) != 0 {
		t.Errorf("%d Events, %d writes, want none: the checkpoint of api-v1 is left until the interval is over", len(w.recorder.Events), len(w.writer.written))
	}
	w.now = t0.Add(10 * time.Minute)
	w.cycle(p, usageAt(w.now, "200m", "300Mi"))
	if cp := w.checkpoint("api"); cp.Spec.DeploymentName != "api" || cp.Spec.Target != "Deployment.apps/api" {
		t.Errorf("checkpoint of %s (%s) after the interval, want api's", cp.Spec.Target, cp.Spec.DeploymentName)
	}
}

func TestCheckpointsOldestFirstWithinABudget(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// 25 VerticalScalers, each of its own Deployment: at most 10 writes a cycle (the least
	// budget: twice 25 × 1m / 10m is 5).
	var objects []client.Object
	for i := range 25 {
		name := fmt.Sprintf("web-%02d", i)
		objects = append(objects, podOf(name, name+"-1", "app"), ownedScaler(name, name))
	}
	// One read of every Pod.
	usageOfAll := func(at time.Time) []PodUsage {
		var out []PodUsage
		for i := range 25 {
			u := usageAt(at, "200m", "300Mi")
			u.Pod = fmt.Sprintf("web-%02d-1", i)
			out = append(out, u)
		}
		return out
	}
	w := newCheckpointWorld(t, t0, objects...)
	w.writer.Writer = nil
	p := w.newProducer(10 * time.Minute)
	var perCycle []int
	for m := 0; m <= 10; m++ {
		w.now = t0.Add(time.Duration(m) * time.Minute)
		before := len(w.writer.written)
		w.cycle(p, usageOfAll(w.now)...)
		perCycle = append(perCycle, len(w.writer.written)-before)
	}
	// Ten, ten, five: every VerticalScaler once; then none until the first ten are an interval
	// old, at minute 10.
	if diff := cmp.Diff([]int{10, 10, 5, 0, 0, 0, 0, 0, 0, 0, 10}, perCycle); diff != "" {
		t.Errorf("writes per cycle (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(w.writer.written[:10], w.writer.written[25:35]); diff != "" {
		t.Errorf("minute 10 wrote other VerticalScalers than the oldest checkpoints (-oldest +written):\n%s", diff)
	}
	for _, tc := range []struct {
		scalers  int
		interval time.Duration
		rate     float64
		want     int
	}{
		{10000, 10 * time.Minute, 0, 2000},
		{10000, time.Minute, 0, 20000},
		{10000, time.Minute, DefaultCheckpointWritesPerSecond, 900},
		{300, time.Minute, DefaultCheckpointWritesPerSecond, 600},
		{3, time.Minute, 0.01, 10},
	} {
		if got := checkpointWriteBudget(tc.scalers, time.Minute, tc.interval, tc.rate); got != tc.want {
			t.Errorf("budget at %d VerticalScalers, interval %s, %v a second: %d a cycle, want %d", tc.scalers, tc.interval, tc.rate, got, tc.want)
		}
	}
}

// blockingWriter lets the first n writes through and blocks every later one until its context
// ends. The count is taken under a lock: the stop's writers call it at once, and two of them must
// not both pass as the n-th.
type blockingWriter struct {
	client.Writer
	mu       sync.Mutex
	admitted int
	n        int
}

func (w *blockingWriter) Apply(ctx context.Context, _ runtime.ApplyConfiguration, _ ...client.ApplyOption) error {
	w.mu.Lock()
	pass := w.admitted < w.n
	if pass {
		w.admitted++
	}
	w.mu.Unlock()
	if pass {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestPlannedStopWritesEveryChangedHistory: a planned stop writes the checkpoint of every
// history that changed since its last checkpoint, whatever the interval, and only those; past
// its timeout it leaves the rest and says how many.
func TestPlannedStopWritesEveryChangedHistory(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	objects := []client.Object{}
	for _, name := range []string{"a", "b", "c"} {
		objects = append(objects, podOf(name, name+"-1", "app"), ownedScaler(name, name))
	}
	w := newCheckpointWorld(t, t0, objects...)
	p := w.newProducer(time.Hour)
	read := func(at time.Time, names ...string) []PodUsage {
		var out []PodUsage
		for _, n := range names {
			u := usageAt(at, "200m", "300Mi")
			u.Pod = n + "-1"
			out = append(out, u)
		}
		return out
	}
	w.cycle(p, read(t0, "a", "b", "c")...)
	if got := len(w.writer.written); got != 3 {
		t.Fatalf("%d first checkpoints, want 3", got)
	}
	// Ten more reads of a and b within the interval: the cycles write nothing.
	for m := 1; m <= 10; m++ {
		w.now = t0.Add(time.Duration(m) * time.Second)
		w.cycle(p, read(w.now, "a", "b")...)
	}
	if got := len(w.writer.written); got != 3 {
		t.Fatalf("%d checkpoints within the interval, want 3", got)
	}
	written, left := p.flushCheckpoints(context.Background())
	if written != 2 || left != 0 || len(w.writer.written) != 5 {
		t.Errorf("stop wrote %d and left %d (%d writes in all), want a and b written, 5 writes in all", written, left, len(w.writer.written))
	}
	for _, name := range []string{"a", "b"} {
		if got := w.checkpoint(name).Status.Containers[0].Samples; got != 11 {
			t.Errorf("%s's checkpoint holds %d samples, want all 11 reads", name, got)
		}
	}
	// Nothing changed since: a second stop writes nothing.
	if written, left := p.flushCheckpoints(context.Background()); written != 0 || left != 0 {
		t.Errorf("second stop wrote %d and left %d, want nothing to do", written, left)
	}

	// A stop that runs out of time leaves what it could not write.
	w.cycle(p, read(t0.Add(time.Minute), "a", "b", "c")...)
	p.CheckpointWriter = &blockingWriter{n: 1}
	p.CheckpointFlushTimeout = 200 * time.Millisecond
	start := time.Now()
	written, left = p.flushCheckpoints(context.Background())
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("stop took %s with a timeout of 200ms", took)
	}
	if written != 1 || left != 2 {
		t.Errorf("stop wrote %d and left %d, want 1 written, 2 left", written, left)
	}
}
