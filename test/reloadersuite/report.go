package main

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

// specResult is one spec's outcome.
type specResult struct {
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
func (r specResult) key() string { return r.Suite + " " + r.Spec }

// readReport reads a Ginkgo JSON report of suite: the specs (It nodes), and the suite's own
// nodes (BeforeSuite, AfterSuite, ...) only when they did not pass, since a failed setup
// fails every spec.
func readReport(suite string, data []byte) ([]specResult, error) {
	var reports []ginkgoReport
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("reading the %s suite's report: %w", suite, err)
	}
	var out []specResult
	for _, report := range reports {
		for _, spec := range report.SpecReports {
			if spec.LeafNodeType != "It" && spec.State == "passed" {
				continue
			}
			name := strings.Join(append(slices.Clone(spec.ContainerHierarchyTexts), spec.LeafNodeText), " ")
			if spec.LeafNodeType != "It" {
				name = "[" + spec.LeafNodeType + "] " + name
			}
			r := specResult{Suite: suite, Spec: strings.TrimSpace(name), State: spec.State, Seconds: float64(spec.RunTime) / 1e9}
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

func tally(results []specResult) map[string]*counts {
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

// printResults writes one line per spec (PASS, FAIL or SKIP, the suite, the spec, the failure)
// and the totals per suite.
func printResults(w io.Writer, subject string, results []specResult) error {
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

// regressions are the specs baseline passed and subject did not (failed, skipped or absent).
func regressions(baseline, subject []specResult) []specResult {
	byKey := map[string]specResult{}
	for _, r := range subject {
		byKey[r.key()] = r
	}
	var out []specResult
	for _, b := range baseline {
		if b.State != "passed" {
			continue
		}
		s, ok := byKey[b.key()]
		if !ok {
			s = specResult{Suite: b.Suite, Spec: b.Spec, State: "absent"}
		}
		if s.State != "passed" {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b specResult) int { return cmp.Compare(a.key(), b.key()) })
	return out
}

func writeResults(path string, results []specResult) error {
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func readResults(path string) ([]specResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []specResult
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return out, nil
}
