package controllers

import (
	"flag"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// TestCacheNamesOnlySelectedKinds: the cache looks up every kind it is configured for at start,
// so a manager running the configmapwatcher alone must not need the MyApp or VerticalScaler CRD,
// and one running only some workload kinds caches only those. Deployments are named (to strip
// their managed fields, or trim them) only when no selected controller reads them.
func TestCacheNamesOnlySelectedKinds(t *testing.T) {
	for _, tc := range []struct {
		controllers string
		want        []string
	}{
		{"*", []string{"CronJob", "DaemonSet", "MyApp", "StatefulSet", "VerticalScaler"}},
		{"configmapwatcher", []string{"CronJob", "DaemonSet", "Deployment", "StatefulSet"}},
		{"configmapwatcher-statefulsets", []string{"StatefulSet"}},
		{"configmapwatcher,myapp", []string{"CronJob", "DaemonSet", "Deployment", "MyApp", "StatefulSet"}},
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
// writer (and its compression tables) in the manager's heap.
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

// TestRESTConfigRateLimit: no client-side limit by default, nor with 0 or a negative QPS; a
// positive QPS sets client-go's token bucket.
func TestRESTConfigRateLimit(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		wantQPS   float32
		wantBurst int
	}{
		{nil, -1, 0},
		{[]string{"--kube-api-qps=0"}, -1, 0},
		{[]string{"--kube-api-qps=-5", "--kube-api-burst=7"}, -1, 0},
		{[]string{"--kube-api-qps=50"}, 50, 100},
		{[]string{"--kube-api-qps=20.5", "--kube-api-burst=40"}, 20.5, 40},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := NewOptions()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o.BindFlags(fs, Table())
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if _, err := o.Resolve(Table()); err != nil {
				t.Fatal(err)
			}
			cfg := o.RESTConfig(&rest.Config{Host: "https://example.com", QPS: 5, Burst: 10})
			if cfg.QPS != tc.wantQPS || cfg.Burst != tc.wantBurst {
				t.Errorf("QPS, burst = %v, %d; want %v, %d", cfg.QPS, cfg.Burst, tc.wantQPS, tc.wantBurst)
			}
			// client-go builds no rate limiter for a QPS of -1.
			client, err := rest.RESTClientFor(&rest.Config{Host: cfg.Host, QPS: cfg.QPS, Burst: cfg.Burst,
				ContentConfig: rest.ContentConfig{GroupVersion: &schema.GroupVersion{Version: "v1"}, NegotiatedSerializer: scheme.Codecs}})
			if err != nil {
				t.Fatal(err)
			}
			if limited := client.GetRateLimiter() != nil; limited != (tc.wantQPS > 0) {
				t.Errorf("client-side rate limiter present = %v, want %v", limited, tc.wantQPS > 0)
			}
		})
	}
}

func TestRejectsNonFiniteQPS(t *testing.T) {
	o := NewOptions()
	o.KubeAPIQPS = math.Inf(1)
	if _, err := o.Resolve(Table()); err == nil || !strings.Contains(err.Error(), "--kube-api-qps must be a finite number") {
		t.Errorf("Resolve() = %v, want a --kube-api-qps error", err)
	}
}

// TestControllerFlagsValidated: each controller's own flags are bound through its row, once
// for a group, and Resolve refuses a bad value naming the flag, whichever controllers run.
func TestControllerFlagsValidated(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--checkpoint-interval=10m", "--usage-interval=30s", "--usage-source=off"}, ""},
		{[]string{"--checkpoint-interval=-1s"}, "--checkpoint-interval must not be negative"},
		{[]string{"--usage-interval=0"}, "--usage-interval must be positive"},
		{[]string{"--usage-source=prometheus"}, "--usage-source must be one of"},
		{[]string{"--controllers=myapp", "--usage-source=prometheus"}, "--usage-source must be one of"},
		{[]string{"--reload-debounce=-1ms"}, "--reload-debounce must not be negative"},
		{[]string{"--config-digest-key-secret=Team_A/key"}, "is not a namespace name"},
		{[]string{"--config-digest-key-secret=ns/Bad_Name"}, "is not a Secret name"},
		{[]string{"--config-digest-key-secret=ns/key", "--reloader-annotations=false"}, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			table := Table()
			o := NewOptions()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o.BindFlags(fs, table) // binding a group's flags twice would panic here
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			_, err := o.Resolve(table)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Resolve() = %v, want no error", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Resolve() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
