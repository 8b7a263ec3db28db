package recommender

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/example/switchboard/controllers/internal/compare"
)

// TestPodMetricsReader reads metrics-server's objects as unstructured data through a selector.
// Without metrics.k8s.io served, the envtest suite of the verticalscaler shows the error.
func TestPodMetricsReader(t *testing.T) {
	gv := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	mapper.Add(gv.WithKind("PodMetrics"), meta.RESTScopeNamespace)
	podMetrics := func(name, app, cpu string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"timestamp":  "2026-01-01T00:00:00Z",
			"window":     "15s",
			"containers": []any{map[string]any{"name": "app", "usage": map[string]any{"cpu": cpu, "memory": "64Mi"}}},
		}}
		u.SetGroupVersionKind(gv.WithKind("PodMetrics"))
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetLabels(map[string]string{"app": app})
		return u
	}
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithRESTMapper(mapper).
		WithObjects(podMetrics("web-1", "web", "100m"), podMetrics("db-1", "db", "1")).Build()
	got, err := PodMetricsReader{Reader: c}.PodUsage(context.Background(), "ns", labels.SelectorFromSet(map[string]string{"app": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []PodUsage{{Pod: "web-1", Timestamp: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Containers: map[string]corev1.ResourceList{"app": list("100m", "64Mi")}}}
	if diff := cmp.Diff(want, got, compare.Quantities); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPodMetricsReaderCountsReads: every read of metrics.k8s.io is counted by result, so that an
// alert can tell that the verticalscaler cannot see usage: here a cluster that serves the API and
// one where metrics-server fails.
func TestPodMetricsReaderCountsReads(t *testing.T) {
	gv := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	mapper.Add(gv.WithKind("PodMetrics"), meta.RESTScopeNamespace)
	unavailable := apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
	for _, tc := range []struct {
		name                   string
		reader                 client.Reader
		wantSuccess, wantError float64
	}{
		{"served", fake.NewClientBuilder().WithScheme(newScheme(t)).WithRESTMapper(mapper).Build(), 1, 0},
		{"unavailable", failingReader{unavailable}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func() []float64 {
				return []float64{testutil.ToFloat64(metricsAPIReads.WithLabelValues(readSuccess)), testutil.ToFloat64(metricsAPIReads.WithLabelValues(readError))}
			}
			before := read()
			_, err := PodMetricsReader{Reader: tc.reader}.PodUsage(context.Background(), "ns", labels.Everything())
			if (err != nil) != (tc.wantError > 0) {
				t.Fatalf("PodUsage() error = %v, want an error: %v", err, tc.wantError > 0)
			}
			after := read()
			got := []float64{after[0] - before[0], after[1] - before[1]}
			if diff := cmp.Diff([]float64{tc.wantSuccess, tc.wantError}, got); diff != "" {
				t.Errorf("reads counted as success, error (-want +got):\n%s", diff)
			}
		})
	}
}

// failingReader fails every read with err.
type failingReader struct{ err error }

func (r failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return r.err
}

func (r failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return r.err
}
