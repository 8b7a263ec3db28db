package controllers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/example/switchboard/controllers/internal/apifeatures"
)

// TestPrepareFindsTheFallbacks: on an API server that serves no MutatingAdmissionPolicy (as
// Kubernetes 1.34 by default), Prepare finds it missing for the reconcilers to read, and
// switchboard_api_fallback names each selected controller that does without it; pods/resize
// is served, so nobody falls back from it.
func TestPrepareFindsTheFallbacks(t *testing.T) {
	served := map[string][]string{
		"/api/v1":                               {"pods", "pods/resize", "configmaps"},
		"/apis/admissionregistration.k8s.io/v1": {"validatingadmissionpolicies", "validatingwebhookconfigurations"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		names, ok := served[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: r.URL.Path}
		for _, name := range names {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: name})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(srv.Close)
	o := NewOptions()
	o.Controllers = "myapp,verticalscaler"
	sel, err := o.Resolve(Table())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Prepare(context.Background(), &rest.Config{Host: srv.URL}, sel, logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(apifeatures.Missing{MutatingAdmissionPolicy: true}, o.MissingAPIs()); diff != "" {
		t.Errorf("missing APIs (-want +got):\n%s", diff)
	}
	for _, series := range []struct {
		controller, feature string
		want                float64
	}{
		{"myapp", apifeatures.MutatingAdmissionPolicy, 1},
		{"verticalscaler", apifeatures.MutatingAdmissionPolicy, 1},
		{"verticalscaler", apifeatures.PodResize, 0},
	} {
		if v := testutil.ToFloat64(fallbackGauge.WithLabelValues(series.controller, series.feature)); v != series.want {
			t.Errorf("switchboard_api_fallback{controller=%q,feature=%q} = %v, want %v", series.controller, series.feature, v, series.want)
		}
	}
	if n := testutil.CollectAndCount(fallbackGauge); n != 3 {
		t.Errorf("switchboard_api_fallback has %d series, want the 3 above", n)
	}
}
