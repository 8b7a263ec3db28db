package chaos

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/example/switchboard/internal/faultproxy"
	"github.com/example/switchboard/test/reliability/faults"
)

// report is what a chaos run did and found.
type report struct {
	settings settings
	seed     uint64
	// commit is the code's commit when the run began.
	commit string
	began  time.Time
	// chaosEnded is when the faults stopped, converged when everything had converged after.
	chaosEnded, converged time.Time
	loadStart, loadEnd    float64

	kills       int
	partitioned []string
	processes   int
	http        faultproxy.Stats
	tcp         faults.TCPStats
	writes      int

	terms                                    map[string]int
	recommendations, scalers                 int
	exactlyOnceKeys                          int
	ops                                      map[string]int
	changes, rolls, reconciles, mostInWindow int
	badInput                                 badFigures
	violations                               []Violation
}

// summary is the report in a few lines, for the test log.
func (r *report) summary() string {
	return strings.Join(r.lines(), "\n")
}

func (r *report) lines() []string {
	s := r.settings
	h := r.http
	var ops []string
	for _, k := range slices.Sorted(maps.Keys(r.ops)) {
		ops = append(ops, fmt.Sprintf("%s %d", k, r.ops[k]))
	}
	meanDelay := time.Duration(0)
	if h.Delayed > 0 {
		meanDelay = h.Delay / time.Duration(h.Delayed)
	}
	command := "make test-chaos"
	if s.name == "short" {
		command = "make test-e2e (its short chaos run)"
	}
	out := []string{
		fmt.Sprintf("Chaos run %q, seed %d (`SWITCHBOARD_CHAOS_SEED=%d %s` repeats its choices), begun %s at %s; load average %.1f at the start, %.1f at the end (2 cores, shared).",
			s.name, r.seed, r.seed, command, r.began.UTC().Format(time.RFC3339), r.commit, r.loadStart, r.loadEnd),
		fmt.Sprintf("Three replicas (config/overlays/ha: a Lease per controller; lease %s, renew deadline %s, retry %s), %d processes in all; %s of faults, then none.",
			leaseDuration, renewDeadline, retryPeriod, r.processes, s.chaos),
		fmt.Sprintf("Faults injected: %d requests through the proxies (%d writes); %d given a latency (%s, mean %s), %d abandoned by their client meanwhile; %d answered 429, %d answered 500, %d answered 503; %d of %d watches cut; %d connection resets; %d partitions of the myapp leader for %s (%s); %d replicas killed with SIGKILL.",
			h.Requests, h.Writes, h.Delayed, hostile.Latency, meanDelay.Round(time.Millisecond), h.Abandoned, h.TooManyRequests, h.InternalErrors, h.Unavailable,
			h.WatchesCut, h.Watches, r.tcp.Resets, r.tcp.Partitions, 3*leaseDuration, strings.Join(r.partitioned, ", "), r.kills),
		fmt.Sprintf("Operations: %s; %d source changes; %d rolls seen; %d writes reached the API server from the replicas; %d reconciles logged, at most %d of one object by one replica in 10 s.",
			strings.Join(ops, ", "), r.changes, r.rolls, r.writes, r.reconciles, r.mostInWindow),
		fmt.Sprintf("Malformed objects: %d (%d creations and changes): %d warning Events in all, at most %d for one object; %d reconciles, at most %d of one object.",
			r.badInput.objects, r.badInput.changes, r.badInput.events, r.badInput.mostEvents, r.badInput.reconciles, r.badInput.mostRecons),
	}
	var terms []string
	for _, g := range slices.Sorted(maps.Keys(r.terms)) {
		terms = append(terms, fmt.Sprintf("%s %d", g, r.terms[g]))
	}
	out = append(out, fmt.Sprintf("Terms of leading each group (Lease writes that changed its holder): %s. VerticalScaler recommendations seen: %d, of %d VerticalScalers.",
		strings.Join(terms, ", "), r.recommendations, r.scalers))
	if !r.converged.IsZero() {
		out = append(out, fmt.Sprintf("After the faults stopped, everything had converged and gone quiet in %s; then the configmapwatcher's Lease moved with nothing changed, and %d source keys were changed one at a time.",
			r.converged.Sub(r.chaosEnded).Round(time.Second), r.exactlyOnceKeys))
	}
	out = append(out, fmt.Sprintf("Violations: %d.", len(r.violations)))
	return out
}

// write writes report.md into dir: the summary and every violation.
func (r *report) write(dir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Chaos run %s\n\n", r.settings.name)
	for _, l := range r.lines() {
		b.WriteString(l + "\n\n")
	}
	for _, v := range r.violations {
		fmt.Fprintf(&b, "- %s\n", v)
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644)
}
