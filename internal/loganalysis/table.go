package loganalysis

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

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
	fmt.Fprintf(&b, "Dropped by the manager's log sampling: %d lines\n", r.DroppedLines)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCONTROLLER\tLINES\tDROPPED\tRECONCILES\tERRORS\tERROR RATE\tTERMINAL\tP50 MS\tP95 MS\tMAX MS\tFIRST\tLAST")
	for _, c := range r.Controllers {
		reconciles, rate, p50, p95, maxMs := "-", "-", "-", "-", "-"
		if c.Reconciles != nil {
			reconciles = strconv.FormatUint(*c.Reconciles, 10)
			rate = fmt.Sprintf("%.1f%%", 100**c.ErrorRate)
			p50, p95, maxMs = formatMs(c.DurationMs.P50), formatMs(c.DurationMs.P95), formatMs(c.DurationMs.Max)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", c.Controller, c.Lines, c.DroppedLines, reconciles, c.Errors, rate,
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
