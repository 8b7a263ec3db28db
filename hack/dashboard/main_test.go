package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFamilyFilter: the capture keeps the listed families' samples and HELP and TYPE lines, a
// histogram's by its name, and nothing of the others.
func TestFamilyFilter(t *testing.T) {
	page := `# HELP workqueue_depth Current depth.
# TYPE workqueue_depth gauge
workqueue_depth{controller="myapp"} 3
# HELP workqueue_adds_total Adds.
workqueue_adds_total{controller="myapp"} 7
# TYPE reconcile_time_seconds histogram
reconcile_time_seconds_bucket{le="0.1"} 1
reconcile_time_seconds_sum 0.05
reconcile_time_seconds_count 1
go_goroutines 40
`
	var kept []string
	keep := familyFilter("workqueue_depth, reconcile_time_seconds")
	for _, line := range strings.Split(page, "\n") {
		if keep(line) {
			kept = append(kept, line)
		}
	}
	want := []string{
		"# HELP workqueue_depth Current depth.", "# TYPE workqueue_depth gauge", `workqueue_depth{controller="myapp"} 3`,
		"# TYPE reconcile_time_seconds histogram", `reconcile_time_seconds_bucket{le="0.1"} 1`, "reconcile_time_seconds_sum 0.05", "reconcile_time_seconds_count 1",
	}
	if diff := cmp.Diff(want, kept); diff != "" {
		t.Errorf("kept lines (-want +got):\n%s", diff)
	}
	all := familyFilter("")
	if !all("go_goroutines 40") || all("") || all("# a comment") {
		t.Error("with no families, every sample and no blank line or comment is kept")
	}
}
