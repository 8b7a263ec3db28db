package recommender

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/example/switchboard/apis/v1alpha1"
)

// TestUsageProducerReadFailures: metrics-server absent, slow or failing, and Pods that cannot
// be listed, each say so once in RecommendationProvided, with its own reason, and are not
// reported again while the status says it. An absent or slow metrics API stops the cycle's
// other reads, which would only fail or wait alike.
func TestUsageProducerReadFailures(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	noKind := fmt.Errorf("listing PodMetrics from metrics.k8s.io: %w", &meta.NoKindMatchError{
		GroupKind: schema.GroupKind{Group: "metrics.k8s.io", Kind: "PodMetrics"}, SearchedVersions: []string{"v1beta1"}})
	unavailable := fmt.Errorf("listing PodMetrics from metrics.k8s.io: %w", apierrors.NewServiceUnavailable("the server is currently unable to handle the request"))
	for _, tc := range []struct {
		name      string
		usage     fakeUsage
		listPods  error
		reason    string
		message   string
		wantReads int
	}{
		{name: "metrics-server absent", usage: fakeUsage{err: noKind}, reason: v1alpha1.ReasonMetricsAPIMissing,
			message: "the cluster does not serve metrics.k8s.io (is metrics-server installed?)", wantReads: 1},
		{name: "metrics-server slow", usage: fakeUsage{slow: true}, reason: v1alpha1.ReasonMetricsTimeout,
			message: "reading usage took too long", wantReads: 1},
		{name: "metrics-server failing", usage: fakeUsage{err: unavailable}, reason: v1alpha1.ReasonMetricsUnavailable,
			message: "unable to handle the request", wantReads: 3},
		{name: "Pods cannot be listed", listPods: errors.New("etcd is down"), reason: v1alpha1.ReasonMetricsUnavailable,
			message: "listing Pods: etcd is down", wantReads: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objects []client.Object
			scalers := map[string]*v1alpha1.VerticalScaler{}
			for _, name := range []string{"a", "b", "c"} {
				scalers[name] = scaler(name, name)
				objects = append(objects, podOf(name, name+"-1", "app"), scalers[name])
			}
			w := newPollerWorld(t, t0, objects...)
			if tc.listPods != nil {
				w.p.Pods = interceptor.NewClient(w.c.(client.WithWatch), interceptor.Funcs{
					List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
						if _, ok := list.(*corev1.PodList); ok {
							return tc.listPods
						}
						return c.List(ctx, list, opts...)
					}})
			}
			*w.usage = tc.usage
			start := time.Now()
			got := w.cycle()
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("cycle took %s: a slow read held it up", took)
			}
			if w.usage.reads != tc.wantReads {
				t.Errorf("%d reads of usage, want %d", w.usage.reads, tc.wantReads)
			}
			if len(got) != 3 {
				t.Fatalf("sent %d reports, want one per VerticalScaler", len(got))
			}
			for name, r := range got {
				if r.Provided.Status != "False" || r.Provided.Reason != tc.reason || !strings.Contains(r.Provided.Message, tc.message) {
					t.Errorf("%s: RecommendationProvided %+v, want False %s saying %q", name, r.Provided, tc.reason, tc.message)
				}
				if r.Recommendation != nil {
					t.Errorf("%s: a failed read carries a recommendation", name)
				}
				asController(t, w.c, scalers[name], r)
			}
			// The status says it now: the next cycles say nothing, whatever the failure's message.
			w.usage.reads = 0
			if got := w.cycle(); len(got) != 0 {
				t.Errorf("the same failure again: sent %v", got)
			}
		})
	}
}
