package testenv

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// mutatingVerbs are the apiserver_request_total verbs that write.
var mutatingVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// APIWrites returns, per resource (with "/subresource" when there is one), how many mutating
// requests the API server has served, counted from its own /metrics: a black-box count of every
// write, failed ones included.
func (e *Env) APIWrites(ctx context.Context) (map[string]float64, error) {
	return APIWrites(ctx, e.Config)
}

// SettledAPIWrites is APIWrites once two readings a quarter of a second apart agree (within
// timeout): the API server counts a request after it has answered it, so a reading taken right
// after a client saw its write can miss that write, and a test that counts the writes of a
// window would charge it to the window.
func (e *Env) SettledAPIWrites(t testing.TB, timeout time.Duration) map[string]float64 {
	t.Helper()
	ctx := context.Background()
	var settled map[string]float64
	Poll(t, timeout, 0, func() error {
		first, err := e.APIWrites(ctx)
		if err != nil {
			return err
		}
		time.Sleep(250 * time.Millisecond)
		second, err := e.APIWrites(ctx)
		if err != nil {
			return err
		}
		if !maps.Equal(first, second) {
			return fmt.Errorf("the API server's write counts still moving")
		}
		settled = second
		return nil
	})
	return settled
}

// APIWrites is Env.APIWrites for any API server: cfg must be allowed to read its /metrics (an
// admin's is).
func APIWrites(ctx context.Context, cfg *rest.Config) (map[string]float64, error) {
	all, _, err := APIWriteCounts(ctx, cfg)
	return all, err
}

// APIWriteCounts is APIWrites, and from the same reading of the API server's /metrics the
// writes it answered with a 2xx code: a write a client sent as it was killed may reach the API
// server and be counted with an error code, having changed nothing.
func APIWriteCounts(ctx context.Context, cfg *rest.Config) (all, succeeded map[string]float64, err error) {
	families, err := apiServerMetrics(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	all, succeeded = map[string]float64{}, map[string]float64{}
	family, ok := families["apiserver_request_total"]
	if !ok {
		return all, succeeded, nil
	}
	for _, m := range family.GetMetric() {
		l := labels(m)
		if !mutatingVerbs[l["verb"]] {
			continue
		}
		resource := l["resource"]
		if l["subresource"] != "" {
			resource += "/" + l["subresource"]
		}
		all[resource] += m.GetCounter().GetValue()
		if strings.HasPrefix(l["code"], "2") {
			succeeded[resource] += m.GetCounter().GetValue()
		}
	}
	return all, succeeded, nil
}

// APIOpenWatches returns, per resource, how many watches the API server is serving now
// (apiserver_longrunning_requests): an informer that starts opens one, and client-go's informers
// fill their caches through that watch rather than a LIST, so the watches a client opens, not
// its LIST requests, say whether it started informers.
func APIOpenWatches(ctx context.Context, cfg *rest.Config) (map[string]float64, error) {
	families, err := apiServerMetrics(ctx, cfg)
	if err != nil {
		return nil, err
	}
	watches := map[string]float64{}
	for _, m := range families["apiserver_longrunning_requests"].GetMetric() {
		if l := labels(m); l["verb"] == "WATCH" {
			watches[l["resource"]] += m.GetGauge().GetValue()
		}
	}
	return watches, nil
}

// APIServerCPUSeconds returns the CPU time the API server process has used, from its own
// /metrics (process_cpu_seconds_total, in steps of 10 ms): what a benchmark compares when the
// API server, not the client, is the bottleneck.
func (e *Env) APIServerCPUSeconds(ctx context.Context) (float64, error) {
	families, err := apiServerMetrics(ctx, e.Config)
	if err != nil {
		return 0, err
	}
	family, ok := families["process_cpu_seconds_total"]
	if !ok || len(family.GetMetric()) != 1 {
		return 0, fmt.Errorf("the API server's metrics have no single process_cpu_seconds_total")
	}
	return family.GetMetric()[0].GetCounter().GetValue(), nil
}

func apiServerMetrics(ctx context.Context, cfg *rest.Config) (map[string]*dto.MetricFamily, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	return families, nil
}

// ReconcileTotal returns how many reconciles controller has finished in this process, from
// controller-runtime's metrics.
func ReconcileTotal(controller string) (float64, error) {
	readings, err := InProcess(context.Background())
	if err != nil {
		return 0, err
	}
	return readings[controller].Reconciles, nil
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// MetricValue returns the sum of the series of the counter or gauge name in this process
// (controller-runtime's registry) whose labels include want, and how many there are; 0 and 0
// when there is none.
func MetricValue(name string, want map[string]string) (float64, int, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return 0, 0, fmt.Errorf("gathering this process's metrics: %w", err)
	}
	var sum float64
	n := 0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := labels(m)
			match := true
			for k, v := range want {
				match = match && got[k] == v
			}
			if match {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
				n++
			}
		}
	}
	return sum, n, nil
}
