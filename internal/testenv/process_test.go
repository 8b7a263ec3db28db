package testenv

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBuildIsShipped keeps Build in step with the Makefile's GO_BUILD_MANAGER, which `make
// build`, `make image` and the Dockerfile use: a benchmark that measures the manager measures
// what ships. Build leaves out the version stamps (VERSION_LDFLAGS), strings that change nothing
// a test or a benchmark looks at.
func TestBuildIsShipped(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^GO_BUILD_MANAGER\s*=\s*(.*)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile has no GO_BUILD_MANAGER")
	}
	got := strings.Join(slices.Concat(shippedBuild.env, []string{"go"}, shippedBuild.args, []string{"-o"}), " ")
	want := strings.ReplaceAll(strings.TrimSpace(string(m[1])), " $(VERSION_LDFLAGS)", "")
	if want = strings.ReplaceAll(want, `"`, ""); got != want {
		t.Errorf("Build runs %q, the Makefile %q", got, want)
	}
}

// TestProcessLifecycle runs a shell as the process: output captured, exit seen, SIGTERM obeyed,
// and a process that ignores SIGTERM killed after the timeout.
func TestProcessLifecycle(t *testing.T) {
	ctx := context.Background()
	p, err := StartProcess(Command{Binary: "/bin/sh", Args: []string{"-c", "echo started; echo oops >&2; exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitOutput(ctx, "oops"); err != nil {
		t.Fatal(err)
	}
	if exited, _ := p.Exited(); exited {
		t.Fatal("exited early")
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if exited, err := p.Exited(); !exited || err == nil {
		t.Errorf("after Stop: exited %v, %v; want exited by SIGTERM", exited, err)
	}
	if got := p.Output(); got != "started\noops\n" {
		t.Errorf("output %q", got)
	}

	stubborn, err := StartProcess(Command{Binary: "/bin/sh", Args: []string{"-c", "trap '' TERM; echo trapped; while :; do sleep 0.1; done"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := stubborn.WaitOutput(ctx, "trapped"); err != nil {
		t.Fatal(err)
	}
	if _, err := stubborn.Status("VmRSS"); err != nil {
		t.Errorf("Status: %v", err)
	}
	if err := stubborn.Stop(200 * time.Millisecond); err == nil {
		t.Error("Stop of a process that ignores SIGTERM reported no error")
	}
	if exited, _ := stubborn.Exited(); !exited {
		t.Error("not killed after the timeout")
	}

	quick, err := StartProcess(Command{Binary: "/bin/sh", Args: []string{"-c", "exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := quick.WaitOutput(ctx, "never"); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("WaitOutput on an exited process: %v", err)
	}
}
