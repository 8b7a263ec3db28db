package recommender

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/example/switchboard/apis/v1alpha1"
)

// pollerWorld is a fake cluster, a producer on it and a way to run its cycles.
type pollerWorld struct {
	t       *testing.T
	c       client.Client
	usage   *fakeUsage
	reports *Reports
	p       *UsageProducer
	ch      <-chan event.GenericEvent
	cycleFn func()
	// now is the producer's clock.
	now time.Time
}

func newPollerWorld(t *testing.T, now time.Time, objects ...client.Object) *pollerWorld {
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(objects...).
		WithStatusSubresource(&v1alpha1.VerticalScaler{}).Build()
	registry := newTestRegistry(t, 10)
	w := &pollerWorld{t: t, c: c, usage: &fakeUsage{}, reports: &Reports{}, ch: registry.Subscribe(Source, "verticalscaler"), now: now}
	w.p = &UsageProducer{Cache: c, Pods: c, Usage: w.usage, Reports: w.reports,
		Now: func() time.Time { return w.now }, ReadTimeout: 100 * time.Millisecond}
	w.cycleFn = func() { w.p.cycle(context.Background(), registry.Producer(Source)) }
	return w
}

// cycle runs one cycle with the given usage and returns the reports sent.
func (w *pollerWorld) cycle(pods ...PodUsage) map[string]*Report {
	w.usage.pods = pods
	w.cycleFn()
	return received(w.t, w.ch, w.reports)
}

// pod is a Pod of Deployment "web" whose containers request memory.
func pod(name string, memoryRequest string, statuses ...corev1.ContainerStatus) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: list("", memoryRequest)}}}},
		Status: corev1.PodStatus{ContainerStatuses: statuses}}
}

// oomKilled is the status of container app after an OOM kill that finished at finished.
func oomKilled(finished time.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "app", RestartCount: 1,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason: "OOMKilled", ExitCode: 137, FinishedAt: metav1.NewTime(finished)}}}
}

func TestUsageProducerBumpsMemoryOnOOMKill(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web := scaler("web", "web")
	w := newPollerWorld(t, t0, web, pod("web-1", "512Mi"))
	sample := func(at time.Duration) PodUsage {
		return PodUsage{Pod: "web-1", Timestamp: t0.Add(at), Containers: map[string]corev1.ResourceList{"app": list("100m", "400Mi")}}
	}
	got := w.cycle(sample(0))
	// 400Mi falls in the bucket ending at 424.4Mi; +15%.
	if m := got["web"].Recommendation.ContainerRecommendations[0].Target.Memory().String(); m != "489Mi" {
		t.Fatalf("memory before the kill %s, want 489Mi", m)
	}
	asController(t, w.c, web, got["web"])

	// The container is killed and restarts: the next read bumps memory the VPA's way, from the
	// request (512Mi, above the 400Mi peak): 614.4Mi, in the bucket ending at 633.6Mi; +15%.
	killed := t0.Add(90 * time.Second)
	p := pod("web-1", "512Mi", oomKilled(killed))
	if err := w.c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	got = w.cycle(sample(2 * time.Minute))
	if got["web"] == nil {
		t.Fatal("OOM kill: nothing sent")
	}
	c := got["web"].Recommendation.ContainerRecommendations[0]
	if m := c.Target.Memory().String(); m != "729Mi" {
		t.Errorf("memory after the kill %s, want 729Mi", m)
	}
	if c.LastOOMKillTime == nil || !c.LastOOMKillTime.Time.Equal(killed) {
		t.Errorf("lastOOMKillTime = %v, want %v", c.LastOOMKillTime, killed)
	}
	asController(t, w.c, web, got["web"])

	// The kill stays in the Pod's last state: read again, it counts once. (The new sample
	// narrows the bounds, which is news of its own.)
	if got := w.cycle(sample(3 * time.Minute)); got["web"] != nil {
		if m := got["web"].Recommendation.ContainerRecommendations[0].Target.Memory().String(); m != "729Mi" {
			t.Errorf("the same kill read again: memory %s, want 729Mi still", m)
		}
	}
	if peaks := peaks(w.p.histories[historyKey{Namespace: "ns", Target: "Deployment.apps/web"}].containers["app"]); len(peaks) != 1 {
		t.Errorf("memory peaks %v, want one: the kill's", peaks)
	}
}

func TestUsageProducerRecommendsContainersAndNativeSidecars(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := podOf("web", "web-1", "app")
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = []corev1.Container{{Name: "migrate", Image: "x"}, {Name: "proxy", Image: "x", RestartPolicy: &always}}
	w := newPollerWorld(t, t0, p, scaler("web", "web"))
	got := w.cycle(PodUsage{Pod: "web-1", Timestamp: t0, Containers: map[string]corev1.ResourceList{
		"app": list("500m", "300Mi"), "proxy": list("50m", "30Mi"), "migrate": list("2", "1Gi")}})
	var names []string
	for _, c := range got["web"].Recommendation.ContainerRecommendations {
		names = append(names, c.ContainerName)
	}
	if len(names) != 2 || names[0] != "app" || names[1] != "proxy" {
		t.Errorf("recommended %v, want app and the native sidecar proxy, not the init container migrate", names)
	}
	// Two recommended containers share the Pod minimum of 25m and 250Mi: proxy's 30Mi is
	// raised to 125Mi.
	if m := got["web"].Recommendation.ContainerRecommendations[1].Target.Memory().String(); m != "125Mi" {
		t.Errorf("proxy's memory %s, want its share of the Pod minimum, 125Mi", m)
	}
}

func TestUsageProducerDrawsEachVerticalScalersPolicy(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	def, median := scaler("default", "web"), scaler("median", "web")
	p50 := int32(50)
	median.Spec.RecommenderPolicy = &v1alpha1.RecommenderPolicy{TargetPercentile: &p50}
	objects := []client.Object{def, median}
	var pods []PodUsage
	// Half the Pods at 100m, half at 1 core.
	for i := range 10 {
		cpu := "100m"
		if i%2 == 1 {
			cpu = "1"
		}
		name := string(rune('a' + i))
		objects = append(objects, podOf("web", name, "app"))
		pods = append(pods, PodUsage{Pod: name, Timestamp: t0, Containers: map[string]corev1.ResourceList{"app": list(cpu, "")}})
	}
	w := newPollerWorld(t, t0, objects...)
	got := w.cycle(pods...)
	target := func(name string) string {
		return got[name].Recommendation.ContainerRecommendations[0].Target.Cpu().String()
	}
	// The 50th percentile is the end of 100m's bucket, 110.3m, +15%; the 90th that of 1 core's,
	// 1.0163 cores, +15%.
	if target("median") != "127m" || target("default") != "1169m" {
		t.Errorf("targets: median %s, default %s; want 127m and 1169m", target("median"), target("default"))
	}
	if got := *got["median"].Recommendation.Policy.TargetPercentile; got != 50 {
		t.Errorf("status policy targetPercentile = %d, want 50", got)
	}
	asController(t, w.c, median, got["median"])
	asController(t, w.c, def, got["default"])

	// A policy change is news even when the target moves less than the tolerance.
	p55 := int32(55)
	median.Spec.RecommenderPolicy.TargetPercentile = &p55
	if err := w.c.Update(context.Background(), median); err != nil {
		t.Fatal(err)
	}
	if got := w.cycle(); got["median"] == nil || got["default"] != nil {
		t.Errorf("policy of median changed: sent %v, want median's news only", got)
	}
}

// TestOOMKillsOldestFirst: a container killed, restarted, and killed again before the next read
// shows both kills; the older comes first, so that both are recorded.
func TestOOMKillsOldestFirst(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	status := oomKilled(t0)
	status.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", FinishedAt: metav1.NewTime(t0.Add(time.Minute))}}
	other := corev1.ContainerStatus{Name: "proxy", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", FinishedAt: metav1.NewTime(t0)}}}
	got := oomKills(pod("web-1", "512Mi", status, other))
	want := []oomKill{{container: "app", finishedAt: t0, requestBytes: 512 * mib}, {container: "app", finishedAt: t0.Add(time.Minute), requestBytes: 512 * mib}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(oomKill{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestNewKillsAreTheOnesTheUpdateAdds: a Pod update brings the kills its new state shows and its
// old one did not, of the recommended containers only.
func TestNewKillsAreTheOnesTheUpdateAdds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first := pod("web-1", "512Mi", oomKilled(t0))
	second := pod("web-1", "512Mi", oomKilled(t0.Add(time.Minute)))
	plain := pod("web-1", "512Mi")
	other := pod("web-1", "512Mi", oomKilled(t0))
	other.Status.ContainerStatuses[0].Name = "migrate"
	other.Spec.InitContainers = []corev1.Container{{Name: "migrate"}}
	for _, tc := range []struct {
		name           string
		older, newer   *corev1.Pod
		wantFinishedAt []time.Time
	}{
		{"a first kill", plain, first, []time.Time{t0}},
		{"the same kill again", first, first, nil},
		{"a second kill", first, second, []time.Time{t0.Add(time.Minute)}},
		{"a plain init container's kill", plain, other, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []time.Time
			for _, k := range newKills(tc.older, tc.newer) {
				got = append(got, k.finishedAt)
			}
			if diff := cmp.Diff(tc.wantFinishedAt, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestHistoryConfigPerVerticalScaler: a VerticalScaler's container policy sets the OOM bump and
// the memory aggregation window of its history; another VerticalScaler of the same target with
// the defaults keeps a history of its own.
func TestHistoryConfigPerVerticalScaler(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	custom, def := scaler("custom", "web"), scaler("default", "web")
	ratio, none, hour := resource.MustParse("2"), resource.MustParse("0"), metav1.Duration{Duration: time.Hour}
	custom.Spec.ContainerPolicies = []v1alpha1.ContainerPolicy{{ContainerName: "*", OOMBumpUpRatio: &ratio, OOMMinBumpUp: &none,
		MemoryAggregationInterval: &hour, MemoryAggregationIntervalCount: new(int32(3))}}
	w := newPollerWorld(t, t0, custom, def, pod("web-1", "512Mi"))
	sample := func(at time.Duration, memory string) PodUsage {
		return PodUsage{Pod: "web-1", Timestamp: t0.Add(at), Containers: map[string]corev1.ResourceList{"app": list("100m", memory)}}
	}
	w.cycle(sample(0, "400Mi"))
	w.now = t0.Add(2 * time.Hour)
	got := w.cycle(sample(2*time.Hour, "200Mi"))
	histories := map[string]*ContainerHistory{}
	for key, h := range w.p.histories {
		histories[key.Config] = h.containers["app"]
	}
	if len(histories) != 2 {
		t.Fatalf("%d histories, want one per configuration", len(histories))
	}
	// Windows of an hour: two peaks, where a day's window holds one.
	if n := len(peaks(histories[historyConfigKey(&custom.Spec)])); n != 2 {
		t.Errorf("custom: %d memory peaks over two hours, want 2", n)
	}
	if n := len(peaks(histories[""])); n != 1 {
		t.Errorf("default: %d memory peaks over two hours, want 1", n)
	}
	asController(t, w.c, custom, got["custom"])
	asController(t, w.c, def, got["default"])

	// An OOM kill: 512Mi × 2, no minimum, for custom (1Gi, in the bucket ending at 1028Mi,
	// +15%: 1182Mi); max(512Mi + 100Mi, 512Mi × 1.2) for the default (729Mi).
	killed := t0.Add(2*time.Hour + time.Minute)
	if err := w.c.Status().Update(context.Background(), pod("web-1", "512Mi", oomKilled(killed))); err != nil {
		t.Fatal(err)
	}
	got = w.cycle(sample(3*time.Hour, "200Mi"))
	for name, want := range map[string]string{"custom": "1182Mi", "default": "729Mi"} {
		if got[name] == nil {
			t.Errorf("%s: no news after the kill", name)
			continue
		}
		if m := got[name].Recommendation.ContainerRecommendations[0].Target.Memory().String(); m != want {
			t.Errorf("%s: memory after the kill %s, want %s", name, m, want)
		}
	}
	// After three windows without a sample, the custom history forgets the container.
	w.now = t0.Add(7 * time.Hour)
	w.cycle()
	for key, h := range w.p.histories {
		if _, kept := h.containers["app"]; kept != (key.Config == "") {
			t.Errorf("history %q keeps app after 4 hours without a sample: %v", key.Config, kept)
		}
	}
}
