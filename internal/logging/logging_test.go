package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/example/switchboard/internal/loganalysis"
)

// burst is more lines of one message than a second's sampling keeps.
const burst = 300

// logBurst logs burst lines of msg through a controller's logger, as a reconciler does.
func logBurst(log logr.Logger, controller, msg string) {
	l := log.WithValues("controller", controller)
	for i := range burst {
		l.WithValues("name", i).Info(msg, "changes", []string{"ConfigMap app: k changed"})
	}
}

func count(out *bytes.Buffer, msg string) int {
	return strings.Count(out.String(), `"msg":"`+msg+`"`)
}

// TestControllerRuntimeSamplingDropsWrites is the problem: controller-runtime's production
// logger keeps 100 lines of a message per second and one in 100 after, so a burst of rolls
// loses most of its "Rolled" lines.
func TestControllerRuntimeSamplingDropsWrites(t *testing.T) {
	var out bytes.Buffer
	logBurst(zap.New(zap.WriteTo(&out)), "configmapwatcher-deployments", "Rolled Deployment")
	if got := count(&out, "Rolled Deployment"); got >= burst {
		t.Fatalf("controller-runtime's logger kept %d of %d lines: it no longer samples, and this package is not needed", got, burst)
	} else {
		t.Logf("controller-runtime's logger kept %d of %d \"Rolled Deployment\" lines", got, burst)
	}
}

// TestWritesAreNeverSampled is the fix: the same burst keeps every line that records a write,
// samples other lines as before, and counts what it drops per controller, in the metric and in
// the line Report writes.
func TestWritesAreNeverSampled(t *testing.T) {
	var out bytes.Buffer
	registry := prometheus.NewRegistry()
	log, sampling, err := New(&zap.Options{DestWriter: &out}, registry)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"Rolled Deployment", "Recorded config baseline of StatefulSet", "Applied recommendation to Deployment"} {
		logBurst(log, "configmapwatcher-deployments", msg)
		if got := count(&out, msg); got != burst {
			t.Errorf("%q: %d of %d lines kept, want all", msg, got, burst)
		}
	}
	logBurst(log, "configmapwatcher-statefulsets", "Sources missing; StatefulSet not rolled")
	kept := count(&out, "Sources missing; StatefulSet not rolled")
	if want := samplingFirst + (burst-samplingFirst)/samplingThereafter; kept != want {
		t.Errorf("a line that records no write: %d of %d kept, want %d as controller-runtime's sampling keeps", kept, burst, want)
	}
	dropped := float64(burst - kept)
	if got := testutil.ToFloat64(sampling.dropped.WithLabelValues("configmapwatcher-statefulsets")); got != dropped {
		t.Errorf("switchboard_log_lines_dropped_total{controller=configmapwatcher-statefulsets} = %v, want %v", got, dropped)
	}
	if got := testutil.ToFloat64(sampling.dropped.WithLabelValues("configmapwatcher-deployments")); got != 0 {
		t.Errorf("switchboard_log_lines_dropped_total{controller=configmapwatcher-deployments} = %v, want 0", got)
	}
	sampling.Report(log)
	if !strings.Contains(out.String(), `"msg":"`+DroppedMessage+`","controller":"configmapwatcher-statefulsets","dropped":198}`) {
		t.Errorf("no report of the dropped lines in the log:\n%s", lastLines(out.String(), 2))
	}
	out.Reset()
	sampling.Report(log)
	if out.Len() != 0 {
		t.Errorf("a second report with nothing dropped meanwhile logged %q", out.String())
	}
}

// TestSamplingFollowsControllerRuntime: as controller-runtime, no sampling in development mode
// nor when V(2) lines are enabled; at debug level (V(1)) the reconcile-end lines are sampled
// and counted.
func TestSamplingFollowsControllerRuntime(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
		v    int
		want int
	}{
		{[]string{"--zap-devel"}, "Enqueued workloads", 0, burst},
		{[]string{"--zap-log-level=2"}, "Enqueued workloads", 0, burst},
		{[]string{"--zap-log-level=debug"}, "Reconcile finished", 1, samplingFirst + (burst-samplingFirst)/samplingThereafter},
		{[]string{"--zap-log-level=info"}, "Reconcile finished", 1, 0},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			opts := zap.Options{DestWriter: &out}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			opts.BindFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			log, _, err := New(&opts, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			l := log.WithValues("controller", "myapp").V(tc.v)
			for range burst {
				l.Info(tc.msg)
			}
			got := strings.Count(out.String(), tc.msg)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines kept (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCountersOnlyForLevelsLogged: a level's counters are made at its first sampled line, so a
// manager at the default level holds Info's and Error's, not all seven levels' (448 KiB).
func TestCountersOnlyForLevelsLogged(t *testing.T) {
	var out bytes.Buffer
	log, sampling, err := New(&zap.Options{DestWriter: &out}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	made := func() []zapcore.Level {
		var levels []zapcore.Level
		for i := range sampling.counts {
			if sampling.counts[i].Load() != nil {
				levels = append(levels, minLevel+zapcore.Level(i))
			}
		}
		return levels
	}
	if diff := cmp.Diff([]zapcore.Level(nil), made()); diff != "" {
		t.Errorf("levels with counters before any line (-want +got):\n%s", diff)
	}
	log.V(1).Info("Reconcile finished") // debug is not enabled: never sampled
	log.Info("Enqueued workloads")
	log.Error(errors.New("boom"), "Reconciler error")
	if diff := cmp.Diff([]zapcore.Level{zapcore.InfoLevel, zapcore.ErrorLevel}, made()); diff != "" {
		t.Errorf("levels with counters (-want +got):\n%s", diff)
	}
	logBurst(log, "myapp", "Enqueued workloads")
	if got, want := count(&out, "Enqueued workloads"), samplingFirst+(burst+1-samplingFirst)/samplingThereafter; got != want {
		t.Errorf("lines kept by the counters made at the first line: %d of %d, want %d", got, burst+1, want)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestReporterReportsWhenItStops: the last drops are logged when the manager stops.
func TestReporterReportsWhenItStops(t *testing.T) {
	var out bytes.Buffer
	log, sampling, err := New(&zap.Options{DestWriter: &out}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	logBurst(log, "myapp", "Enqueued workloads")
	reporter := sampling.Reporter(log)
	if reporter.NeedLeaderElection() {
		t.Error("the reporter waits for the leader election: a standby's drops would go unreported")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := reporter.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"msg":"`+DroppedMessage+`","controller":"myapp","dropped":198}`) {
		t.Errorf("no report when the reporter stopped:\n%s", lastLines(out.String(), 2))
	}
}

// TestSummaryCountsTheDroppedLines: `manager logs summary` reads Report's lines, so the
// summary of a sampled log says how many lines of each controller are missing.
func TestSummaryCountsTheDroppedLines(t *testing.T) {
	var out bytes.Buffer
	log, sampling, err := New(&zap.Options{DestWriter: &out}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	logBurst(log, "configmapwatcher-deployments", "Rolled Deployment")
	logBurst(log, "configmapwatcher-statefulsets", "Sources missing; StatefulSet not rolled")
	sampling.Report(log)
	var stdout, stderr bytes.Buffer
	if code := loganalysis.Main([]string{"summary", "--output", "json"}, &out, &stdout, &stderr); code != 0 {
		t.Fatalf("manager logs summary: exit %d: %s", code, stderr.String())
	}
	var report loganalysis.Report
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	dropped := map[string]uint64{}
	for _, c := range report.Controllers {
		dropped[c.Controller] = c.DroppedLines
	}
	want := map[string]uint64{"configmapwatcher-deployments": 0, "configmapwatcher-statefulsets": 198}
	if diff := cmp.Diff(want, dropped); diff != "" || report.DroppedLines != 198 {
		t.Errorf("dropped lines per controller (-want +got):\n%s\ntotal %d, want 198", diff, report.DroppedLines)
	}
}
