package soak

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// MaxGrowth is the soak's target for RSS and goroutines: after the warm-up, they grow by less
// than this fraction. (Its other target: the work queues empty again after every burst.)
const MaxGrowth = 0.05

// Run says how a soak ran, for its report.
type Run struct {
	// Command is what was run, Commit the code's commit, Date when it began.
	Command, Commit, Date string
	// Load is the machine's load average (1 minute) at the start, lowest, highest and at the
	// end: the machine is shared.
	LoadStart, LoadMin, LoadMax, LoadEnd float64
	// Churn describes the churn; Ops counts its operations by kind.
	Churn string
	Ops   map[string]int
}

// Failures says which targets s misses; none when it meets them all.
func (s Summary) Failures() []string {
	var out []string
	if s.RSSGrowth >= MaxGrowth {
		out = append(out, fmt.Sprintf("RSS grew by %.1f%% after the warm-up (from %.1f to %.1f MiB), target < %.0f%%", s.RSSGrowth*100, s.RSSStart/mib, s.RSSEnd/mib, MaxGrowth*100))
	}
	if s.GoroutinesGrowth >= MaxGrowth {
		out = append(out, fmt.Sprintf("goroutines grew by %.1f%% after the warm-up (from %.0f to %.0f), target < %.0f%%", s.GoroutinesGrowth*100, s.GoroutinesStart, s.GoroutinesEnd, MaxGrowth*100))
	}
	if s.Drained < s.Bursts {
		out = append(out, fmt.Sprintf("the work queues emptied after %d of %d bursts, target every one", s.Drained, s.Bursts))
	}
	return out
}

// WriteReport writes the soak's report in Markdown, with the picture picture (a file name
// next to it).
func WriteReport(w io.Writer, run Run, s Summary, picture string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Soak: %s on one replica under steady churn\n\n", strings.TrimPrefix(run.Command, "make soak DURATION="))
	fmt.Fprintf(&b, "`%s`, begun %s at %s. The machine is shared (2 cores): load average %.1f at the start, %.1f to %.1f during, %.1f at the end.\n\n",
		run.Command, run.Date, run.Commit, run.LoadStart, run.LoadMin, run.LoadMax, run.LoadEnd)
	fmt.Fprintf(&b, "Churn: %s.\n\n", run.Churn)
	fmt.Fprintf(&b, "Medians of the first %s after a warm-up of %s (start) and of the last %s (end), from %d samples taken every 10 s:\n\n",
		s.Window.Round(time.Second), s.Warmup.Round(time.Second), s.Window.Round(time.Second), s.Samples)
	b.WriteString("| figure | start | end | growth | slope after the warm-up | target |\n|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| resident memory (VmRSS) | %.1f MiB | %.1f MiB | %+.1f%% | %+.1f%% per hour | growth < %.0f%% |\n",
		s.RSSStart/mib, s.RSSEnd/mib, s.RSSGrowth*100, s.RSSSlope*100, MaxGrowth*100)
	fmt.Fprintf(&b, "| goroutines | %.0f | %.0f | %+.1f%% | %+.1f%% per hour | growth < %.0f%% |\n",
		s.GoroutinesStart, s.GoroutinesEnd, s.GoroutinesGrowth*100, s.GoroutinesSlope*100, MaxGrowth*100)
	fmt.Fprintf(&b, "| Go heap in use | %.1f MiB | %.1f MiB | %+.1f%% | | |\n\n", s.HeapStart/mib, s.HeapEnd/mib, (s.HeapEnd/s.HeapStart-1)*100)
	fmt.Fprintf(&b, "Work queues (read every second): empty again after %d of %d bursts (target: every one), at most %s after the burst began; %d of them before the next burst, %s later; the deepest reading saw %.0f requests waiting.\n\n",
		s.Drained, s.Bursts, s.LongestDrain.Round(time.Second), s.WithinInterval, s.Interval, s.MaxQueueDepth)
	fmt.Fprintf(&b, "Open watches: %.0f to %.0f. API requests: %.2f per second on average.\n\n", s.WatchesMin, s.WatchesMax, s.RequestsPerSecond)
	var ops []string
	for _, k := range slices.Sorted(maps.Keys(run.Ops)) {
		ops = append(ops, fmt.Sprintf("%s %d", k, run.Ops[k]))
	}
	fmt.Fprintf(&b, "Operations: %s.\n\n", strings.Join(ops, ", "))
	if failures := s.Failures(); len(failures) > 0 {
		fmt.Fprintf(&b, "**Targets missed:** %s.\n\n", strings.Join(failures, "; "))
	} else {
		b.WriteString("Every target met.\n\n")
	}
	fmt.Fprintf(&b, "![RSS, heap, goroutines, open watches, queue depth and API requests per second over the soak; the dashed line ends the warm-up](%s)\n\n", picture)
	b.WriteString("The samples are in samples.csv next to this report.\n")
	_, err := io.WriteString(w, b.String())
	return err
}
