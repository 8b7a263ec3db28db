package controllers

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestCacheNamesOnlySelectedKinds: the cache looks up every kind it is configured for at start,
// so a manager running the configmapwatcher alone must not need the MyApp or VerticalScaler CRD.
// Deployments are named (to strip their managed fields) only when no selected controller reads
// them.
func TestCacheNamesOnlySelectedKinds(t *testing.T) {
	for _, tc := range []struct {
		controllers string
		want        []string
	}{
		{"*", []string{"MyApp", "VerticalScaler"}},
		{"configmapwatcher", []string{"Deployment"}},
		{"configmapwatcher,myapp", []string{"MyApp"}},
		{"myapp", []string{"MyApp"}},
		{"verticalscaler", []string{"VerticalScaler"}},
	} {
		t.Run(tc.controllers, func(t *testing.T) {
			o := NewOptions()
			o.Controllers = tc.controllers
			sel, err := o.Resolve(Table())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for obj := range o.ManagerOptions(NewScheme(), sel).Cache.ByObject {
				got = append(got, kindOf(obj))
			}
			sort.Strings(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("kinds configured in the cache (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMetricsUncompressed: the metrics handler never gzips, so no scrape leaves a pooled gzip
// writer (about 1 MiB of compression tables) in the manager's heap.
func TestMetricsUncompressed(t *testing.T) {
	o := NewOptions()
	sel, err := o.Resolve(Table())
	if err != nil {
		t.Fatal(err)
	}
	var h promhttp.HandlerOpts
	for _, apply := range o.ManagerOptions(NewScheme(), sel).Metrics.HandlerOpts {
		apply(&h)
	}
	if !h.DisableCompression {
		t.Error("metrics handler compression is on, want off")
	}
}
