package testenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Reading is what one controller's metrics say at one moment.
type Reading struct {
	// Reconciles is how many reconciles the controller has finished, whatever their result
	// (controller_runtime_reconcile_total).
	Reconciles float64
	// Depth is how many requests wait in its work queue, ready to be picked up
	// (workqueue_depth, every priority).
	Depth float64
	// Active is how many of its workers are reconciling (controller_runtime_active_workers).
	Active float64
}

// MetricsSource reads every controller's Reading, keyed by controller name. A controller that
// has not started has no Reading. InProcess reads the managers of the test process;
// MetricsEndpoint, and Process.ControllerMetrics, a manager running as a process of its own.
type MetricsSource func(ctx context.Context) (map[string]Reading, error)

// InProcess reads controller-runtime's metrics registry of this process, which every manager
// that Env.StartManager started writes to.
//
// One thing is corrected: a work queue shut down with requests still in it leaves its depth
// gauge up, and the next manager's queue of the same controller counts on from there. So
// StartManager notes each of its controllers' depth just before the manager starts, and
// InProcess subtracts it; otherwise one manager stopped at a busy moment would keep every
// later wait for an empty queue from ever returning.
func InProcess(context.Context) (map[string]Reading, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering this process's controller metrics: %w", err)
	}
	out := readings(families)
	staleDepth.Lock()
	defer staleDepth.Unlock()
	for name, r := range out {
		r.Depth -= staleDepth.of[name]
		out[name] = r
	}
	return out, nil
}

// staleDepth is, per controller, the depth left on its work-queue gauge by managers that have
// stopped (see InProcess).
var staleDepth = struct {
	sync.Mutex
	of map[string]float64
}{of: map[string]float64{}}

// noteStaleDepth records the depth gauges of controllers before a manager that runs them starts.
func noteStaleDepth(controllers []string) error {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return fmt.Errorf("gathering this process's controller metrics: %w", err)
	}
	now := readings(families)
	staleDepth.Lock()
	defer staleDepth.Unlock()
	for _, name := range controllers {
		staleDepth.of[name] = now[name].Depth
	}
	return nil
}

// MetricsEndpoint reads the controller metrics a manager process serves at url, over plain
// HTTP (the manager started with --metrics-secure=false).
func MetricsEndpoint(url string) MetricsSource {
	return func(ctx context.Context) (map[string]Reading, error) {
		families, err := scrape(ctx, url)
		if err != nil {
			return nil, err
		}
		return readings(slices.Collect(maps.Values(families))), nil
	}
}

// scrape reads and parses the Prometheus text exposition at url.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics of %s: %w", url, err)
	}
	return families, nil
}

// readings sums, per controller, the samples of the families a Reading is made of.
func readings(families []*dto.MetricFamily) map[string]Reading {
	out := map[string]Reading{}
	for _, family := range families {
		var field func(*Reading) *float64
		switch family.GetName() {
		case "controller_runtime_reconcile_total":
			field = func(r *Reading) *float64 { return &r.Reconciles }
		case "workqueue_depth":
			field = func(r *Reading) *float64 { return &r.Depth }
		case "controller_runtime_active_workers":
			field = func(r *Reading) *float64 { return &r.Active }
		default:
			continue
		}
		for _, m := range family.GetMetric() {
			name := labels(m)["controller"]
			if name == "" {
				continue
			}
			r := out[name]
			*field(&r) += sampleValue(m)
			out[name] = r
		}
	}
	return out
}

// sampleValue is the value of a counter, gauge or untyped sample; zero for other kinds.
func sampleValue(m *dto.Metric) float64 {
	return m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
}

// Quiet says when controllers count as quiet; Wait waits for it. Every call site says what it
// needs: a count to reach, an empty queue, how long nothing may change, how often to look.
type Quiet struct {
	// Controllers are the controllers watched, by name ("myapp"). At least one.
	Controllers []string
	// Since and AtLeast ask for at least AtLeast reconciles of the Controllers (summed) since
	// their sum was Since: a count read before (ReconcileTotal, or what an earlier Wait
	// returned), or zero for a manager process started fresh.
	Since   float64
	AtLeast int
	// Idle asks, at every reading, for each controller's work queue to be empty and none of
	// its workers to be reconciling.
	Idle bool
	// For is how long the readings must keep every controller's reconcile count unchanged
	// while the rules above hold. Zero returns at the first reading where they hold.
	For time.Duration
	// Interval is the time between readings; one second when zero. A reading of a process's
	// /metrics makes garbage in that process, which matters where its memory is measured.
	Interval time.Duration
	// Timeout is how long Wait tries before it gives up; one minute when zero.
	Timeout time.Duration
}

// Wait reads from until q holds and returns the Controllers' reconciles at that moment,
// summed. A failed reading counts as not quiet; the error Wait returns on timeout says what was
// missing last.
func (q Quiet) Wait(ctx context.Context, from MetricsSource) (float64, error) {
	if len(q.Controllers) == 0 {
		return 0, errors.New("testenv.Quiet: no controllers to watch")
	}
	interval, timeout := q.Interval, q.Timeout
	if interval <= 0 {
		interval = time.Second
	}
	if timeout <= 0 {
		timeout = time.Minute
	}
	deadline := time.Now().Add(timeout)
	var last map[string]float64
	var quietSince time.Time
	for {
		readings, err := from(ctx)
		now := time.Now()
		if err == nil {
			var counts map[string]float64
			var total float64
			counts, total, err = q.check(readings)
			if err != nil || !maps.Equal(counts, last) {
				quietSince = time.Time{}
			}
			last = counts
			if err == nil {
				if quietSince.IsZero() {
					quietSince = now
				}
				if now.Sub(quietSince) >= q.For {
					return total, nil
				}
				err = fmt.Errorf("quiet for %s of %s", now.Sub(quietSince).Round(time.Millisecond), q.For)
			}
		} else {
			quietSince, last = time.Time{}, nil
		}
		if now.After(deadline) {
			return 0, fmt.Errorf("controllers %s not quiet after %s: %w", strings.Join(q.Controllers, ", "), timeout, err)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// check returns each controller's reconcile count and their sum, or why q does not hold.
func (q Quiet) check(readings map[string]Reading) (map[string]float64, float64, error) {
	counts := map[string]float64{}
	var total float64
	var problems []string
	for _, name := range q.Controllers {
		r, ok := readings[name]
		if !ok {
			problems = append(problems, name+" has no metrics: not started")
			continue
		}
		counts[name] = r.Reconciles
		total += r.Reconciles
		if q.Idle && (r.Depth > 0 || r.Active > 0) {
			problems = append(problems, fmt.Sprintf("%s has %v requests queued and %v workers busy", name, r.Depth, r.Active))
		}
	}
	if total < q.Since+float64(q.AtLeast) {
		problems = append(problems, fmt.Sprintf("%v reconciles since %v, want at least %d", total-q.Since, q.Since, q.AtLeast))
	}
	if len(problems) > 0 {
		return counts, total, errors.New(strings.Join(problems, "; "))
	}
	return counts, total, nil
}

// WaitQuiet is Quiet.Wait for a test: it fails t when q does not hold within its timeout.
func WaitQuiet(t testing.TB, from MetricsSource, q Quiet) float64 {
	t.Helper()
	total, err := q.Wait(context.Background(), from)
	if err != nil {
		t.Fatal(err)
	}
	return total
}
