package configmapwatcher

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
)

// parse binds a new Options to a flag set, parses args and validates them.
func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	o := NewOptions()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.Validate()
}

// TestOptionsValidate: each bad value names its flag; Reloader's ways of writing a selector
// and a list are read as Reloader reads them.
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"--namespace-selector=team:a,env:*", "--resource-label-selector=\"reload=yes\""}, ""},
		{[]string{"--namespace-selector=a b"}, "--namespace-selector"},
		{[]string{"--resources-to-ignore=ConfigMaps"}, ""},
		{[]string{"--resources-to-ignore=pods"}, `not "pods"`},
		{[]string{"--resources-to-ignore=configmaps,secrets"}, "not both"},
		{[]string{"--resources-to-ignore=configmaps", "--resources-to-ignore=secrets"}, "not both"},
		{[]string{"--namespaces-to-ignore=kube-system,Bad_NS"}, `"Bad_NS" is not a namespace name`},
		{[]string{"--webhook-url=ftp://x"}, "--webhook-url must be an http or https URL"},
		{[]string{"--webhook-url=https://hooks.example/services/T0/B0/token\n"}, ""},
		{[]string{"--webhook-only"}, "--webhook-only was removed: --webhook-url now posts instead of rolling"},
		{[]string{"--notify-url=https://h.example/x", "--webhook-url=https://h.example/y"}, "exclude each other"},
		{[]string{"--notify-url=file:///x"}, "--notify-url must be an http or https URL"},
		{[]string{"--webhook-url=https://h.example/x", "--webhook-format=teams"}, "--webhook-format"},
		{[]string{"--max-rollouts-per-minute=-1"}, "--max-rollouts-per-minute"},
		{[]string{"--ignored-workload-types=jobs,cronjobs"}, ""},
		{[]string{"--ignored-workload-types=pods"}, "--ignored-workload-types"},
		{[]string{"--reload-strategy=annotations", "--is-Argo-Rollouts=true", "--configmap-annotation", "x.io/reload"}, ""},
		{[]string{"--reload-strategy=default"}, `"default" is not one of config-hash, annotations, env-vars`},
		{[]string{"--reload-strategy=annotations", "--last-reloaded-from=never"}, "exclude each other"},
		{[]string{"--auto-annotation=not a key"}, "--auto-annotation"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parse(t, tc.args...)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestWebhookURLNeverPrinted: a webhook URL that is refused is named by its scheme and host
// alone: its path and user info are the token of a chat webhook.
func TestWebhookURLNeverPrinted(t *testing.T) {
	for _, raw := range []string{"ftp://hooks.example/services/T0/B0/s3cret", "https://user:s3cret@/services/s3cret", "s3cret"} {
		_, err := parse(t, "--webhook-url="+raw)
		if err == nil {
			t.Errorf("%q: accepted", raw)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: the error prints the token: %v", raw, err)
		}
	}
}

// TestReloaderSelector: Reloader's key:value and key:* forms, quotes, and plain selectors.
func TestReloaderSelector(t *testing.T) {
	for value, want := range map[string]string{
		"team:a":                   "team=a",
		"team:a,env:*":             "env,team=a",
		`"reloader=enabled"`:       "reloader=enabled",
		"env in (dev,prod),tier=*": "env in (dev,prod),tier",
		"":                         "<nil>",
	} {
		s, err := reloaderSelector("--x", value)
		if err != nil {
			t.Errorf("%q: %v", value, err)
			continue
		}
		got := "<nil>"
		if s != nil {
			got = s.String()
		}
		if got != want {
			t.Errorf("%q read as %q, want %q", value, got, want)
		}
	}
}

// TestScope: namespaces as the flags select them, with the manager's: one watch per selected
// namespace when the selector leaves out more than it selects, else watches of every namespace
// that leave out the unselected ones.
func TestScope(t *testing.T) {
	s := Scope{namespaces: []string{"a", "b", "c"}, unselected: []string{"d", "e", "f", "g"}, selectsByLabels: true, ignored: map[string]bool{"c": true}}
	if got := s.Namespaces(nil); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Namespaces(all) = %v", got)
	}
	if got := s.Namespaces([]string{"b", "c", "d"}); !slices.Equal(got, []string{"b"}) {
		t.Errorf("Namespaces(b,c,d) = %v", got)
	}
	if s.Namespace("c") || s.Namespace("d") || !s.Namespace("a") {
		t.Error("Namespace does not follow the selection and the ignored ones")
	}
	if reason := s.Idle([]string{"d"}); reason == "" {
		t.Error("no namespace selected, yet not idle")
	}
	all := Scope{ignored: map[string]bool{"x": true}}
	if all.Namespaces(nil) != nil || all.NamespaceFieldSelector().String() != "metadata.namespace!=x" {
		t.Errorf("every namespace but x: %v, %v", all.Namespaces(nil), all.NamespaceFieldSelector())
	}

	most := Scope{namespaces: []string{"a", "b", "c"}, unselected: []string{"d"}, selectsByLabels: true, ignored: map[string]bool{"c": true}}
	if !most.ExcludesUnselected(nil) || most.Namespaces(nil) != nil || most.Idle(nil) != "" {
		t.Errorf("selecting most namespaces: excludes %v, namespaces %v, idle %q; want every namespace watched",
			most.ExcludesUnselected(nil), most.Namespaces(nil), most.Idle(nil))
	}
	if got, want := most.NamespaceFieldSelector().String(), "metadata.namespace!=c,metadata.namespace!=d"; got != want {
		t.Errorf("field selector %q, want %q", got, want)
	}
	if most.Namespace("c") || most.Namespace("d") || most.Namespace("new") || !most.Namespace("a") {
		t.Error("Namespace does not follow the selection when every namespace is watched")
	}
	if most.ExcludesUnselected([]string{"a", "d"}) || !slices.Equal(most.Namespaces([]string{"a", "d"}), []string{"a"}) {
		t.Errorf("with the manager's namespaces, one watch per selected namespace: %v", most.Namespaces([]string{"a", "d"}))
	}
	many := Scope{namespaces: make([]string, 2*maxExcludedNamespaces), unselected: make([]string, maxExcludedNamespaces+1), selectsByLabels: true}
	if many.ExcludesUnselected(nil) {
		t.Errorf("more than %d unselected namespaces left out by a field selector", maxExcludedNamespaces)
	}
}

// TestNamespaceWatchDiffers: the namespace watch restarts the manager for a change of the
// selected namespaces, and for a new unselected one only when the watches of every namespace
// would not leave it out.
func TestNamespaceWatchDiffers(t *testing.T) {
	start := namespaceSets{selected: []string{"a", "b"}, unselected: []string{"c"}}
	for _, tc := range []struct {
		name     string
		excludes bool
		now      namespaceSets
		want     bool
	}{
		{"unchanged", true, start, false},
		{"selected one more", false, namespaceSets{selected: []string{"a", "b", "n"}, unselected: []string{"c"}}, true},
		{"selected one less", false, namespaceSets{selected: []string{"a"}, unselected: []string{"b", "c"}}, true},
		{"new unselected, one watch per selected namespace", false, namespaceSets{selected: []string{"a", "b"}, unselected: []string{"c", "n"}}, false},
		{"new unselected, watches of every namespace", true, namespaceSets{selected: []string{"a", "b"}, unselected: []string{"c", "n"}}, true},
		{"unselected deleted", true, namespaceSets{selected: []string{"a", "b"}, unselected: []string{}}, false},
	} {
		w := &namespaceWatch{start: start, excludesUnselected: tc.excludes}
		if got := w.differs(tc.now); got != tc.want {
			t.Errorf("%s: differs = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRolloutLimiter: at most max rolls in any window; the next waits until the oldest leaves
// it, and none is counted while it waits.
func TestRolloutLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newRolloutLimiter(2, func() time.Time { return now })
	for i := range 2 {
		if wait := l.take(); wait != 0 {
			t.Fatalf("roll %d waits %s: the first two must start at once", i+1, wait)
		}
	}
	if wait := l.take(); wait != rolloutWindow {
		t.Errorf("third roll waits %s, want %s", wait, rolloutWindow)
	}
	now = now.Add(30 * time.Second)
	if wait := l.take(); wait != rolloutWindow-30*time.Second {
		t.Errorf("third roll 30s later waits %s", wait)
	}
	now = now.Add(rolloutWindow - 30*time.Second)
	var waits []time.Duration
	for range 3 {
		waits = append(waits, l.take())
	}
	if waits[0] != 0 || waits[1] != 0 || waits[2] == 0 {
		t.Errorf("a window later, waits %v: want two more rolls at once and the third put off", waits)
	}
	if newRolloutLimiter(0, time.Now).take() != 0 {
		t.Error("0 is no limit")
	}
}

// TestReportReloaderFlags: Reloader's unsupported flags given a value other than their
// default, and Reloader's unsupported variables, are logged and counted; the supported ones,
// and those given Reloader's default, are not.
func TestReportReloaderFlags(t *testing.T) {
	o, err := parse(t, "--reload-strategy=env-vars", "--configmap-annotation", v1alpha1.ReloaderConfigMapReloadAnnotation,
		"--secret-annotation", "x.example.com/reload", "--auto-reload-all", "--is-Argo-Rollouts=true", "--namespaces=a,b", "--enable-pprof=false")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"RELOADER_NAMESPACE": "reloader", "ALERT_WEBHOOK_URL": "https://hooks.example/secret", "METRICS_COUNT_BY_NAMESPACE": "enabled", "KUBERNETES_NAMESPACE": "x"}
	got := o.reportReloaderFlags(logr.Discard(), func(name string) (string, bool) { v, ok := env[name]; return v, ok })
	if diff := cmp.Diff([]string{"RELOADER_NAMESPACE"}, got); diff != "" {
		t.Errorf("reported (-want +got):\n%s", diff)
	}
	if v := testutil.ToFloat64(reloaderUnsupported.WithLabelValues("env", "RELOADER_NAMESPACE", "")); v != 1 {
		t.Errorf("metric of RELOADER_NAMESPACE = %v", v)
	}
	// Reloader's flags that ask for what the configmapwatcher does not do stop it at start.
	for _, args := range [][]string{{"--enable-pprof"}, {"--pprof-addr=:7070"}} {
		if _, err := parse(t, args...); err == nil || !strings.Contains(err.Error(), "not supported here") {
			t.Errorf("%v: error %v, want not supported", args, err)
		}
	}
	if o, err := parse(t, "--enable-csi-integration"); err != nil || !o.Reading().CSI {
		t.Errorf("--enable-csi-integration: %v; SecretProviderClasses read %v, want true", err, err == nil && o.Reading().CSI)
	}
	if o.Ignores("Rollout") != "" {
		t.Error("--is-Argo-Rollouts=true leaves Rollouts alone")
	}
	if o, err = parse(t, "--is-Argo-Rollouts=false"); err != nil || o.Ignores("Rollout") == "" || o.Ignores("Deployment") != "" {
		t.Errorf("--is-Argo-Rollouts=false: %v, Rollouts ignored %q", err, o.Ignores("Rollout"))
	}
	if _, err = parse(t, "--is-Argo-Rollouts=maybe"); err == nil {
		t.Error("--is-Argo-Rollouts=maybe: accepted")
	}
}

// TestUnsupportedAnnotations: the annotations of Reloader's that are not read.
func TestUnsupportedAnnotations(t *testing.T) {
	annotations := map[string]string{
		v1alpha1.ReloaderAutoAnnotation:                    "true",
		"secretproviderclass.reloader.stakater.com/reload": "vault",
		"reloader.stakater.com/last-reloaded-from":         "{}",
		"reloader.stakater.com/typo":                       "true",
		"app.example.com/reload":                           "true",
	}
	got := unsupportedAnnotations(annotations, podrefs.Reading{Reloader: true})
	slices.Sort(got)
	if diff := cmp.Diff([]string{"reloader.stakater.com/typo", "secretproviderclass.reloader.stakater.com/reload"}, got); diff != "" {
		t.Errorf("with Reloader's annotations read (-want +got):\n%s", diff)
	}
	got = unsupportedAnnotations(annotations, podrefs.Reading{})
	slices.Sort(got)
	if diff := cmp.Diff([]string{v1alpha1.ReloaderAutoAnnotation, "reloader.stakater.com/typo", "secretproviderclass.reloader.stakater.com/reload"}, got); diff != "" {
		t.Errorf("with --reloader-annotations=false (-want +got):\n%s", diff)
	}
	// --enable-csi-integration reads Reloader's SecretProviderClass annotations.
	got = unsupportedAnnotations(annotations, podrefs.Reading{Reloader: true, CSI: true})
	if diff := cmp.Diff([]string{"reloader.stakater.com/typo"}, got); diff != "" {
		t.Errorf("with --enable-csi-integration (-want +got):\n%s", diff)
	}
}

// TestListedNamespaces: Reloader's --namespaces, else its KUBERNETES_NAMESPACE, limit the
// configmapwatcher to those namespaces; with Reloader's selector or ignore list, which Reloader
// silently drops then, the manager refuses to start; a listed namespace the manager does not
// watch is refused at Prepare.
func TestListedNamespaces(t *testing.T) {
	o, err := parse(t, "--namespaces=b,a,b")
	if err != nil {
		t.Fatal(err)
	}
	s := o.Scope()
	if got := s.Namespaces(nil); !slices.Equal(got, []string{"a", "b"}) || !s.Namespace("a") || s.Namespace("c") || s.ExcludesUnselected(nil) {
		t.Errorf("--namespaces=b,a,b: namespaces %v, a %v, c %v, excludes %v", got, s.Namespace("a"), s.Namespace("c"), s.ExcludesUnselected(nil))
	}
	if got := s.Namespaces([]string{"b", "z"}); !slices.Equal(got, []string{"b"}) {
		t.Errorf("with the manager's b,z: %v", got)
	}
	if err := o.checkListedNamespaces(logr.Discard(), []string{"a"}); err == nil || !strings.Contains(err.Error(), "lists namespace b, which the manager does not watch") {
		t.Errorf("a listed namespace the manager does not watch: %v", err)
	}

	t.Setenv("KUBERNETES_NAMESPACE", "team-a")
	if o, err = parse(t); err != nil {
		t.Fatal(err)
	}
	if got := o.Scope().Namespaces(nil); !slices.Equal(got, []string{"team-a"}) || o.namespacesFrom != "KUBERNETES_NAMESPACE" {
		t.Errorf("KUBERNETES_NAMESPACE=team-a: %v from %q", got, o.namespacesFrom)
	}
	if o, err = parse(t, "--namespaces=x"); err != nil || !slices.Equal(o.Scope().Namespaces(nil), []string{"x"}) {
		t.Errorf("--namespaces wins over KUBERNETES_NAMESPACE: %v, %v", err, o.Scope().Namespaces(nil))
	}
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--namespace-selector=env=prod"}, "--namespace-selector does not go with KUBERNETES_NAMESPACE"},
		{[]string{"--namespaces=a", "--namespaces-to-ignore=b"}, "--namespaces-to-ignore does not go with --namespaces"},
		{[]string{"--namespaces=Bad_NS"}, `--namespaces: "Bad_NS" is not a namespace name`},
	} {
		if _, err := parse(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.wantErr)
		}
	}
}
