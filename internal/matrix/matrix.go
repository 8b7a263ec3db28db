// Package matrix is what `make test-e2e-matrix` records of each Kubernetes minor it runs the
// end-to-end suite on (the API server's version, the optional APIs it serves, what the manager
// said it does without the others, and whether the suite passed), and the table of minors of
// docs/operations/install.md that hack/docgen makes from those records.
package matrix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Minor is what the end-to-end suite found on one Kubernetes minor.
type Minor struct {
	// Kubernetes is the API server's version, v1.34.4 for example.
	Kubernetes string `json:"kubernetes"`
	// Date is the day of the run, 2026-12-06 for example.
	Date string `json:"date"`
	// MutatingAdmissionPolicy is the version of MutatingAdmissionPolicy served (v1, v1beta1),
	// empty for none.
	MutatingAdmissionPolicy string `json:"mutatingAdmissionPolicy"`
	// PodResize says whether pods/resize is served.
	PodResize bool `json:"podResize"`
	// Fallbacks are what the manager said, at start, it does without the APIs not served.
	Fallbacks []Fallback `json:"fallbacks"`
	// Suite is the end-to-end suite's result on the minor: "passed" or "failed"; empty when
	// the record has none (a run of some of the tests, or one that did not finish).
	Suite string `json:"-"`
}

// Fallback is one line of the manager's log at start: a controller, the feature it does
// without, and what it does instead.
type Fallback struct {
	Controller string `json:"controller"`
	Feature    string `json:"feature"`
	Instead    string `json:"instead"`
}

// Suite results, as the make target records them in MINOR.result.
const (
	Passed = "passed"
	Failed = "failed"
)

// minorOf is "1.34" of v1.34.4.
func minorOf(version string) (string, error) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", fmt.Errorf("the version %q is not vMAJOR.MINOR[.PATCH]", version)
	}
	return parts[0] + "." + parts[1], nil
}

// WriteMinor writes m to dir as MINOR.json (1.34.json).
func WriteMinor(dir string, m Minor) error {
	minor, err := minorOf(m.Kubernetes)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, minor+".json"), append(data, '\n'), 0o644)
}

// Read returns the minors recorded in dir, oldest first: each MINOR.json, with the suite's
// result from MINOR.result where the make target wrote one.
func Read(dir string) ([]Minor, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no MINOR.json in %s: make test-e2e-matrix writes them", dir)
	}
	var out []Minor
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var m Minor
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		minor, err := minorOf(m.Kubernetes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if want := minor + ".json"; filepath.Base(f) != want {
			return nil, fmt.Errorf("%s records %s: want it in %s", f, m.Kubernetes, want)
		}
		result, err := os.ReadFile(filepath.Join(dir, minor+".result"))
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			m.Suite = strings.TrimSpace(string(result))
			if m.Suite != Passed && m.Suite != Failed {
				return nil, fmt.Errorf("%s.result says %q: want %s or %s", minor, m.Suite, Passed, Failed)
			}
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Minor) int { return compareVersions(a.Kubernetes, b.Kubernetes) })
	return out, nil
}

// compareVersions orders vMAJOR.MINOR.PATCH numerically.
func compareVersions(a, b string) int {
	var x, y [3]int
	_, _ = fmt.Sscanf(strings.TrimPrefix(a, "v"), "%d.%d.%d", &x[0], &x[1], &x[2])
	_, _ = fmt.Sscanf(strings.TrimPrefix(b, "v"), "%d.%d.%d", &y[0], &y[1], &y[2])
	return slices.Compare(x[:], y[:])
}

// WriteTable writes the table of minors: per minor, the suite's result and day, the optional
// APIs served, and what each controller said it does without the others.
func WriteTable(w *bytes.Buffer, minors []Minor) {
	w.WriteString("| Kubernetes | end-to-end suite | MutatingAdmissionPolicy | pods/resize | what the manager does without them |\n")
	w.WriteString("|---|---|---|---|---|\n")
	for _, m := range minors {
		suite := m.Suite
		if suite == "" {
			suite = "no result recorded"
		}
		policy := m.MutatingAdmissionPolicy
		if policy == "" {
			policy = "not served"
		}
		resize := "served"
		if !m.PodResize {
			resize = "not served"
		}
		instead := "nothing: every optional API is served"
		if len(m.Fallbacks) > 0 {
			var parts []string
			for _, f := range m.Fallbacks {
				parts = append(parts, fmt.Sprintf("**%s** without %s: %s", f.Controller, f.Feature, f.Instead))
			}
			instead = strings.Join(parts, "<br>")
		}
		fmt.Fprintf(w, "| %s | %s on %s | %s | %s | %s |\n", m.Kubernetes, suite, m.Date, policy, resize, instead)
	}
}
