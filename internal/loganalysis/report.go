package loganalysis

import (
	"encoding/json"
	"io"
	"math"
	"strings"
)

// Report is the result of summary, as --output json prints it.
type Report struct {
	Lines Counts `json:"lines"`
	// Levels counts the lines used by level name.
	Levels map[string]uint64 `json:"levels"`
	// From and To are the first and last times of the lines used (RFC 3339).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Controllers are in the order of their first line.
	Controllers []ControllerReport `json:"controllers"`
	// DroppedLines counts the lines the manager's log sampling dropped (never lines that record
	// a write), from its own reports: the log holds that many lines fewer than were logged.
	DroppedLines uint64 `json:"droppedLines"`
	// ErrorLines counts the error-level lines, grouped in TopErrors.
	ErrorLines uint64 `json:"errorLines"`
	// TopErrors are the largest groups of error messages.
	TopErrors []ErrorGroup `json:"topErrors"`
	// TopObjects are the objects with the most "Reconciler error" lines.
	TopObjects []ObjectErrors `json:"topObjects"`
	// Bounds are the limits of the analyzer's memory that shaped this report.
	Bounds Bounds `json:"bounds"`
}

// ControllerReport holds one controller's figures.
type ControllerReport struct {
	Controller string `json:"controller"`
	Lines      uint64 `json:"lines"`
	// DroppedLines counts the controller's lines the manager's log sampling dropped: its
	// counts below (reconciles, errors) miss what those lines said.
	DroppedLines uint64 `json:"droppedLines"`
	// Reconciles counts reconcile-end lines; nil when there are none (the log was not at debug
	// level), and then the error rate and durations are unknown too.
	Reconciles *uint64 `json:"reconciles"`
	// Results counts reconcile-end lines by result.
	Results map[string]uint64 `json:"results,omitempty"`
	// Errors counts "Reconciler error" lines, TerminalErrors those of them that are
	// reconcile.TerminalErrors.
	Errors         uint64 `json:"errors"`
	TerminalErrors uint64 `json:"terminalErrors"`
	// ErrorRate is Errors / Reconciles.
	ErrorRate *float64 `json:"errorRate"`
	// DurationMs are percentiles of the reconcile durations, within 1%.
	DurationMs *Durations `json:"durationMs"`
	First      string     `json:"first"`
	Last       string     `json:"last"`
}

// Durations are percentiles of reconcile durations in milliseconds.
type Durations struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	Max float64 `json:"max"`
}

// ErrorGroup is a group of error lines whose messages are the same once folded.
type ErrorGroup struct {
	Count uint64 `json:"count"`
	// Exact is false when Count may overestimate, by at most MaxOverestimate.
	Exact           bool   `json:"exact"`
	MaxOverestimate uint64 `json:"maxOverestimate,omitempty"`
	Controller      string `json:"controller"`
	// Message is the folded message; Example the first raw one seen.
	Message string `json:"message"`
	Example string `json:"example"`
}

// ObjectErrors counts the "Reconciler error" lines of one object of one controller.
type ObjectErrors struct {
	Errors          uint64 `json:"errors"`
	Exact           bool   `json:"exact"`
	MaxOverestimate uint64 `json:"maxOverestimate,omitempty"`
	Controller      string `json:"controller"`
	// Object is namespace/name, or name for a cluster-scoped object.
	Object string `json:"object"`
}

// Bounds are the memory limits of the analyzer.
type Bounds struct {
	Controllers  int `json:"controllers"`
	ErrorGroups  int `json:"errorGroups"`
	Objects      int `json:"objects"`
	MaxLineBytes int `json:"maxLineBytes"`
}

// report computes the Report, listing top entries of each top list.
func (s *summary) report(top int) Report {
	r := Report{
		Lines:        s.counts,
		Levels:       map[string]uint64{},
		Controllers:  []ControllerReport{},
		ErrorLines:   s.errorLines,
		DroppedLines: s.dropped,
		TopErrors:    []ErrorGroup{},
		TopObjects:   []ObjectErrors{},
		Bounds:       Bounds{Controllers: maxControllers, ErrorGroups: errorGroups, Objects: objectCounters, MaxLineBytes: maxLine},
	}
	for i, n := range s.levels {
		if n > 0 {
			r.Levels[levelName(i-128)] = n
		}
	}
	if s.counts.Used > 0 {
		r.From, r.To = formatTS(s.first), formatTS(s.last)
	}
	for _, name := range s.order {
		r.Controllers = append(r.Controllers, s.controllers[name].report(name))
	}
	for _, c := range s.errors.top(top) {
		controller, message, _ := strings.Cut(c.key, "\x00")
		r.TopErrors = append(r.TopErrors, ErrorGroup{Count: c.count, Exact: c.over == 0, MaxOverestimate: c.over,
			Controller: controller, Message: message, Example: c.example})
	}
	for _, c := range s.objects.top(top) {
		controller, object, _ := strings.Cut(c.key, "\x00")
		r.TopObjects = append(r.TopObjects, ObjectErrors{Errors: c.count, Exact: c.over == 0, MaxOverestimate: c.over,
			Controller: controller, Object: strings.TrimPrefix(object, "/")})
	}
	return r
}

func (c *controllerStats) report(name string) ControllerReport {
	r := ControllerReport{Controller: name, Lines: c.lines, DroppedLines: c.dropped, Errors: c.errors, TerminalErrors: c.terminal,
		First: formatTS(c.first), Last: formatTS(c.last)}
	for result, n := range c.results {
		if r.Results == nil {
			r.Results = map[string]uint64{}
		}
		r.Results[result] = *n
	}
	if c.reconciles > 0 {
		r.Reconciles = new(c.reconciles)
		r.ErrorRate = new(float64(c.errors) / float64(c.reconciles))
		r.DurationMs = &Durations{P50: roundMs(c.durations.quantile(0.5)), P95: roundMs(c.durations.quantile(0.95)),
			Max: roundMs(c.durations.max)}
	}
	return r
}

// roundMs keeps microseconds.
func roundMs(ms float64) float64 { return math.Round(ms*1000) / 1000 }

// writeJSON prints r as indented JSON.
func (r Report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
