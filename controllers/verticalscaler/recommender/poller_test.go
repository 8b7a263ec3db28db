package recommender

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/compare"
	"github.com/example/switchboard/sources"
)

func TestParseUsage(t *testing.T) {
	for _, tc := range []struct {
		value   string
		want    corev1.ResourceList
		wantErr string
	}{
		{value: "cpu=250m,memory=128Mi", want: list("250m", "128Mi")},
		{value: " memory = 1Gi ", want: list("", "1Gi")},
		{value: "cpu=1", want: list("1", "")},
		{value: "", wantErr: `"" is not name=quantity`},
		{value: "gpu=1", wantErr: `unknown resource "gpu"`},
		{value: "cpu=1,cpu=2", wantErr: "cpu given twice"},
		{value: "cpu=-1", wantErr: "negative quantity"},
		{value: "memory=lots", wantErr: "memory: quantities must match"},
	} {
		got, err := ParseUsage(tc.value)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseUsage(%q) error = %v, want %q", tc.value, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseUsage(%q): %v", tc.value, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, compare.Quantities); diff != "" {
			t.Errorf("ParseUsage(%q) (-want +got):\n%s", tc.value, diff)
		}
	}
}

func TestParsePodMetrics(t *testing.T) {
	good := map[string]any{
		"metadata":  map[string]any{"name": "web-1"},
		"timestamp": "2026-01-01T00:00:00Z",
		"containers": []any{
			map[string]any{"name": "app", "usage": map[string]any{"cpu": "250m", "memory": "128Mi"}},
			map[string]any{"name": "sidecar", "usage": map[string]any{"cpu": "5m"}},
		},
	}
	got, err := parsePodMetrics(good)
	if err != nil {
		t.Fatal(err)
	}
	want := PodUsage{Pod: "web-1", Timestamp: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Containers: map[string]corev1.ResourceList{"app": list("250m", "128Mi"), "sidecar": list("5m", "")}}
	if diff := cmp.Diff(want, got, compare.Quantities); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name    string
		mutate  func(obj map[string]any)
		wantErr string
	}{
		{name: "bad timestamp", mutate: func(o map[string]any) { o["timestamp"] = "yesterday" }, wantErr: "timestamp"},
		{name: "container not an object", mutate: func(o map[string]any) { o["containers"] = []any{"app"} }, wantErr: "containers[0] is not an object"},
		{name: "container without name", mutate: func(o map[string]any) {
			o["containers"] = []any{map[string]any{"usage": map[string]any{"cpu": "1"}}}
		}, wantErr: "containers[0].name"},
		{name: "bad quantity", mutate: func(o map[string]any) {
			o["containers"] = []any{map[string]any{"name": "app", "usage": map[string]any{"memory": "lots"}}}
		}, wantErr: "containers[0].usage.memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := runtime.DeepCopyJSON(good)
			tc.mutate(obj)
			if _, err := parsePodMetrics(obj); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPodAnnotationReader(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(name string, podLabels, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: podLabels, Annotations: annotations}}
	}
	web := map[string]string{"app": "web"}
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(
		pod("web-1", web, map[string]string{v1alpha1.UsageAnnotationPrefix + "app": "cpu=100m,memory=64Mi", "other": "x"}),
		pod("web-2", web, nil),
		pod("db-1", map[string]string{"app": "db"}, map[string]string{v1alpha1.UsageAnnotationPrefix + "db": "cpu=1"}),
	).Build()
	r := PodAnnotationReader{Reader: c, Now: func() time.Time { return now }}
	got, err := r.PodUsage(context.Background(), "ns", labels.SelectorFromSet(web))
	if err != nil {
		t.Fatal(err)
	}
	want := []PodUsage{{Pod: "web-1", Timestamp: now, Containers: map[string]corev1.ResourceList{"app": list("100m", "64Mi")}}}
	if diff := cmp.Diff(want, got, compare.Quantities); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	bad := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(
		pod("web-1", web, map[string]string{v1alpha1.UsageAnnotationPrefix + "app": "cpu=fast"})).Build()
	_, err = PodAnnotationReader{Reader: bad, Now: time.Now}.PodUsage(context.Background(), "ns", labels.SelectorFromSet(web))
	if err == nil || !strings.Contains(err.Error(), "pod ns/web-1 annotation usage.app.example.com/app: cpu") {
		t.Errorf("error = %v, want one naming the Pod and the annotation", err)
	}
}

func TestNewUsageReaderRejectsUnknownSource(t *testing.T) {
	if _, err := NewUsageReader("prometheus", nil); err == nil || !strings.Contains(err.Error(), "metrics-api, pod-annotations, off") {
		t.Errorf("error = %v, want the known sources listed", err)
	}
}

// fakeUsage returns canned usage, or an error; with slow, it waits for the read's deadline
// first. It counts its reads.
type fakeUsage struct {
	pods  []PodUsage
	err   error
	slow  bool
	reads int
}

func (f *fakeUsage) PodUsage(ctx context.Context, _ string, _ labels.Selector) ([]PodUsage, error) {
	f.reads++
	if f.slow {
		<-ctx.Done()
		return nil, fmt.Errorf("listing PodMetrics from metrics.k8s.io: %w", ctx.Err())
	}
	return f.pods, f.err
}

func deployment(name string, containers ...string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	for _, c := range containers {
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: c, Image: "x"})
	}
	return d
}

func scaler(name, deploymentName string) *v1alpha1.VerticalScaler {
	return &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: v1alpha1.VerticalScalerSpec{DeploymentName: deploymentName}}
}

// received drains what the producer sent and returns, by VerticalScaler name, the report it
// stored for each. An event carries only the VerticalScaler's key.
func received(t *testing.T, ch <-chan event.GenericEvent, reports *Reports) map[string]*Report {
	t.Helper()
	out := map[string]*Report{}
	for {
		select {
		case e := <-ch:
			if _, ok := e.Object.(*metav1.PartialObjectMetadata); !ok {
				t.Errorf("event carries a %T, want only a key", e.Object)
			}
			key := client.ObjectKeyFromObject(e.Object)
			v, ok := reports.m.Load(key)
			if !ok {
				t.Fatalf("event for %s, but no report stored", key)
			}
			r := v.(Report)
			out[key.Name] = &r
		default:
			return out
		}
	}
}

// asController writes what a report says into vs's status, as the controller would.
func asController(t *testing.T, c client.Client, vs *v1alpha1.VerticalScaler, r *Report) {
	t.Helper()
	if r.Recommendation != nil {
		vs.Status.Recommendation = r.Recommendation
	}
	meta.SetStatusCondition(&vs.Status.Conditions, r.Provided)
	if err := c.Status().Update(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
}

func TestUsageProducerSendsOnlyWhatMoved(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web, lonely := scaler("web", "web"), scaler("lonely", "missing")
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).
		WithObjects(deployment("web", "app"), web, lonely).
		WithStatusSubresource(&v1alpha1.VerticalScaler{}).Build()
	registry := newTestRegistry(t, 10)
	ch := registry.Subscribe(Source, "verticalscaler")
	usage := &fakeUsage{}
	reports := &Reports{}
	p := &UsageProducer{Cache: c, Pods: c, Usage: usage, Threshold: Tolerance, Reports: reports, Now: func() time.Time { return t0 }}
	producer := registry.Producer(Source)
	cycle := func(pods ...PodUsage) map[string]*Report {
		usage.pods = pods
		p.cycle(ctx, producer)
		return received(t, ch, reports)
	}
	sample := func(pod string, at time.Duration, cpu string) PodUsage {
		return PodUsage{Pod: pod, Timestamp: t0.Add(at), Containers: map[string]corev1.ResourceList{
			"app": list(cpu, "300Mi"), "not-in-template": list("9", "9Gi")}}
	}

	if got := cycle(); len(got) != 0 {
		t.Errorf("no samples yet: sent %v", got)
	}

	got := cycle(sample("web-1", 0, "500m"))
	if len(got) != 1 || got["web"] == nil {
		t.Fatalf("first samples: sent %v, want one report to web (lonely's Deployment does not exist)", got)
	}
	// 300Mi falls in memory bucket 19, whose end plus 15% is 362.6Mi. One sample is no
	// history: the lower bound is the Pod minimum, the upper bound the histograms' range.
	want := &v1alpha1.Recommendation{DeploymentName: "web", Policy: DefaultPolicy.Status(), ContainerRecommendations: []v1alpha1.ContainerRecommendation{{
		ContainerName: "app", Target: list("588m", "363Mi"), LowerBound: list("25m", "250Mi"),
		UpperBound: list("1000", "953675Mi"), UncappedTarget: list("588m", "363Mi"),
		Samples: 1, FirstSampleTime: &metav1.Time{Time: t0}, LastSampleTime: &metav1.Time{Time: t0}}}}
	if diff := cmp.Diff(want, got["web"].Recommendation, compare.Quantities); diff != "" {
		t.Errorf("recommendation (-want +got):\n%s", diff)
	}
	provided := got["web"].Provided
	if provided.Status != metav1.ConditionTrue || provided.Reason != v1alpha1.ReasonRecommended {
		t.Errorf("RecommendationProvided = %+v, want True Recommended", provided)
	}

	// Until the controller writes it, the report is sent again: a dropped event is not lost.
	if got := cycle(sample("web-1", 0, "500m")); got["web"] == nil {
		t.Error("status not written yet, but the report was not sent again")
	}
	asController(t, c, web, got["web"])

	// The same measurement read again, and a small move, send nothing.
	if got := cycle(sample("web-1", 0, "500m")); len(got) != 0 {
		t.Errorf("same measurement: sent %v", got)
	}
	if got := cycle(sample("web-1", time.Minute, "520m"), sample("web-2", time.Minute, "520m")); len(got) != 0 {
		t.Errorf("move under the threshold: sent %v", got)
	}
	// A lasting move beyond the threshold is sent.
	var moved map[string]*Report
	for i := 2; i < 10 && len(moved) == 0; i++ {
		moved = cycle(sample("web-1", time.Duration(i)*time.Minute, "2"), sample("web-2", time.Duration(i)*time.Minute, "2"))
	}
	if moved["web"] == nil {
		t.Fatal("usage quadrupled: nothing sent")
	}
	asController(t, c, web, moved["web"])

	// Metrics unavailable: said once, then not again while the status says it.
	usage.err = errors.New("the server could not find the requested resource")
	got = cycle()
	provided = got["web"].Provided
	if provided.Reason != v1alpha1.ReasonMetricsUnavailable || !strings.Contains(provided.Message, "could not find") {
		t.Fatalf("unavailable: sent %+v, want MetricsUnavailable with the error", provided)
	}
	if got["web"].Recommendation != nil {
		t.Error("an unavailable report carries a recommendation")
	}
	asController(t, c, web, got["web"])
	if got := cycle(); len(got) != 0 {
		t.Errorf("unavailable again: sent %v", got)
	}

	// Back: the history was kept, so the recommendation is sent again at once.
	usage.err = nil
	if got := cycle(sample("web-1", time.Hour, "2")); got["web"] == nil || got["web"].Recommendation == nil {
		t.Errorf("metrics back: sent %v, want the recommendation", got)
	}

	// Nobody targets web any more: its history is forgotten.
	if err := c.Delete(ctx, web); err != nil {
		t.Fatal(err)
	}
	cycle()
	if _, ok := p.histories[types.NamespacedName{Namespace: "ns", Name: "web"}]; ok {
		t.Error("history of an untargeted Deployment kept")
	}
}

func TestUsageProducerFullBufferDoesNotBlock(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).
		WithObjects(deployment("web", "app"), scaler("a", "web"), scaler("b", "web")).Build()
	registry := newTestRegistry(t, 1)
	registry.Subscribe(Source, "verticalscaler")
	p := &UsageProducer{Cache: c, Pods: c, Threshold: Tolerance, Reports: &Reports{}, Usage: &fakeUsage{pods: []PodUsage{{
		Pod: "web-1", Timestamp: time.Now(), Containers: map[string]corev1.ResourceList{"app": list("1", "1Gi")}}}}}
	done := make(chan struct{})
	go func() { p.cycle(context.Background(), registry.Producer(Source)); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("cycle blocked on a full buffer")
	}
}

func TestMovedComparesWithStatus(t *testing.T) {
	rec := func(deployment string, policy Policy, c v1alpha1.ContainerRecommendation) *v1alpha1.Recommendation {
		c.ContainerName = "app"
		return &v1alpha1.Recommendation{DeploymentName: deployment, Policy: policy.Status(), ContainerRecommendations: []v1alpha1.ContainerRecommendation{c}}
	}
	at := func(s string) *metav1.Time {
		t, _ := time.Parse(time.RFC3339, s)
		return &metav1.Time{Time: t}
	}
	status := v1alpha1.ContainerRecommendation{Target: list("400m", ""), UncappedTarget: list("100m", ""),
		LowerBound: list("400m", ""), UpperBound: list("500m", ""), LastSampleTime: at("2026-01-01T00:00:00Z")}
	// Bounds moves count an hour of history after the status's.
	later := func(c v1alpha1.ContainerRecommendation, after time.Duration) v1alpha1.ContainerRecommendation {
		c.LastSampleTime = &metav1.Time{Time: status.LastSampleTime.Add(after)}
		return c
	}
	same := v1alpha1.ContainerRecommendation{Target: list("105m", ""), LowerBound: list("50m", ""), UpperBound: list("500m", "")}
	strict := DefaultPolicy
	strict.TargetPercentile = 0.99
	for _, tc := range []struct {
		name string
		next *v1alpha1.Recommendation
		want bool
	}{
		{name: "same target, bounds the same once clamped", next: rec("web", DefaultPolicy, same), want: false},
		{name: "the status holds web's recommendation and the VerticalScaler now names api", next: rec("api", DefaultPolicy, same), want: true},
		{name: "another policy", next: rec("web", strict, same), want: true},
		{name: "target moved", next: rec("web", DefaultPolicy, v1alpha1.ContainerRecommendation{Target: list("120m", ""),
			LowerBound: list("50m", ""), UpperBound: list("500m", "")}), want: true},
		{name: "lower bound moved above the minimum, an hour later", next: rec("web", DefaultPolicy, later(v1alpha1.ContainerRecommendation{Target: list("100m", ""),
			LowerBound: list("450m", ""), UpperBound: list("500m", "")}, time.Hour)), want: true},
		{name: "upper bound moved, a minute later", next: rec("web", DefaultPolicy, later(v1alpha1.ContainerRecommendation{Target: list("100m", ""),
			LowerBound: list("50m", ""), UpperBound: list("5", "")}, time.Minute)), want: false},
		{name: "new OOM kill", next: rec("web", DefaultPolicy, v1alpha1.ContainerRecommendation{Target: list("100m", ""),
			LowerBound: list("50m", ""), UpperBound: list("500m", ""), LastOOMKillTime: at("2026-01-01T00:00:00Z")}), want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := scaler("web", "web")
			// Bounds are raised to 400m in status.
			vs.Spec.ContainerPolicies = []v1alpha1.ContainerPolicy{{ContainerName: "*", MinAllowed: list("400m", "")}}
			vs.Status.Recommendation = rec("web", DefaultPolicy, status)
			if got := moved(vs, tc.next, Tolerance); got != tc.want {
				t.Errorf("moved = %v, want %v", got, tc.want)
			}
		})
	}
}

func newTestRegistry(t *testing.T, buffer int) *sources.Registry {
	t.Helper()
	r, err := sources.NewRegistry(buffer, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return r
}
