package loganalysis

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Exit statuses of Main.
const (
	exitOK    = 0
	exitError = 1 // an input could not be read (what could be read is still reported)
	exitUsage = 2
)

const usage = `Usage:
  manager logs summary [flags] [FILE...]
  manager logs trace [flags] NAMESPACE/NAME [FILE...]
  manager logs trace [flags] --reconcile-id ID [FILE...]

Reads the manager's JSON logs from the files (gzip or not), or from stdin when there are none
or a file is "-".

summary: per controller, reconciles, errors, error rate, terminal errors, reconcile duration
percentiles (from the debug "Reconcile finished" lines) and first and last times; the most
frequent error messages, with names and numbers folded; the objects with the most errors.

trace: every line about one object (NAME alone for a cluster-scoped one), or about one
reconcile, in input order.

Flags (before or after the arguments):
`

// Main runs `manager logs` with args (the arguments after "logs") and returns the exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(args, stdin, stdout, stderr, time.Now())
}

// options are the flags of both subcommands.
type options struct {
	controllers, since, until, level string
	output                           string
	top                              int
	reconcileID                      string
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, now time.Time) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, args := args[0], args[1:]
	var o options
	fs := flag.NewFlagSet("manager logs "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.controllers, "controller", "", "Only the lines of these controllers (comma-separated).")
	fs.StringVar(&o.since, "since", "", "Only lines at or after this time: RFC 3339, or a duration before now such as 2h.")
	fs.StringVar(&o.until, "until", "", "Only lines at or before this time: RFC 3339, or a duration before now.")
	fs.StringVar(&o.level, "level", "", "Only lines at this level or above: debug, info, warn, error.")
	switch cmd {
	case "summary":
		fs.StringVar(&o.output, "output", "table", "Output format: table or json.")
		fs.IntVar(&o.top, "top", DefaultTop, fmt.Sprintf("How many error groups and objects to list (at most %d).", errorGroups))
	case "trace":
		fs.StringVar(&o.reconcileID, "reconcile-id", "", "Follow this reconcile instead of an object.")
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "manager logs: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
	files, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	f, err := newFilter(o.controllers, o.since, o.until, o.level, now)
	if err != nil {
		fmt.Fprintf(stderr, "manager logs %s: %v\n", cmd, err)
		return exitUsage
	}
	if cmd == "summary" {
		return runSummary(o, f, files, stdin, stdout, stderr)
	}
	return runTrace(o, f, files, stdin, stdout, stderr)
}

// parseInterspersed parses flags wherever they are among the arguments, as kubectl does, and
// returns the other arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return rest, nil
		}
		if args[0] == "--" {
			return append(rest, args[1:]...), nil
		}
		rest, args = append(rest, args[0]), args[1:]
	}
}

func runSummary(o options, f filter, files []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if o.output != "table" && o.output != "json" {
		fmt.Fprintf(stderr, "manager logs summary: --output %q: want table or json\n", o.output)
		return exitUsage
	}
	if o.top < 0 || o.top > errorGroups {
		fmt.Fprintf(stderr, "manager logs summary: --top %d: want 0 to %d\n", o.top, errorGroups)
		return exitUsage
	}
	s := newSummary(f)
	r := newReader()
	ok := r.eachFile(files, stdin, stderr, s.add)
	s.counts.TooLong = r.tooLong
	report := s.report(o.top)
	write := report.writeTable
	if o.output == "json" {
		write = report.writeJSON
	}
	if err := write(stdout); err != nil {
		fmt.Fprintf(stderr, "manager logs summary: %v\n", err)
		return exitError
	}
	if !ok {
		return exitError
	}
	return exitOK
}

func runTrace(o options, f filter, files []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var t target
	if o.reconcileID != "" {
		t.reconcileID = []byte(o.reconcileID)
	} else {
		if len(files) == 0 {
			fmt.Fprint(stderr, "manager logs trace: want NAMESPACE/NAME or --reconcile-id ID\n")
			return exitUsage
		}
		obj := files[0]
		files = files[1:]
		ns, name, found := strings.Cut(obj, "/")
		if !found {
			ns, name = "", obj
		}
		if name == "" || strings.Contains(name, "/") {
			fmt.Fprintf(stderr, "manager logs trace: %q: want NAMESPACE/NAME, or NAME for a cluster-scoped object\n", obj)
			return exitUsage
		}
		t.namespace, t.name = []byte(ns), []byte(name)
	}
	tr := &trace{stream: stream{filter: f}, target: t, out: bufio.NewWriterSize(stdout, 64<<10)}
	r := newReader()
	ok := r.eachFile(files, stdin, stderr, tr.add)
	tr.counts.TooLong = r.tooLong
	if err := tr.out.Flush(); err != nil {
		fmt.Fprintf(stderr, "manager logs trace: %v\n", err)
		return exitError
	}
	c := tr.counts
	fmt.Fprintf(stderr, "%d lines matched of %d read (%d not JSON, %d without level/ts/msg, %d longer than %d bytes, %d filtered out)\n",
		tr.matched, c.Read, c.NotJSON, c.Incomplete, c.TooLong, maxLine, c.FilteredOut)
	if !ok {
		return exitError
	}
	return exitOK
}
