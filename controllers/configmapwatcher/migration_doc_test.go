package configmapwatcher

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// migrationPage is the page that maps every Reloader flag, annotation and variable to ours.
var migrationPage = filepath.Join("..", "..", "docs", "migrating", "from-reloader.md")

// reloaderV1421Flags are Stakater Reloader v1.4.21's flags, as its
// internal/pkg/util/util.go ConfigureReloaderFlags registers them: the list ReloaderFlags must
// cover.
var reloaderV1421Flags = []string{
	"auto-reload-all", "configmap-annotation", "secret-annotation", "auto-annotation", "ignore-annotation",
	"configmap-auto-annotation", "secret-auto-annotation", "auto-search-annotation", "search-match-annotation",
	"pause-deployment-annotation", "pause-deployment-time-annotation", "log-format", "log-level", "webhook-url",
	"resources-to-ignore", "ignored-workload-types", "namespaces", "namespaces-to-ignore", "namespace-selector",
	"resource-label-selector", "is-Argo-Rollouts", "reload-strategy", "reload-on-create", "reload-on-delete",
	"enable-ha", "sync-after-restart", "enable-pprof", "pprof-addr", "enable-csi-integration",
}

// pageRows returns, per first cell (without its backquotes), the second cell of the table
// rows of the page's section heading.
func pageRows(t *testing.T, page, heading string) map[string]string {
	t.Helper()
	_, section, found := strings.Cut(page, "\n"+heading+"\n")
	if !found {
		t.Fatalf("%s has no section %q", migrationPage, heading)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\| ([^|]+) \\|")
	rows := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			if _, twice := rows[m[1]]; twice {
				t.Errorf("%s, %s: %s listed twice", migrationPage, heading, m[1])
			}
			rows[m[1]] = strings.TrimSpace(m[2])
		}
	}
	return rows
}

// wantCell is what the page's second column says of a form: the flag of the same name when
// supported, else its kind of support.
func wantCell(f ReloaderForm, prefix string) string {
	if f.Support == Supported && prefix != "" {
		return "`" + prefix + f.Name + "`"
	}
	return string(f.Support)
}

// TestMigrationPageMapsEveryReloaderForm: the migration page lists every one of Reloader's
// flags, annotations and environment variables, and no other, each with what ReloaderFlags
// (ReloaderAnnotationForms, ReloaderEnvironment) says; every Reloader flag is one the manager
// accepts, with Reloader's name; ReloaderFlags is Reloader v1.4.21's whole set.
func TestMigrationPageMapsEveryReloaderForm(t *testing.T) {
	data, err := os.ReadFile(migrationPage)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	var names []string
	for _, f := range ReloaderFlags {
		names = append(names, f.Name)
	}
	if diff := cmp.Diff(reloaderV1421Flags, names); diff != "" {
		t.Errorf("ReloaderFlags against Reloader v1.4.21's flags (-want +got):\n%s", diff)
	}

	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o := NewOptions()
	o.AddFlags(fs)
	for _, tc := range []struct {
		heading string
		forms   []ReloaderForm
		prefix  string
	}{
		{"## Flags", ReloaderFlags, "--"},
		{"## Annotations", ReloaderAnnotationForms, ""},
		{"## Environment variables", ReloaderEnvironment, ""},
	} {
		rows := pageRows(t, page, tc.heading)
		want := map[string]string{}
		for _, f := range tc.forms {
			want[tc.prefix+f.Name] = wantCell(f, tc.prefix)
			if tc.prefix == "--" && !f.Manager && fs.Lookup(f.Name) == nil {
				t.Errorf("Reloader's flag --%s is not a flag of the manager: its arguments would stop it", f.Name)
			}
		}
		if diff := cmp.Diff(want, rows); diff != "" {
			t.Errorf("%s, %s: what the page says of each (-want +got):\n%s", migrationPage, tc.heading, diff)
		}
	}
	// A supported flag is ours, bound by Options under Reloader's name, not an accepted one.
	for _, f := range ReloaderFlags {
		if _, accepted := o.reloader.values[f.Name]; accepted == (f.Support == Supported) || f.Manager && fs.Lookup(f.Name) != nil {
			t.Errorf("--%s: supported %v, but accepted without effect %v", f.Name, f.Support == Supported, accepted)
		}
	}
	if !slices.ContainsFunc(ReloaderAnnotationForms, func(f ReloaderForm) bool { return f.Support == Unsupported }) {
		t.Error("no unsupported annotation: the start-up report has nothing to test")
	}
}
