package loganalysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// Bounds of what summary holds in memory, whatever the size of its input.
const (
	// maxControllers is how many controllers are counted apart; the lines of any further ones
	// are counted under otherControllers.
	maxControllers = 256
	// otherControllers names the controllers beyond maxControllers.
	otherControllers = "(other)"
	// maxResults is how many distinct result values a controller counts apart; further ones
	// count under otherResult.
	maxResults = 16
	// otherResult names the result values beyond maxResults.
	otherResult = "(other)"
	// errorGroups and objectCounters are the capacities of the Space-Saving counters of error
	// messages and of objects: groups that make up more than 1/capacity of the error lines are
	// sure to be found.
	errorGroups    = 1000
	objectCounters = 1000
	// maxExample bounds the raw error message kept as an example of each group.
	maxExample = 512
	// DefaultTop is how many error groups and objects a summary lists by default.
	DefaultTop = 10
)

// summary aggregates lines into per-controller figures and top lists, in bounded memory.
type summary struct {
	stream
	levels      [256]uint64 // by level + 128
	first, last int64
	controllers map[string]*controllerStats
	order       []string
	errorLines  uint64
	errors      *topN
	objects     *topN
	key         []byte // scratch for the keys of errors and objects
}

type controllerStats struct {
	lines       uint64
	first, last int64
	reconciles  uint64
	// results holds counters, so that counting a result already seen does not allocate.
	results   map[string]*uint64
	errors    uint64
	terminal  uint64
	durations sketch
}

func newSummary(f filter) *summary {
	return &summary{
		stream:      stream{filter: f},
		controllers: map[string]*controllerStats{},
		errors:      newTopN(errorGroups),
		objects:     newTopN(objectCounters),
	}
}

// add analyses one line.
func (s *summary) add(raw []byte) {
	level, ts, ok := s.next(raw)
	if !ok {
		return
	}
	l := &s.line
	s.levels[level+128]++
	if s.counts.Used == 1 || ts < s.first {
		s.first = ts
	}
	if s.counts.Used == 1 || ts > s.last {
		s.last = ts
	}
	if len(l.Controller) > 0 {
		s.addController(s.controller(l.Controller), ts)
	}
	if level >= levelError {
		s.addError()
	}
}

func (s *summary) controller(name []byte) *controllerStats {
	if c, ok := s.controllers[string(name)]; ok {
		return c
	}
	key := string(name)
	if len(s.controllers) >= maxControllers {
		key = otherControllers
		if c, ok := s.controllers[key]; ok {
			return c
		}
	}
	c := &controllerStats{}
	s.controllers[key] = c
	s.order = append(s.order, key)
	return c
}

func (s *summary) addController(c *controllerStats, ts int64) {
	l := &s.line
	c.lines++
	if c.lines == 1 || ts < c.first {
		c.first = ts
	}
	if c.lines == 1 || ts > c.last {
		c.last = ts
	}
	switch string(l.Msg) {
	case MsgReconcileEnd:
		ms, ok := parseMs(l.Duration)
		if !ok {
			return
		}
		c.reconciles++
		c.durations.add(ms)
		c.result(l.Result)
	case MsgReconcilerError:
		c.errors++
		if bytes.Contains(l.Error, []byte(terminalMarker)) {
			c.terminal++
		}
		s.key = append(append(append(append(s.key[:0], l.Controller...), 0), l.Namespace...), '/')
		s.key = append(s.key, l.Name...)
		s.objects.add(s.key, nil)
	}
}

// parseMs reads a duration in milliseconds: a non-negative JSON number. Plain decimals, what
// the reconcile-end line writes, are read without allocating.
func parseMs(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return parseMsSlow(b)
	}
	var n, scale uint64 = 0, 1
	dot := false
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			n = n*10 + uint64(c-'0')
			if dot {
				scale *= 10
			}
		case c == '.' && !dot:
			dot = true
		default:
			return parseMsSlow(b)
		}
	}
	return float64(n) / float64(scale), true
}

func parseMsSlow(b []byte) (float64, bool) {
	ms, err := strconv.ParseFloat(string(b), 64)
	if err != nil || ms < 0 || math.IsNaN(ms) || math.IsInf(ms, 0) {
		return 0, false
	}
	return ms, true
}

// result counts one reconcile-end line with result.
func (c *controllerStats) result(result []byte) {
	if n, ok := c.results[string(result)]; ok {
		*n++
		return
	}
	if c.results == nil {
		c.results = map[string]*uint64{}
	}
	key := string(result)
	if len(c.results) >= maxResults {
		key = otherResult
	}
	if n, ok := c.results[key]; ok {
		*n++
		return
	}
	c.results[key] = new(uint64(1))
}

// addError counts an error-level line in its group: controller-runtime's "Reconciler error" by
// its error, any other by its message and error.
func (s *summary) addError() {
	l := &s.line
	s.errorLines++
	s.key = append(append(s.key[:0], l.Controller...), 0)
	text := l.Error
	if string(l.Msg) != MsgReconcilerError {
		s.key = fold(s.key, l.Msg, l.Name, l.Namespace)
		if len(l.Error) > 0 {
			s.key = append(s.key, ": "...)
		}
		if text == nil {
			text = l.Msg
		}
	}
	s.key = fold(s.key, l.Error, l.Name, l.Namespace)
	s.errors.add(s.key, text)
}

// truncate cuts b at n bytes, backing off to a UTF-8 boundary, and marks the cut.
func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + "…"
}

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
		Lines:       s.counts,
		Levels:      map[string]uint64{},
		Controllers: []ControllerReport{},
		ErrorLines:  s.errorLines,
		TopErrors:   []ErrorGroup{},
		TopObjects:  []ObjectErrors{},
		Bounds:      Bounds{Controllers: maxControllers, ErrorGroups: errorGroups, Objects: objectCounters, MaxLineBytes: maxLine},
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
	r := ControllerReport{Controller: name, Lines: c.lines, Errors: c.errors, TerminalErrors: c.terminal,
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

// writeTable prints r as aligned tables.
func (r Report) writeTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Lines: %d read, %d used, %d not JSON, %d without level/ts/msg, %d longer than %d bytes, %d filtered out\n",
		r.Lines.Read, r.Lines.Used, r.Lines.NotJSON, r.Lines.Incomplete, r.Lines.TooLong, r.Bounds.MaxLineBytes, r.Lines.FilteredOut)
	levels := make([]string, 0, len(r.Levels))
	for name, n := range r.Levels {
		levels = append(levels, fmt.Sprintf("%s %d", name, n))
	}
	slices.SortFunc(levels, func(a, b string) int {
		la, _ := parseLevel([]byte(strings.Fields(a)[0]))
		lb, _ := parseLevel([]byte(strings.Fields(b)[0]))
		return la - lb
	})
	fmt.Fprintf(&b, "Levels: %s\n", strings.Join(levels, ", "))
	if r.From != "" {
		fmt.Fprintf(&b, "Time: %s to %s\n", r.From, r.To)
	}

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCONTROLLER\tLINES\tRECONCILES\tERRORS\tERROR RATE\tTERMINAL\tP50 MS\tP95 MS\tMAX MS\tFIRST\tLAST")
	for _, c := range r.Controllers {
		reconciles, rate, p50, p95, maxMs := "-", "-", "-", "-", "-"
		if c.Reconciles != nil {
			reconciles = strconv.FormatUint(*c.Reconciles, 10)
			rate = fmt.Sprintf("%.1f%%", 100**c.ErrorRate)
			p50, p95, maxMs = formatMs(c.DurationMs.P50), formatMs(c.DurationMs.P95), formatMs(c.DurationMs.Max)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", c.Controller, c.Lines, reconciles, c.Errors, rate,
			c.TerminalErrors, p50, p95, maxMs, c.First, c.Last)
	}
	if len(r.Controllers) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(&b, "\nTop errors (%d error lines):\n", r.ErrorLines)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COUNT\tCONTROLLER\tERROR")
	for _, e := range r.TopErrors {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", count(e.Count, e.Exact), dash(e.Controller), oneLine(e.Message))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	b.WriteString("\nObjects with the most errors:\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ERRORS\tCONTROLLER\tOBJECT")
	for _, o := range r.TopObjects {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", count(o.Errors, o.Exact), o.Controller, o.Object)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// count marks an estimate from a Space-Saving counter that took over another key's.
func count(n uint64, exact bool) string {
	if exact {
		return strconv.FormatUint(n, 10)
	}
	return "~" + strconv.FormatUint(n, 10)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a table row on one line.
func oneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\t", " ").Replace(s)
}

// formatMs prints about three significant digits.
func formatMs(ms float64) string {
	switch {
	case ms < 1:
		return strconv.FormatFloat(ms, 'f', 3, 64)
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64)
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 1, 64)
	}
	return strconv.FormatFloat(ms, 'f', 0, 64)
}
