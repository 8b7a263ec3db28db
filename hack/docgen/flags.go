package main

import (
	"bytes"
	"flag"
	"fmt"
	"strings"

	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/markdown"
)

// writeFlags writes flags.md: every flag of the manager, in the sections of its --help.
func writeFlags(_ string, w *bytes.Buffer) error {
	w.WriteString(`# Flags

For operators who configure the manager. Every flag of ` + "`manager --help`" + `, in its sections:
the manager's own, then each controller's, then logging. A controller's flags are accepted
whether or not the controller runs.

`)
	opts := controllers.NewOptions()
	sections := opts.FlagSets(controllers.Table())
	for _, s := range sections {
		fmt.Fprintf(w, "- [%s](#%s)\n", s.Name, markdown.Anchor(s.Name))
	}
	for _, s := range sections {
		fmt.Fprintf(w, "\n## %s\n\n| flag | type | default | meaning |\n|---|---|---|---|\n", s.Name)
		var err error
		s.FlagSet.VisitAll(func(f *flag.Flag) {
			kind, usage := flag.UnquoteUsage(f)
			if usage == "" {
				err = fmt.Errorf("flag --%s has no usage text", f.Name)
			}
			if kind == "" {
				kind = "bool"
			}
			fmt.Fprintf(w, "| `--%s` | %s | %s | %s |\n", f.Name, kind, defaultCell(f), cell(usage))
		})
		if err != nil {
			return err
		}
	}
	w.WriteString(`
The ` + "`--zap-*`" + ` flags are controller-runtime's. The manager logs JSON with RFC 3339 times by default
([logs](../operations/logs.md)), whatever ` + "`--zap-time-encoding`" + `'s own text says.
`)
	return nil
}

// defaultCell is a flag's default as the table shows it.
func defaultCell(f *flag.Flag) string {
	switch f.DefValue {
	case "", "[]":
		return ""
	}
	return "`" + f.DefValue + "`"
}

// cell makes text safe in a Markdown table cell.
func cell(text string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(text)
}
