package monitoring

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/promql"
)

// TestLoadCaptureAsPrometheusStores: a capture is stored as Prometheus's scrape loop stores
// scrapes: the target's labels on every series (a scraped label of the same name kept as
// exported_<name>), up 1 or 0, and a staleness marker when a series goes away or the scrape
// fails, so that a killed replica's series end at once instead of lasting the lookback.
func TestLoadCaptureAsPrometheusStores(t *testing.T) {
	const capture = `# SCRAPE replica-a 0
# TYPE rolls_total counter
rolls_total{namespace="shop"} 1
leader{controller="myapp"} 1
# SCRAPE replica-a 10000
rolls_total{namespace="shop"} 3
leader{controller="myapp"} 1
# SCRAPE replica-a 20000 down
# SCRAPE replica-a 30000
rolls_total{namespace="shop"} 3
`
	path := filepath.Join(t.TempDir(), "scrapes.txt")
	if err := os.WriteFile(path, []byte(capture), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCapture(path, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.DB.Close()
	if c.Start != time.UnixMilli(0) || c.End != time.UnixMilli(30000) || c.Interval != 10*time.Second || !cmp.Equal(c.Replicas, []string{"replica-a"}) {
		t.Errorf("capture from %s to %s every %s of %v", c.Start, c.End, c.Interval, c.Replicas)
	}
	engine := NewEngine()
	for _, tc := range []struct {
		expr string
		want string
	}{
		{`rolls_total`, `{__name__="rolls_total", exported_namespace="shop", instance="replica-a", job="switchboard", namespace="switchboard-system", pod="replica-a"} 0:1 10:3 30:3`},
		{`leader`, `{__name__="leader", controller="myapp", instance="replica-a", job="switchboard", namespace="switchboard-system", pod="replica-a"} 0:1 10:1`},
		{`up`, `{__name__="up", instance="replica-a", job="switchboard", namespace="switchboard-system", pod="replica-a"} 0:1 10:1 20:0 30:1`},
	} {
		m, err := QueryRange(context.Background(), engine, c.DB, tc.expr, c.Start, c.End, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, render(m)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.expr, diff)
		}
	}
}

// render writes a matrix as "labels t:v t:v", times in seconds, a series a line.
func render(m promql.Matrix) string {
	var lines []string
	for _, s := range m {
		line := s.Metric.String()
		for _, p := range s.Floats {
			line += fmt.Sprintf(" %d:%g", p.T/1000, p.F)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// TestLoadCaptureRefusesBadFiles: a header that is not one, or scrapes out of time order, are
// refused with the line named.
func TestLoadCaptureRefusesBadFiles(t *testing.T) {
	for _, tc := range []struct{ capture, want string }{
		{"# SCRAPE replica-a\n", "line 1"},
		{"# SCRAPE replica-a 10 up\n", "line 1"},
		{"# SCRAPE replica-a 20\nx 1\n# SCRAPE replica-a 10\nx 1\n", "line 3: scrapes out of time order"},
		{"", "no scrapes"},
	} {
		path := filepath.Join(t.TempDir(), "scrapes.txt")
		if err := os.WriteFile(path, []byte(tc.capture), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadCapture(path, t.TempDir()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadCapture(%q) = %v, want an error with %q", tc.capture, err, tc.want)
		}
	}
}
