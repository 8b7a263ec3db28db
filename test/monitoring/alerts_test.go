package monitoring

import (
	"context"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
)

// scrapeInterval is the step of the series below, and how often they are evaluated.
const scrapeInterval = 15 * time.Second

// alertCase is a history of series, in promqltest's load notation at one sample per
// scrapeInterval, and whether an alert fires during it.
type alertCase struct {
	name   string
	series string
	fires  bool
}

// The labels the ServiceMonitor and the Prometheus Operator give a scraped series.
const target = `job="switchboard", namespace="switchboard-system"`

// alertCases are, per alert, histories where it must fire and where it must not: each alert of
// config/alerts/alerts.yaml has some (TestAlertsFire fails otherwise).
var alertCases = map[string][]alertCase{
	"SwitchboardDown": {
		{"every scrape fails", `up{` + target + `, pod="a"} 0x40`, true},
		{"no target at all", `other_metric{job="other"} 1x40`, true},
		{"scraped", `up{` + target + `, pod="a"} 1x40`, false},
		{"one of two replicas down", `up{` + target + `, pod="a"} 0x40
			up{` + target + `, pod="b"} 1x40`, false},
		{"down for less than 5 minutes", `up{` + target + `, pod="a"} 1x30 0x10`, false},
	},
	"SwitchboardControllerNoLeader": {
		{"no replica leads", `switchboard_controller_leader{` + target + `, controller="myapp", pod="a"} 0x20
			switchboard_controller_leader{` + target + `, controller="myapp", pod="b"} 0x20`, true},
		{"one leads", `switchboard_controller_leader{` + target + `, controller="myapp", pod="a"} 1x20
			switchboard_controller_leader{` + target + `, controller="myapp", pod="b"} 0x20`, false},
		{"a handover of 15 seconds", `switchboard_controller_leader{` + target + `, controller="myapp", pod="a"} 1x10 0x10
			switchboard_controller_leader{` + target + `, controller="myapp", pod="b"} 0x11 1x9`, false},
		{"another operator's series", `switchboard_controller_leader{job="other", controller="myapp"} 0x20`, false},
	},
	"SwitchboardReconcileErrors": {
		{"a third of reconciles fail", `controller_runtime_reconcile_total{` + target + `, controller="myapp", result="success"} 0+10x120
			controller_runtime_reconcile_total{` + target + `, controller="myapp", result="error"} 0+5x120
			controller_runtime_reconcile_errors_total{` + target + `, controller="myapp"} 0+5x120
			controller_runtime_terminal_reconcile_errors_total{` + target + `, controller="myapp"} 0x120`, true},
		{"every error is terminal", `controller_runtime_reconcile_total{` + target + `, controller="myapp", result="success"} 0+10x120
			controller_runtime_reconcile_total{` + target + `, controller="myapp", result="error"} 0+5x120
			controller_runtime_reconcile_errors_total{` + target + `, controller="myapp"} 0+5x120
			controller_runtime_terminal_reconcile_errors_total{` + target + `, controller="myapp"} 0+5x120`, false},
		{"one failure in a hundred", `controller_runtime_reconcile_total{` + target + `, controller="myapp", result="success"} 0+99x120
			controller_runtime_reconcile_total{` + target + `, controller="myapp", result="error"} 0+1x120
			controller_runtime_reconcile_errors_total{` + target + `, controller="myapp"} 0+1x120
			controller_runtime_terminal_reconcile_errors_total{` + target + `, controller="myapp"} 0x120`, false},
		{"idle", `controller_runtime_reconcile_total{` + target + `, controller="myapp", result="success"} 5x120
			controller_runtime_reconcile_errors_total{` + target + `, controller="myapp"} 1x120
			controller_runtime_terminal_reconcile_errors_total{` + target + `, controller="myapp"} 0x120`, false},
	},
	"SwitchboardWorkQueueGrowing": {
		{"growing for 45 minutes", `workqueue_depth{` + target + `, controller="myapp", name="myapp"} 0+1x180`, true},
		{"deep but steady", `workqueue_depth{` + target + `, controller="myapp", name="myapp"} 500x180`, false},
		{"a resync every 10 minutes, drained", `workqueue_depth{` + target + `, controller="myapp", name="myapp"} 0x10 300 150 50 0x27 300 150 50 0x27 300 150 50 0x27 300 150 50 0x27 300 150 50 0x27 300 150 50 0x7`, false},
		{"growing but short", `workqueue_depth{` + target + `, controller="myapp", name="myapp"} 0+0.01x180`, false},
	},
	"SwitchboardSourceEventsDropped": {
		{"dropped for 20 minutes", `switchboard_source_events_total{` + target + `, source="http", controller="myapp", result="dropped"} 0+1x80`, true},
		{"a burst, then none", `switchboard_source_events_total{` + target + `, source="http", controller="myapp", result="dropped"} 0+1x10 10x70`, false},
		{"sent only", `switchboard_source_events_total{` + target + `, source="http", controller="myapp", result="sent"} 0+1x80
			switchboard_source_events_total{` + target + `, source="http", controller="myapp", result="dropped"} 0x80`, false},
	},
	"SwitchboardRollsFailing": {
		// Backoff doubles from 5 ms to about 17 minutes; a resync every 10 minutes retries too: the
		// counter of failed rolls then grows at least every 10 minutes.
		{"a roll that keeps failing", `switchboard_configmapwatcher_rolls_total{` + target + `, kind="Deployment", exported_namespace="shop", result="error"} 0 11 12 13 14 15 15x3 16 16x8 17 17x38 18 18x38 19 19x38 20 20x38 21 21x38 22
			switchboard_configmapwatcher_rolls_total{` + target + `, kind="Deployment", exported_namespace="shop", result="success"} 0+1x240`, true},
		{"one failure, then a roll", `switchboard_configmapwatcher_rolls_total{` + target + `, kind="Deployment", exported_namespace="shop", result="error"} 0x10 1x230
			switchboard_configmapwatcher_rolls_total{` + target + `, kind="Deployment", exported_namespace="shop", result="success"} 0x11 1x229`, false},
		{"rolls that succeed", `switchboard_configmapwatcher_rolls_total{` + target + `, kind="Deployment", exported_namespace="shop", result="error"} 0x240
			switchboard_configmapwatcher_rolls_total{` + target + `, kind="Deployment", exported_namespace="shop", result="success"} 0+1x240`, false},
		{"another operator's series", `switchboard_configmapwatcher_rolls_total{job="other", kind="Deployment", exported_namespace="shop", result="error"} 0+1x240`, false},
	},
	"SwitchboardWebhookPostsDropped": {
		{"a notification dropped", `switchboard_configmapwatcher_webhook_posts_total{` + target + `, result="dropped"} 0x20 1x40
			switchboard_configmapwatcher_webhook_posts_total{` + target + `, result="sent"} 0+1x60`, true},
		{"every notification sent", `switchboard_configmapwatcher_webhook_posts_total{` + target + `, result="dropped"} 0x60
			switchboard_configmapwatcher_webhook_posts_total{` + target + `, result="sent"} 0+1x60`, false},
		{"no webhook (served at 0)", `switchboard_configmapwatcher_webhook_posts_total{` + target + `, result="dropped"} 0x100`, false},
	},
	"SwitchboardPodResizesFailing": {
		{"a Pod evicted because its resize failed", `switchboard_verticalscaler_evictions_total{` + target + `, reason="ResizeFailed"} 0x20 1x40
			switchboard_verticalscaler_evictions_total{` + target + `, reason="Recreate"} 0x60`, true},
		{"evictions of Recreate only", `switchboard_verticalscaler_evictions_total{` + target + `, reason="ResizeFailed"} 0x60
			switchboard_verticalscaler_evictions_total{` + target + `, reason="Recreate"} 0+1x60`, false},
		{"another operator's series", `switchboard_verticalscaler_evictions_total{job="other", reason="ResizeFailed"} 0+1x60`, false},
	},
	"SwitchboardMetricsAPIUnavailable": {
		{"every read fails", `switchboard_verticalscaler_metrics_api_reads_total{` + target + `, result="error"} 0+1x80
			switchboard_verticalscaler_metrics_api_reads_total{` + target + `, result="success"} 20x80`, true},
		{"some reads fail", `switchboard_verticalscaler_metrics_api_reads_total{` + target + `, result="error"} 0+1x80
			switchboard_verticalscaler_metrics_api_reads_total{` + target + `, result="success"} 0+1x80`, false},
		{"no reads (the verticalscaler off)", `switchboard_verticalscaler_metrics_api_reads_total{` + target + `, result="error"} 0x80
			switchboard_verticalscaler_metrics_api_reads_total{` + target + `, result="success"} 0x80`, false},
	},
}

// TestAlertsFire evaluates each alert as Prometheus's rule manager does, every scrape interval
// over each history of alertCases with Prometheus's engine (and so with its `for`), and checks
// whether it fires.
func TestAlertsFire(t *testing.T) {
	groups, err := LoadAlerts(filepath.Join(root, AlertsFile), promParser)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
			cases := alertCases[r.Alert]
			if !slices.ContainsFunc(cases, func(c alertCase) bool { return c.fires }) || !slices.ContainsFunc(cases, func(c alertCase) bool { return !c.fires }) {
				t.Errorf("alert %s: no history where it fires and one where it does not in alertCases", r.Alert)
			}
			for _, c := range cases {
				t.Run(r.Alert+"/"+c.name, func(t *testing.T) {
					if got := fires(t, r, c.series); got != c.fires {
						t.Errorf("fires: %v, want %v", got, c.fires)
					}
				})
			}
		}
	}
	for name := range alertCases {
		if !slices.Contains(names, name) {
			t.Errorf("alertCases has histories for %s, which %s does not define", name, AlertsFile)
		}
	}
}

// fires evaluates rule every scrapeInterval from the first sample of series to the last, and
// says whether it fired at any of those times.
func fires(t *testing.T, rule rulefmt.Rule, series string) bool {
	t.Helper()
	storage := promqltest.LoadedStorage(t, "load "+scrapeInterval.String()+"\n"+series)
	engine := promqltest.NewTestEngine(t, false, 5*time.Minute, 1_000_000)
	expr, err := promParser.ParseExpr(rule.Expr)
	if err != nil {
		t.Fatal(err)
	}
	alerting := rules.NewAlertingRule(rule.Alert, expr, time.Duration(rule.For), time.Duration(rule.KeepFiringFor),
		labels.FromMap(rule.Labels), labels.FromMap(rule.Annotations), labels.EmptyLabels(), "", true, slog.New(slog.DiscardHandler))
	query := rules.EngineQueryFunc(engine, storage)
	external, err := url.Parse("http://prometheus.example")
	if err != nil {
		t.Fatal(err)
	}
	end := time.UnixMilli(storage.DB.Head().MaxTime())
	fired := false
	for ts := time.Unix(0, 0); !ts.After(end); ts = ts.Add(scrapeInterval) {
		if _, err := alerting.Eval(context.Background(), 0, ts, query, external, 0); err != nil {
			t.Fatalf("evaluating %s at %s: %v", rule.Alert, ts.UTC().Format(time.TimeOnly), err)
		}
		for _, a := range alerting.ActiveAlerts() {
			fired = fired || a.State == rules.StateFiring
		}
	}
	return fired
}
