// Package suitereport reads the JSON reports of the Ginkgo suites that compatibility runs take
// from other projects (Reloader's and the VPA's end-to-end suites), prints their per-spec
// outcome, and compares a run with a baseline run.
package suitereport

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// ginkgoReport is the part of Ginkgo's JSON report (types.Report) the runner reads.
type ginkgoReport struct {
	SuiteDescription string `json:"SuiteDescription"`
	SpecReports      []struct {
		ContainerHierarchyTexts []string `json:"ContainerHierarchyTexts"`
		LeafNodeType            string   `json:"LeafNodeType"`
		LeafNodeText            string   `json:"LeafNodeText"`
		State                   string   `json:"State"`
		RunTime                 int64    `json:"RunTime"`
		Failure                 struct {
			Message  string `json:"Message"`
			Location struct {
				FileName   string `json:"FileName"`
				LineNumber int    `json:"LineNumber"`
			} `json:"Location"`
		} `json:"Failure"`
	} `json:"SpecReports"`
}

// Result is one spec's outcome.
type Result struct {
	Suite string `json:"suite"`
	Spec  string `json:"spec"`
	// State is Ginkgo's: passed, failed, skipped, pending, panicked, timedout, interrupted,
	// aborted.
	State   string  `json:"state"`
	Seconds float64 `json:"seconds"`
	// Failure is the failure's message and place, for a spec that did not pass or skip.
	Failure string `json:"failure,omitempty"`
}

// key identifies a spec across runs.
func (r Result) key() string { return r.Suite + " " + r.Spec }

// ReadGinkgoReport reads a Ginkgo JSON report of suite: the specs (It nodes), and the suite's own
// nodes (BeforeSuite, AfterSuite, ...) only when they did not pass, since a failed setup
// fails every spec.
func ReadGinkgoReport(suite string, data []byte) ([]Result, error) {
	var reports []ginkgoReport
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("reading the %s suite's report: %w", suite, err)
	}
	var out []Result
	for _, report := range reports {
		for _, spec := range report.SpecReports {
			if spec.LeafNodeType != "It" && spec.State == "passed" {
				continue
			}
			name := strings.Join(append(slices.Clone(spec.ContainerHierarchyTexts), spec.LeafNodeText), " ")
			if spec.LeafNodeType != "It" {
				name = "[" + spec.LeafNodeType + "] " + name
			}
			r := Result{Suite: suite, Spec: strings.TrimSpace(name), State: spec.State, Seconds: float64(spec.RunTime) / 1e9}
			if spec.State != "passed" && spec.State != "skipped" && spec.State != "pending" {
				r.Failure = fmt.Sprintf("%s (%s:%d)", firstLine(spec.Failure.Message), spec.Failure.Location.FileName, spec.Failure.Location.LineNumber)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// counts are a suite's totals.
type counts struct{ passed, failed, skipped int }

func tally(results []Result) map[string]*counts {
	out := map[string]*counts{}
	for _, r := range results {
		c := out[r.Suite]
		if c == nil {
			c = &counts{}
			out[r.Suite] = c
		}
		switch r.State {
		case "passed":
			c.passed++
		case "skipped", "pending":
			c.skipped++
		default:
			c.failed++
		}
	}
	return out
}

// Print writes one line per spec (PASS, FAIL or SKIP, the suite, the spec, the failure)
// and the totals per suite.
func Print(w io.Writer, subject string, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range results {
		state := map[string]string{"passed": "PASS", "skipped": "SKIP", "pending": "SKIP"}[r.State]
		if state == "" {
			state = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", state, r.Suite, r.Spec, r.Failure)
	}
	fmt.Fprintf(tw, "\n%s\tsuite\tpassed\tfailed\tskipped\n", subject)
	t := tally(results)
	for _, suite := range sortedKeys(t) {
		c := t[suite]
		fmt.Fprintf(tw, "\t%s\t%d\t%d\t%d\n", suite, c.passed, c.failed, c.skipped)
	}
	return tw.Flush()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Regressions are the specs baseline passed and subject did not (failed, skipped or absent).
func Regressions(baseline, subject []Result) []Result {
	byKey := map[string]Result{}
	for _, r := range subject {
		byKey[r.key()] = r
	}
	var out []Result
	for _, b := range baseline {
		if b.State != "passed" {
			continue
		}
		s, ok := byKey[b.key()]
		if !ok {
			s = Result{Suite: b.Suite, Spec: b.Spec, State: "absent"}
		}
		if s.State != "passed" {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Result) int { return cmp.Compare(a.key(), b.key()) })
	return out
}

// Write writes results to path as JSON, which Read reads back.
func Write(path string, results []Result) error {
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Read reads the results Write wrote to path.
func Read(path string) ([]Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Result
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return out, nil
}

// CompareWith prints the specs the baseline passed and results did not, and fails when there
// is one.
func CompareWith(baselinePath string, results []Result) error {
	baseline, err := Read(baselinePath)
	if err != nil {
		return err
	}
	missed := Regressions(baseline, results)
	fmt.Printf("\nSpecs the baseline (%s) passed and this run did not: %d\n", baselinePath, len(missed))
	for _, r := range missed {
		fmt.Printf("  %s\t%s\t%s\t%s\n", r.State, r.Suite, r.Spec, r.Failure)
	}
	if len(missed) > 0 {
		return fmt.Errorf("%d specs the baseline passed did not pass", len(missed))
	}
	return nil
}
