// Package monitoring reads Switchboard's Grafana dashboard (config/grafana) and alerts
// (config/alerts), for the tests that check them with Prometheus's own parser and engine and for
// the program that draws the dashboard's picture (./picture). It is a Go module of its own, so
// that the manager's go.mod does not carry Prometheus.
package monitoring

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// The files this package reads, relative to the repository's root.
var (
	DashboardFile = filepath.Join("config", "grafana", "switchboard.json")
	AlertsFile    = filepath.Join("config", "alerts", "alerts.yaml")
	MetricsPage   = filepath.Join("docs", "operations", "metrics.md")
)

// Dashboard is what this package reads of a Grafana dashboard.
type Dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel: a row (Type "row") or a visualisation with queries.
type Panel struct {
	ID          int        `json:"id"`
	Type        string     `json:"type"`
	Title       string     `json:"title"`
	Description string     `json:"description"`
	GridPos     GridPos    `json:"gridPos"`
	Datasource  Datasource `json:"datasource"`
	Targets     []Target   `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

// GridPos places a panel on Grafana's grid: 24 columns, rows of 30 pixels.
type GridPos struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"w"`
	H int `json:"h"`
}

// GridColumns is the width of Grafana's grid.
const GridColumns = 24

// Datasource names a panel's or a query's data source.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one query of a panel.
type Target struct {
	Expr         string     `json:"expr"`
	LegendFormat string     `json:"legendFormat"`
	RefID        string     `json:"refId"`
	Datasource   Datasource `json:"datasource"`
}

// Variable is a template variable of the dashboard.
type Variable struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Definition string `json:"definition"`
	IncludeAll bool   `json:"includeAll"`
	AllValue   string `json:"allValue"`
}

// LoadDashboard reads a dashboard's JSON.
func LoadDashboard(path string) (*Dashboard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}

// legendVariable is a {{label}} of a legend format.
var legendVariable = regexp.MustCompile(`\{\{\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\}\}`)

// variableRef is a reference to a dashboard variable in a query: $name or ${name}.
var variableRef = regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)`)

// Expand replaces the variables of a query as Grafana does before it sends it: $__rate_interval
// by rateInterval, and every other $name or ${name} by values[name]. It fails on a variable
// without a value.
func Expand(expr string, rateInterval time.Duration, values map[string]string) (string, error) {
	var missing []string
	out := variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		name := strings.Trim(ref, "${}")
		if name == "__rate_interval" {
			return model.Duration(rateInterval).String()
		}
		value, ok := values[name]
		if !ok {
			missing = append(missing, ref)
		}
		return value
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no value for %s in %q", strings.Join(missing, ", "), expr)
	}
	return out, nil
}

// LoadAlerts reads the rule groups of a PrometheusRule manifest, validated by Prometheus's own
// rule file parser (which parses every expression and annotation template), with parser p.
func LoadAlerts(path string, p parser.Parser) (*rulefmt.RuleGroups, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var manifest struct {
		Kind string    `yaml:"kind"`
		Spec yaml.Node `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &manifest); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if manifest.Kind != "PrometheusRule" {
		return nil, fmt.Errorf("%s is a %q, not a PrometheusRule", path, manifest.Kind)
	}
	spec, err := yaml.Marshal(&manifest.Spec)
	if err != nil {
		return nil, err
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, p, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		return nil, fmt.Errorf("%s: %s", path, strings.Join(msgs, "; "))
	}
	return groups, nil
}

// SelectedMetrics returns the metric names an expression selects, each once, in order.
func SelectedMetrics(expr parser.Expr) []string {
	var names []string
	seen := map[string]bool{}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name != "" && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
		return nil
	})
	return names
}
