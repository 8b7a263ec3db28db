package loganalysis

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/example/switchboard/internal/loganalysis/loggen"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/logs from the analyzer's output")

// captures are the real manager logs in testdata/logs.
func captures(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../testdata/logs/*.log*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured logs in testdata/logs (%v)", err)
	}
	return files
}

// summarize runs summary over in with no filter.
func summarize(t *testing.T, in io.Reader) Report {
	t.Helper()
	s := newSummary(filter{minLevel: -128})
	r := newReader()
	if err := r.each(in, s.add); err != nil {
		t.Fatal(err)
	}
	s.counts.TooLong = r.tooLong
	return s.report(errorGroups)
}

// TestSummaryGolden runs `manager logs summary` over testdata/logs in both formats; -update
// rewrites the golden files.
func TestSummaryGolden(t *testing.T) {
	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"summary", "--output", format}, captures(t)...)
			if code := run(args, nil, &stdout, &stderr, time.Now()); code != exitOK {
				t.Fatalf("exit status %d: %s", code, stderr.String())
			}
			golden := "../../testdata/logs/summary.golden"
			if format == "json" {
				golden = "../../testdata/logs/summary.json.golden"
			}
			if *update {
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), stdout.String()); diff != "" {
				t.Errorf("summary differs from %s (-want +got); if the change is right, run with -update:\n%s", golden, diff)
			}
		})
	}
}

// TestSummaryCaptureFigures checks the analyzer's figures on the captured logs against counts
// made independently with encoding/json, line by line.
func TestSummaryCaptureFigures(t *testing.T) {
	for _, file := range captures(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			type figures struct {
				Lines, Reconciles, Errors uint64
				MaxMs                     float64
			}
			want := map[string]*figures{}
			objectErrors := map[string]uint64{}
			var read, notJSON uint64
			data := readCapture(t, file)
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, maxLine)
			for sc.Scan() {
				read++
				var m map[string]any
				if json.Unmarshal(sc.Bytes(), &m) != nil {
					notJSON++
					continue
				}
				controller, _ := m["controller"].(string)
				if controller == "" {
					continue
				}
				f := want[controller]
				if f == nil {
					f = &figures{}
					want[controller] = f
				}
				f.Lines++
				switch m["msg"] {
				case MsgReconcileEnd:
					f.Reconciles++
					f.MaxMs = math.Max(f.MaxMs, m["durationMs"].(float64))
				case MsgReconcilerError:
					f.Errors++
					objectErrors[fmt.Sprintf("%s %s/%s", controller, m["namespace"], m["name"])]++
				}
			}

			r := summarize(t, bytes.NewReader(data))
			if r.Lines.Read != read || r.Lines.NotJSON != notJSON {
				t.Errorf("read %d lines, %d not JSON; encoding/json read %d, %d not JSON", r.Lines.Read, r.Lines.NotJSON, read, notJSON)
			}
			got := map[string]*figures{}
			for _, c := range r.Controllers {
				f := &figures{Lines: c.Lines, Errors: c.Errors}
				if c.Reconciles != nil {
					f.Reconciles, f.MaxMs = *c.Reconciles, c.DurationMs.Max
				}
				got[c.Controller] = f
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("per-controller figures (-encoding/json +analyzer):\n%s", diff)
			}
			gotObjects := map[string]uint64{}
			for _, o := range r.TopObjects {
				gotObjects[o.Controller+" "+o.Object] = o.Errors
			}
			if diff := cmp.Diff(objectErrors, gotObjects, cmpEmptyMaps); diff != "" {
				t.Errorf("errors per object (-encoding/json +analyzer):\n%s", diff)
			}
		})
	}
}

// readCapture reads a captured log, gunzipping a .gz one (the e2e captures are compressed).
func readCapture(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(file, ".gz") {
		return data
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	data, err = io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var cmpEmptyMaps = cmp.FilterValues(func(a, b map[string]uint64) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

// TestSummaryMatchesGeneratedLog checks the figures against what loggen says it wrote.
func TestSummaryMatchesGeneratedLog(t *testing.T) {
	var log bytes.Buffer
	truth, err := loggen.Write(&log, 4<<20, 7)
	if err != nil {
		t.Fatal(err)
	}
	r := summarize(t, &log)

	if r.Lines.Read != truth.Lines || r.Lines.NotJSON != truth.NotJSON || r.Lines.Incomplete != 0 {
		t.Errorf("lines %+v; generated %d lines, %d not JSON", r.Lines, truth.Lines, truth.NotJSON)
	}
	want := map[string]loggen.ControllerTruth{}
	for name, c := range truth.Controllers {
		want[name] = *c
	}
	got := map[string]loggen.ControllerTruth{}
	for _, c := range r.Controllers {
		got[c.Controller] = loggen.ControllerTruth{Reconciles: *c.Reconciles, Errors: c.Errors, Terminal: c.TerminalErrors, MaxMs: c.DurationMs.Max}
		if n := c.Results["error"] + c.Results["terminal-error"]; n != c.Errors {
			t.Errorf("%s: %d reconcile ends with an error result, %d Reconciler error lines", c.Controller, n, c.Errors)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("per-controller figures (-generated +analyzed):\n%s", diff)
	}
	// loggen's 5 error templates, with their names, numbers and UUIDs folded, are 5 groups per
	// controller.
	var grouped uint64
	for _, g := range r.TopErrors {
		grouped += g.Count
		if !g.Exact {
			t.Errorf("group %q is an estimate; with %d groups every count should be exact", g.Message, len(r.TopErrors))
		}
	}
	if len(r.TopErrors) != 5*len(loggen.Controllers) || grouped != r.ErrorLines {
		t.Errorf("%d error groups holding %d of %d error lines, want %d groups holding all:\n%+v",
			len(r.TopErrors), grouped, r.ErrorLines, 5*len(loggen.Controllers), r.TopErrors)
	}
}

// TestSummaryBoundsControllers feeds more controllers than are counted apart.
func TestSummaryBoundsControllers(t *testing.T) {
	var log strings.Builder
	for i := range maxControllers + 44 {
		fmt.Fprintf(&log, `{"level":"info","ts":"2026-11-30T05:00:00Z","msg":"m","controller":"c%d"}`+"\n", i)
	}
	fmt.Fprintf(&log, `{"level":"info","ts":"2026-11-30T05:00:00Z","msg":"m","controller":"c0"}`+"\n")
	r := summarize(t, strings.NewReader(log.String()))
	if len(r.Controllers) != maxControllers+1 {
		t.Fatalf("%d controllers reported, want %d and %q", len(r.Controllers), maxControllers, otherControllers)
	}
	if first, last := r.Controllers[0], r.Controllers[maxControllers]; first.Controller != "c0" || first.Lines != 2 ||
		last.Controller != otherControllers || last.Lines != 44 {
		t.Errorf("first row %s with %d lines, last %s with %d; want c0 with 2, %s with 44", first.Controller, first.Lines,
			last.Controller, last.Lines, otherControllers)
	}
}

func TestSummaryFilters(t *testing.T) {
	log := strings.Join([]string{
		`{"level":"debug","ts":"2026-11-30T05:00:00Z","msg":"Reconcile finished","controller":"a","durationMs":1,"result":"success"}`,
		`{"level":"error","ts":"2026-11-30T05:10:00Z","msg":"Reconciler error","controller":"a","namespace":"n","name":"x","error":"boom"}`,
		`{"level":"info","ts":"2026-11-30T05:20:00Z","msg":"Starting manager"}`,
		`{"level":"error","ts":"2026-11-30T05:30:00Z","msg":"Reconciler error","controller":"b","namespace":"n","name":"y","error":"terminal error: bad spec"}`,
	}, "\n")
	now := time.Date(2026, 11, 30, 5, 35, 0, 0, time.UTC)
	tests := []struct {
		args       []string
		wantUsed   uint64
		wantErrors map[string]uint64 // per controller
	}{
		{nil, 4, map[string]uint64{"a": 1, "b": 1}},
		{[]string{"--controller", "b"}, 1, map[string]uint64{"b": 1}},
		{[]string{"--controller", "a,b"}, 3, map[string]uint64{"a": 1, "b": 1}},
		{[]string{"--level", "error"}, 2, map[string]uint64{"a": 1, "b": 1}},
		{[]string{"--since", "2026-11-30T05:10:00Z"}, 3, map[string]uint64{"a": 1, "b": 1}},
		{[]string{"--until", "2026-11-30T05:10:00Z"}, 2, map[string]uint64{"a": 1}},
		{[]string{"--since", "10m"}, 1, map[string]uint64{"b": 1}}, // ten minutes before now
		{[]string{"--since", "2026-11-30T06:10:00+01:00", "--until", "2026-11-30T05:20:00Z"}, 2, map[string]uint64{"a": 1}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"summary", "--output", "json"}, tt.args...)
			if code := run(args, strings.NewReader(log), &stdout, &stderr, now); code != exitOK {
				t.Fatalf("exit status %d: %s", code, stderr.String())
			}
			var r Report
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			gotErrors := map[string]uint64{}
			for _, c := range r.Controllers {
				gotErrors[c.Controller] = c.Errors
			}
			if r.Lines.Used != tt.wantUsed || r.Lines.FilteredOut != 4-tt.wantUsed || !cmp.Equal(gotErrors, tt.wantErrors) {
				t.Errorf("used %d, filtered out %d, errors %v; want used %d, errors %v", r.Lines.Used, r.Lines.FilteredOut,
					gotErrors, tt.wantUsed, tt.wantErrors)
			}
		})
	}
}

func TestSummaryTerminalErrorsAndRates(t *testing.T) {
	log := strings.Join([]string{
		`{"level":"debug","ts":"2026-11-30T05:00:00Z","msg":"Reconcile finished","controller":"a","durationMs":2,"result":"success"}`,
		`{"level":"debug","ts":"2026-11-30T05:00:01Z","msg":"Reconcile finished","controller":"a","durationMs":4,"result":"terminal-error"}`,
		`{"level":"error","ts":"2026-11-30T05:00:01Z","msg":"Reconciler error","controller":"a","namespace":"n","name":"x","error":"validating: terminal error: bad spec"}`,
		`{"level":"debug","ts":"2026-11-30T05:00:02Z","msg":"Reconcile finished","controller":"a","durationMs":6,"result":"error"}`,
		`{"level":"error","ts":"2026-11-30T05:00:02Z","msg":"Reconciler error","controller":"a","namespace":"n","name":"x","error":"boom"}`,
		`{"level":"debug","ts":"2026-11-30T05:00:03Z","msg":"Reconcile finished","controller":"a","durationMs":"oops","result":"success"}`,
		`{"level":"error","ts":"2026-11-30T05:00:04Z","msg":"Creating manager failed","error":"no kubeconfig"}`,
	}, "\n")
	r := summarize(t, strings.NewReader(log))
	want := []ControllerReport{{Controller: "a", Lines: 6, Reconciles: new(uint64(3)),
		Results: map[string]uint64{"success": 1, "terminal-error": 1, "error": 1}, Errors: 2, TerminalErrors: 1,
		ErrorRate: new(2.0 / 3), DurationMs: &Durations{P50: 4, P95: 6, Max: 6},
		First: "2026-11-30T05:00:00Z", Last: "2026-11-30T05:00:03Z"}}
	if diff := cmp.Diff(want, r.Controllers, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= sketchAlpha*math.Abs(b) })); diff != "" {
		t.Errorf("controllers (-want +got):\n%s", diff)
	}
	wantErrors := []ErrorGroup{
		{Count: 1, Exact: true, Controller: "", Message: "Creating manager failed: no kubeconfig", Example: "no kubeconfig"},
		{Count: 1, Exact: true, Controller: "a", Message: "boom", Example: "boom"},
		{Count: 1, Exact: true, Controller: "a", Message: "validating: terminal error: bad spec", Example: "validating: terminal error: bad spec"},
	}
	if diff := cmp.Diff(wantErrors, r.TopErrors); diff != "" {
		t.Errorf("top errors (-want +got):\n%s", diff)
	}
}

// TestSummaryBoundsResultsAndExamples feeds more distinct results than are counted apart, and
// an error message longer than an example keeps.
func TestSummaryBoundsResultsAndExamples(t *testing.T) {
	var log strings.Builder
	for i := range maxResults + 3 {
		fmt.Fprintf(&log, `{"level":"debug","ts":"2026-11-30T05:00:00Z","msg":"Reconcile finished","controller":"a","durationMs":1,"result":"r%d"}`+"\n", i)
	}
	long := strings.Repeat("é", maxExample) // 2 bytes each: the cut falls inside a rune
	fmt.Fprintf(&log, `{"level":"error","ts":"2026-11-30T05:00:00Z","msg":"Reconciler error","controller":"a","error":"%s"}`+"\n", long)
	r := summarize(t, strings.NewReader(log.String()))

	results := r.Controllers[0].Results
	if len(results) != maxResults+1 || results[otherResult] != 3 {
		t.Errorf("%d results with %d under %q, want %d and 3", len(results), results[otherResult], otherResult, maxResults+1)
	}
	example := r.TopErrors[0].Example
	if want := strings.Repeat("é", maxExample/2) + "…"; example != want {
		t.Errorf("example is %d bytes, want the first %d bytes of the message, cut on a rune boundary, and …", len(example), maxExample)
	}
}
