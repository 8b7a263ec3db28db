package monitoring

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/promql/parser"
)

// root is the repository's root, from this module's directory.
var root = filepath.Join("..", "..")

// promParser is Prometheus's PromQL parser with its default options, as a Prometheus server
// without feature flags parses queries and rules.
var promParser = parser.NewParser(parser.Options{})

// dashboardValues are the values the tests give the dashboard's query variables: the job label
// of config/prometheus's ServiceMonitor, and every controller.
var dashboardValues = map[string]string{"job": "switchboard", "controller": ".*"}

// prometheusOwn are the metrics Prometheus itself records for each target: the manager does not
// serve them.
var prometheusOwn = []string{"up"}

func loadDashboard(t *testing.T) *Dashboard {
	t.Helper()
	d, err := LoadDashboard(filepath.Join(root, DashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// query is one PromQL expression of the dashboard or the alerts, and where it is.
type query struct {
	where string
	expr  parser.Expr
}

// dashboardQueries parses every query of the dashboard (its panels' and the metric selectors of
// its variables' label_values) with the variables expanded, failing the test for each that does
// not parse.
func dashboardQueries(t *testing.T, d *Dashboard) []query {
	t.Helper()
	var out []query
	parse := func(where, text string) {
		expanded, err := Expand(text, time.Minute, dashboardValues)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			return
		}
		expr, err := promParser.ParseExpr(expanded)
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", where, expanded, err)
			return
		}
		out = append(out, query{where, expr})
	}
	for _, p := range d.Panels {
		for _, target := range p.Targets {
			parse("panel "+p.Title+" query "+target.RefID, target.Expr)
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.+), *(\w+)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(selector, label)", v.Name, v.Definition)
			continue
		}
		parse("variable "+v.Name, m[1])
	}
	return out
}

// alertQueries parses every rule of the alerts, failing the test when Prometheus's rule file
// parser refuses the file.
func alertQueries(t *testing.T) []query {
	t.Helper()
	groups, err := LoadAlerts(filepath.Join(root, AlertsFile), promParser)
	if err != nil {
		t.Fatal(err)
	}
	var out []query
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			expr, err := promParser.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("alert %s: %v", r.Alert, err)
			}
			out = append(out, query{"alert " + r.Alert, expr})
		}
	}
	return out
}

// TestDashboardQueriesParse: every query of the dashboard parses with Prometheus's parser once
// Grafana has put in the variables' values, and uses only variables the dashboard defines.
func TestDashboardQueriesParse(t *testing.T) {
	d := loadDashboard(t)
	if got := len(dashboardQueries(t, d)); got == 0 {
		t.Fatal("the dashboard has no queries")
	}
	var defined []string
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			defined = append(defined, v.Name)
		}
	}
	var given []string
	for name := range dashboardValues {
		given = append(given, name)
	}
	slices.Sort(defined)
	slices.Sort(given)
	if diff := cmp.Diff(given, defined); diff != "" {
		t.Errorf("the dashboard's query variables against the test's values (-test +dashboard):\n%s", diff)
	}
}

// TestAlertsParse: Prometheus's rule file parser accepts the PrometheusRule's groups (every
// expression, duration and annotation template), and every alert has a severity, a summary and
// a runbook.
func TestAlertsParse(t *testing.T) {
	groups, err := LoadAlerts(filepath.Join(root, AlertsFile), promParser)
	if err != nil {
		t.Fatal(err)
	}
	var alerts int
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts++
			if r.Alert == "" {
				t.Errorf("group %s has a recording rule %s: the file holds alerts only", g.Name, r.Record)
			}
			if !slices.Contains([]string{"warning", "critical"}, r.Labels["severity"]) {
				t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("alert %s has no %s", r.Alert, a)
				}
			}
		}
	}
	if alerts == 0 {
		t.Fatal("no alerts")
	}
}

// TestNamedMetricsAreDocumented: every metric the dashboard and the alerts select is a row of
// docs/operations/metrics.md (a histogram's _bucket, _sum and _count series by the histogram's
// row), or one Prometheus records itself. The manager's own test (controllers/metrics_doc_test.go)
// fails when the page lists a metric a running manager does not serve: together, every metric
// named here is served.
func TestNamedMetricsAreDocumented(t *testing.T) {
	documented := documentedMetrics(t)
	queries := append(dashboardQueries(t, loadDashboard(t)), alertQueries(t)...)
	for _, q := range queries {
		for _, name := range SelectedMetrics(q.expr) {
			if !servedAs(name, documented) && !slices.Contains(prometheusOwn, name) {
				t.Errorf("%s selects %s, which %s does not list", q.where, name, MetricsPage)
			}
		}
	}
}

// servedAs says whether a series name is one of the documented families: the family itself, or
// a series of a documented histogram.
func servedAs(name string, documented map[string]string) bool {
	if _, ok := documented[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && documented[base] == "histogram" {
			return true
		}
	}
	return false
}

// metricRow is a row of the metrics page's tables: the name in backquotes, then the type.
var metricRow = regexp.MustCompile("^\\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \\| ([a-z]+) \\|")

// documentedMetrics returns the metrics of docs/operations/metrics.md, by name, with their type.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, MetricsPage))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if m := metricRow.FindStringSubmatch(s.Text()); m != nil {
			out[m[1]] = m[2]
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no metric rows", MetricsPage)
	}
	return out
}

// TestDashboardLayout: the panels sit on Grafana's grid without overlapping, every query reads
// the dashboard's data source variable, and ids and query letters are unique.
func TestDashboardLayout(t *testing.T) {
	d := loadDashboard(t)
	ids := map[int]string{}
	for i, p := range d.Panels {
		if prev, ok := ids[p.ID]; ok {
			t.Errorf("panels %q and %q share the id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.X < 0 || g.W <= 0 || g.H <= 0 || g.X+g.W > GridColumns {
			t.Errorf("panel %q at %+v: outside the %d columns", p.Title, g, GridColumns)
		}
		for _, q := range d.Panels[:i] {
			if overlap(p.GridPos, q.GridPos) {
				t.Errorf("panels %q and %q overlap", p.Title, q.Title)
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 || p.Description == "" {
			t.Errorf("panel %q: data source %+v, %d queries, description %q; want ${datasource}, queries and a description", p.Title, p.Datasource, len(p.Targets), p.Description)
		}
		refs := map[string]bool{}
		for _, target := range p.Targets {
			if refs[target.RefID] || target.Datasource.UID != "${datasource}" || target.LegendFormat == "" {
				t.Errorf("panel %q query %q: a unique refId, the ${datasource} data source and a legend, got %+v", p.Title, target.RefID, target)
			}
			refs[target.RefID] = true
		}
	}
}

func overlap(a, b GridPos) bool {
	return a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H
}
