package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runMainEnv makes the test binary run main() instead of the tests, so that the tests below see
// the real exit status and output of the manager.
const runMainEnv = "SWITCHBOARD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Args = append([]string{"manager"}, strings.Fields(os.Getenv("SWITCHBOARD_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runManager runs main with args and returns its exit status, stdout and stderr.
func runManager(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "SWITCHBOARD_TEST_ARGS="+strings.Join(args, " "),
		"KUBECONFIG=/nonexistent")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("running manager %v: %v", args, err)
	return 0, "", ""
}

func TestBadFlagsExitTwoAndNameTheKnownControllers(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--controllers=nope"}, []string{`"nope"`, "known controllers: myapp, verticalscaler, verticalpodautoscaler, configmapwatcher-deployments",
			"groups: verticalscaler (verticalscaler, verticalpodautoscaler), configmapwatcher (configmapwatcher-deployments, configmapwatcher-statefulsets, configmapwatcher-daemonsets, configmapwatcher-cronjobs, configmapwatcher-jobs, configmapwatcher-rollouts)"}},
		{[]string{"--controllers=-myapp,-verticalscaler,-configmapwatcher,*"}, []string{"enables no controller", "known controllers"}},
		{[]string{"--reload-debounce=-1s"}, []string{"--reload-debounce must not be negative"}},
		{[]string{"--config-digest-key-secret=Bad_NS/key"}, []string{"--config-digest-key-secret", "Bad_NS"}},
		{[]string{"--controllers="}, []string{"empty controller name", "known controllers"}},
		{[]string{"--concurrency=myapp=zero"}, []string{"--concurrency", "myapp"}},
		{[]string{"--concurrency=nope=1"}, []string{`"nope"`, "known controllers"}},
		{[]string{"--watch-namespaces=Bad_NS"}, []string{"--watch-namespaces", "Bad_NS"}},
		{[]string{"--no-such-flag"}, []string{"flag provided but not defined: -no-such-flag"}},
		{[]string{"stray"}, []string{"unexpected arguments"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runManager(t, tc.args...)
			if code != 2 {
				t.Errorf("exit status %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not contain %q:\n%s", want, stderr)
				}
			}
		})
	}
}

func TestListControllers(t *testing.T) {
	code, stdout, stderr := runManager(t, "--list-controllers")
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"NAME", "DEFAULT", "WORKERS", "INDEXES", "SOURCES", "WATCHES",
		"myapp", "MyApp", "Deployment (uncached), Service (uncached)",
		"verticalscaler", "VerticalScaler:spec.targetRef", "StatefulSet (maps)", "CronJob (maps)",
		"GROUP", "configmapwatcher-deployments", "configmapwatcher-cronjobs", "CronJob",
		"ConfigMap (uncached), Secret (uncached), SecretProviderClassPodStatus (optional, cached)", "Deployment:spec.template.sources", "CronJob:spec.template.sources",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--list-controllers output does not contain %q:\n%s", want, stdout)
		}
	}
}

// TestReadmeListsControllers: the listing README.md shows under "Choosing controllers" is what
// --list-controllers prints now, so that a new row or watch cannot leave it behind.
func TestReadmeListsControllers(t *testing.T) {
	code, stdout, stderr := runManager(t, "--list-controllers")
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, found := strings.Cut(string(readme), "bin/manager --list-controllers\n```\n\n```text\n")
	listing, _, closed := strings.Cut(after, "```")
	if !found || !closed {
		t.Fatal("README.md has no text block after `bin/manager --list-controllers`")
	}
	if diff := cmp.Diff(stdout, listing); diff != "" {
		t.Errorf("README.md's listing against --list-controllers (-now +README):\n%s", diff)
	}
}

func TestHelpListsControllers(t *testing.T) {
	code, _, stderr := runManager(t, "--help")
	if code != 0 && code != 2 {
		t.Fatalf("exit status %d", code)
	}
	for _, want := range []string{"known controllers: myapp, verticalscaler, verticalpodautoscaler, configmapwatcher-deployments", "groups: verticalscaler", "groups: verticalscaler (verticalscaler, verticalpodautoscaler), configmapwatcher", "-controllers", "-reloader-annotations", "-kubeconfig", "-zap-log-level", "-leader-elect"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--help does not contain %q:\n%s", want, stderr)
		}
	}
}

func TestMissingKubeconfigFailsClearly(t *testing.T) {
	code, _, stderr := runManager(t, "--kubeconfig=/nonexistent/kubeconfig")
	if code != 1 || !strings.Contains(stderr, "Loading kubeconfig failed") {
		t.Errorf("exit status %d, stderr:\n%s", code, stderr)
	}
	// The build comes first, so that even a manager that cannot start says which one it was.
	if !strings.Contains(stderr, `"msg":"Starting Switchboard","version":"(devel)"`) || !strings.Contains(stderr, `"goVersion":"go`) {
		t.Errorf("the first log line does not give the build:\n%s", stderr)
	}
}

// TestVersion checks what --version prints; hack/release's tests check that `make build` and
// `make image` stamp it.
func TestVersion(t *testing.T) {
	code, stdout, stderr := runManager(t, "--version")
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		key, value, ok := strings.Cut(line, ": ")
		if !ok || value == "" {
			t.Errorf("line %q is not `key: value`", line)
		}
		keys = append(keys, key)
	}
	if want := []string{"version", "commit", "buildDate", "goVersion", "platform"}; strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Errorf("--version keys %v, want %v:\n%s", keys, want, stdout)
	}
}

// TestMissingMetricsCertFailsClearly: a --metrics-cert-path without the files stops the manager
// before anything else, naming the file, instead of serving a self-signed certificate that a
// verifying scraper refuses.
func TestMissingMetricsCertFailsClearly(t *testing.T) {
	code, _, stderr := runManager(t, "--metrics-cert-path=/nonexistent/certs", "--kubeconfig=/nonexistent/kubeconfig")
	if code != 1 || !strings.Contains(stderr, "reading the metrics certificate /nonexistent/certs/tls.crt") {
		t.Errorf("exit status %d, stderr:\n%s", code, stderr)
	}
}

func TestLogsSubcommandIsDispatched(t *testing.T) {
	code, _, stderr := runManager(t, "logs")
	if code != 2 || !strings.Contains(stderr, "summary") || !strings.Contains(stderr, "trace") {
		t.Errorf("`manager logs` with no subcommand: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestHelpFlagsAreDocumented: every flag `manager --help` prints is in
// docs/reference/flags.md, which `make docs` generates from the same flag sets.
func TestHelpFlagsAreDocumented(t *testing.T) {
	code, stdout, stderr := runManager(t, "--help")
	if code != 0 {
		t.Fatalf("manager --help exited %d:\n%s", code, stderr)
	}
	page, err := os.ReadFile(filepath.Join("docs", "reference", "flags.md"))
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	for _, line := range strings.Split(stdout+stderr, "\n") {
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		name := strings.Fields(strings.TrimPrefix(line, "  -"))[0]
		flags++
		if !strings.Contains(string(page), "| `--"+name+"` |") {
			t.Errorf("manager --help has --%s, docs/reference/flags.md does not: run `make docs`", name)
		}
	}
	if flags < 20 {
		t.Errorf("found only %d flags in manager --help:\n%s%s", flags, stdout, stderr)
	}
}

// TestHeapProfilingOffBeforeInit: internal/noheapprofile is initialised before any package that
// allocates, so that no allocation of the packages' initialisers is sampled (the package says
// why). GODEBUG=inittrace=1 makes the runtime print each package's initialisation in order,
// with what it allocated.
func TestHeapProfilingOffBeforeInit(t *testing.T) {
	t.Setenv("GODEBUG", "inittrace=1")
	code, _, stderr := runManager(t, "--version")
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	const pkg = "github.com/example/switchboard/internal/noheapprofile"
	var allocatedBefore []string
	for _, line := range strings.Split(stderr, "\n") {
		// init PACKAGE @0.63 ms, 0.004 ms clock, 0 bytes, 0 allocs
		fields := strings.Fields(line)
		if len(fields) < 10 || fields[0] != "init" {
			continue
		}
		if fields[1] == pkg {
			if len(allocatedBefore) > 0 {
				t.Errorf("packages initialised before %s allocated: %s", pkg, strings.Join(allocatedBefore, "; "))
			}
			return
		}
		if fields[len(fields)-4] != "0" {
			allocatedBefore = append(allocatedBefore, line)
		}
	}
	t.Fatalf("%s not initialised; GODEBUG=inittrace=1 printed:\n%s", pkg, stderr)
}
