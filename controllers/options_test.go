package controllers

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/example/switchboard/controllers/internal/transient"
	"github.com/example/switchboard/internal/pki"
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
		{"*", []string{"CronJob", "DaemonSet", "Job", "LimitRange", "MyApp", "Pod", "ReplicaSet", "Rollout", "StatefulSet", "VerticalPodAutoscaler", "VerticalPodAutoscalerCheckpoint", "VerticalScaler"}},
		{"configmapwatcher", []string{"CronJob", "DaemonSet", "Deployment", "Job", "Rollout", "StatefulSet"}},
		{"configmapwatcher-statefulsets", []string{"StatefulSet"}},
		{"configmapwatcher,myapp", []string{"CronJob", "DaemonSet", "Deployment", "Job", "MyApp", "Rollout", "StatefulSet"}},
		{"myapp", []string{"MyApp"}},
		{"verticalscaler", []string{"CronJob", "DaemonSet", "Job", "LimitRange", "Pod", "ReplicaSet", "StatefulSet", "VerticalPodAutoscaler", "VerticalPodAutoscalerCheckpoint", "VerticalScaler"}},
		{"verticalscaler,-verticalpodautoscaler", []string{"CronJob", "DaemonSet", "Job", "LimitRange", "Pod", "ReplicaSet", "StatefulSet", "VerticalScaler"}},
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

// TestShardCachesUnshardedKindsWhole: with --watch-label-selector, every kind but those a row
// says carry no shard label is cached through the selector; the verticalscaler's Pods and
// ReplicaSets, which take their labels from a Pod template, and LimitRanges, which bear on
// every workload of their namespace, are cached whole.
func TestShardCachesUnshardedKindsWhole(t *testing.T) {
	o := NewOptions()
	o.Controllers = "verticalscaler"
	o.WatchLabelSelector = "sharding.fluxcd.io/key=shard1"
	sel, err := o.Resolve(Table())
	if err != nil {
		t.Fatal(err)
	}
	cacheOpts := o.ManagerOptions(NewScheme(), sel).Cache
	if got := cacheOpts.DefaultLabelSelector.String(); got != o.WatchLabelSelector {
		t.Errorf("default label selector %q, want %q", got, o.WatchLabelSelector)
	}
	got := map[string]string{}
	for obj, entry := range cacheOpts.ByObject {
		if entry.Label != nil {
			got[kindOf(obj)] = entry.Label.String()
		}
	}
	if diff := cmp.Diff(map[string]string{"LimitRange": "", "Pod": "", "ReplicaSet": ""}, got); diff != "" {
		t.Errorf("kinds cached through a selector of their own (-want +got):\n%s", diff)
	}
}

// TestCacheScopes: the configmapwatcher's scope flags narrow what the cache lists of the
// workload kinds it alone watches (--namespaces-to-ignore as a field selector, the manager's
// namespaces without the ignored ones), and leave alone a kind another controller watches
// whole (Deployments and Jobs, with the verticalscaler, which sizes them).
func TestCacheScopes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// want is, per kind, its namespaces and field selector.
		want map[string]string
	}{
		{"no scope", []string{"--controllers=configmapwatcher-deployments"}, map[string]string{"Deployment": "[] "}},
		{"ignored namespaces: a field selector", []string{"--controllers=configmapwatcher-deployments", "--namespaces-to-ignore=kube-system,noisy"},
			map[string]string{"Deployment": "[] metadata.namespace!=kube-system,metadata.namespace!=noisy"}},
		{"watched namespaces without the ignored ones", []string{"--controllers=configmapwatcher-deployments", "--watch-namespaces=a,b,noisy", "--namespaces-to-ignore=noisy"},
			map[string]string{"Deployment": "[a b] "}},
		{"a kind another controller watches whole is not narrowed", []string{"--controllers=configmapwatcher-deployments,configmapwatcher-jobs,configmapwatcher-rollouts,verticalscaler", "--namespaces-to-ignore=noisy"},
			map[string]string{"Rollout": "[] metadata.namespace!=noisy", "Job": "[] ", "VerticalScaler": "[] ", "VerticalPodAutoscaler": "[] ", "VerticalPodAutoscalerCheckpoint": "[] ", "Pod": "[] ", "ReplicaSet": "[] ", "LimitRange": "[] ",
				"StatefulSet": "[] ", "DaemonSet": "[] ", "CronJob": "[] "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := Table()
			o := NewOptions()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o.BindFlags(fs, table)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			sel, err := o.Resolve(table)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for obj, by := range o.ManagerOptions(NewScheme(), sel).Cache.ByObject {
				namespaces := slices.Sorted(maps.Keys(by.Namespaces))
				field := ""
				if by.Field != nil {
					field = by.Field.String()
				}
				got[kindOf(obj)] = fmt.Sprintf("%v %s", namespaces, field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("namespaces and field selector per kind (-want +got):\n%s", diff)
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
			o := parsedOptions(t, tc.args)
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
			checkResolve(t, tc.args, tc.wantErr)
		})
	}
}

// checkResolve parses args as the manager's flags and checks that Resolve refuses them with an
// error containing wantErr, or accepts them when wantErr is empty.
func checkResolve(t *testing.T, args []string, wantErr string) {
	t.Helper()
	table := Table()
	o := NewOptions()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs, table) // binding a group's flags twice would panic here
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	_, err := o.Resolve(table)
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("Resolve() = %v, want no error", err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("Resolve() = %v, want an error containing %q", err, wantErr)
	}
}

// TestMetricsCertFlags: --metrics-cert-path hands the directory and file names to
// controller-runtime's metrics server (whose certwatcher serves and reloads them), and Resolve and
// CheckMetricsCert refuse what would otherwise fall back to a self-signed certificate without a
// word: a certificate over plain HTTP, missing or unreadable files.
func TestMetricsCertFlags(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.NewAuthority("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("metrics", x509.ExtKeyUsageServerAuth, []string{"localhost"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"cert.pem": certPEM, "key.pem": keyPEM, "tls.crt": certPEM, "tls.key": keyPEM, "garbage": []byte("not PEM")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args                       []string
		wantErr                    string
		wantDir, wantCert, wantKey string
	}{
		{args: nil, wantCert: "tls.crt", wantKey: "tls.key"},
		{args: []string{"--metrics-cert-path=" + dir}, wantDir: dir, wantCert: "tls.crt", wantKey: "tls.key"},
		{args: []string{"--metrics-cert-path=" + dir, "--metrics-cert-name=cert.pem", "--metrics-cert-key=key.pem"}, wantDir: dir, wantCert: "cert.pem", wantKey: "key.pem"},
		{args: []string{"--metrics-cert-path=" + filepath.Join(dir, "missing")}, wantErr: "--metrics-cert-path: reading the metrics certificate"},
		{args: []string{"--metrics-cert-path=" + dir, "--metrics-cert-name=garbage"}, wantErr: "--metrics-cert-path: reading the metrics certificate"},
		{args: []string{"--metrics-cert-path=" + dir, "--metrics-cert-key="}, wantErr: "--metrics-cert-name and --metrics-cert-key must name files"},
		{args: []string{"--metrics-cert-path=" + dir, "--metrics-secure=false"}, wantErr: "--metrics-cert-path needs --metrics-secure"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := parsedOptions(t, tc.args)
			sel, err := o.Resolve(Table())
			if err == nil {
				err = o.CheckMetricsCert()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Resolve() = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := o.ManagerOptions(NewScheme(), sel).Metrics
			if m.CertDir != tc.wantDir || m.CertName != tc.wantCert || m.KeyName != tc.wantKey {
				t.Errorf("metrics server CertDir, CertName, KeyName = %q, %q, %q; want %q, %q, %q", m.CertDir, m.CertName, m.KeyName, tc.wantDir, tc.wantCert, tc.wantKey)
			}
		})
	}
}

// parsedOptions returns the options the manager's flags set from args.
func parsedOptions(t *testing.T, args []string) *Options {
	t.Helper()
	o := NewOptions()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs, Table())
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestPrepareRetriesTransientFailures: the start's one-off question to the API server, whether
// the Rollout CRD is served, rides out an API server that fails for a moment (a replica started
// while the API server restarts or sheds load meets one), gives up once the backoff runs out,
// and stops at once on a refusal, since asking again changes nothing.
func TestPrepareRetriesTransientFailures(t *testing.T) {
	saved := transient.StartBackoff
	transient.StartBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 4}
	t.Cleanup(func() { transient.StartBackoff = saved })
	const rolloutsPath = "/apis/argoproj.io/v1alpha1"
	for _, tc := range []struct {
		name string
		// answers are the status codes for rolloutsPath, in turn; the last one repeats.
		answers   []int
		wantCalls int
		wantErr   string // empty: Prepare succeeds
		wantIdle  bool
	}{
		{"unavailable twice, then not served", []int{503, 503, 404}, 3, "", true},
		{"too many requests, then served", []int{429, 200}, 2, "", false},
		{"unavailable throughout", []int{503}, 4, "asking whether the API server serves argoproj.io/v1alpha1 failed 4 times, giving up", false},
		{"forbidden", []int{403}, 1, "rollouts.argoproj.io is forbidden", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != rolloutsPath {
					http.NotFound(w, r)
					return
				}
				code := tc.answers[min(int(calls.Add(1)), len(tc.answers))-1]
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				if code == http.StatusOK {
					_ = json.NewEncoder(w).Encode(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
						GroupVersion: "argoproj.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "rollouts", Namespaced: true, Kind: "Rollout"}}})
					return
				}
				_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
					Code: int32(code), Reason: reasonFor(code), Message: "rollouts.argoproj.io is " + strings.ToLower(http.StatusText(code))})
			}))
			t.Cleanup(srv.Close)
			o := NewOptions()
			o.Controllers = "configmapwatcher-rollouts"
			sel, err := o.Resolve(Table())
			if err != nil {
				t.Fatal(err)
			}
			sel, err = o.Prepare(context.Background(), &rest.Config{Host: srv.URL}, sel, logr.Discard())
			if got := int(calls.Load()); got != tc.wantCalls {
				t.Errorf("%d requests for %s, want %d", got, rolloutsPath, tc.wantCalls)
			}
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Prepare = %v, want an error containing %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("Prepare = %v", err)
			default:
				_, idle := sel.Idle["configmapwatcher-rollouts"]
				if idle != tc.wantIdle || idle == (len(sel.Controllers) > 0) {
					t.Errorf("idle %t with %d controllers active, want idle %t", idle, len(sel.Controllers), tc.wantIdle)
				}
			}
		})
	}
}

// reasonFor is the reason an API server gives with code.
func reasonFor(code int) metav1.StatusReason {
	switch code {
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	}
	return metav1.StatusReasonServiceUnavailable
}
