package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/example/switchboard/internal/testenv"
)

// gettingStarted is the walkthrough TestGettingStarted follows.
var gettingStarted = filepath.Join(root, "docs", "getting-started.md")

// walkthroughStep is one section of the walkthrough, the shell commands of its `sh` blocks,
// and the lines of its `text` blocks (the sample output).
type walkthroughStep struct {
	title    string
	commands []string
	output   []string
}

// showsHeader says whether the step's sample output has a line of the same columns as header.
func (s walkthroughStep) showsHeader(header string) bool {
	want := strings.Fields(header)
	for _, line := range s.output {
		if slices.Equal(strings.Fields(line), want) {
			return true
		}
	}
	return false
}

// listsColumns says whether a command prints a table whose first line is its column headers,
// which the page's sample output must show.
func listsColumns(command string) bool {
	return strings.HasPrefix(command, "kubectl get ") || strings.HasPrefix(command, "kubectl top ")
}

// TestGettingStarted follows docs/getting-started.md as a reader would: it runs `make run`'s
// launcher (cmd/localcluster, with the samples), then every command of the page's `sh` blocks
// in order against that cluster, and finally stops the launcher with Ctrl-C. So the page cannot
// drift from what works: a command that fails, or one the test does not know how to run, fails
// the test. A command that fails is tried again for a while, as a reader would when the page
// says to wait (metrics take a minute).
func TestGettingStarted(t *testing.T) {
	t.Parallel()
	steps := readWalkthrough(t)
	dir := t.TempDir()
	probes, metrics := testenv.FreeAddress(t), testenv.FreeAddress(t)
	launcher := filepath.Join(dir, "localcluster")
	if err := testenv.Build("github.com/example/switchboard/cmd/localcluster", launcher); err != nil {
		t.Fatal(err)
	}
	binaries := testenv.LocalClusterConfig(t, 1)
	k8s := binaries.K8sBinDir
	clusterDir := filepath.Join(dir, "cluster")
	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	// As `make run` runs it, from the module root (the CRDs and samples are read from there),
	// with the manager's listeners on free ports so that a `make run` beside it is not disturbed.
	cmd := exec.Command(launcher, "--dir="+clusterDir, "--k8s-bin-dir="+abs(t, k8s),
		"--kwok="+abs(t, binaries.Kwok),
		"--kwok-stages="+abs(t, binaries.KwokStages),
		"--kwok-metrics="+abs(t, binaries.KwokMetrics),
		"--metrics-server="+abs(t, binaries.MetricsServer),
		"--manager="+manager, "--", "--health-probe-bind-address="+probes, "--metrics-bind-address="+metrics)
	cmd.Dir = absRoot
	output := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = output, output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
			if err := <-exited; err != nil {
				t.Logf("make run after Ctrl-C: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("make run's output:\n%s", output.String())
		}
	})
	kubeconfig := filepath.Join(clusterDir, "kubeconfig")
	testenv.Eventually(t, 3*time.Minute, func() error {
		if strings.Contains(output.String(), "Starting the manager") {
			return nil
		}
		return fmt.Errorf("the local cluster is not ready yet")
	})

	// What the page's commands name on a reader's machine, and what they are here.
	replacer := strings.NewReplacer("localhost:8081", probes, "bin/manager ", manager+" ")
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig)
	for _, step := range steps {
		for _, line := range step.commands {
			switch {
			case line == "make run":
				continue // started above
			case line == "export KUBECONFIG=bin/cluster/kubeconfig":
				continue // env holds this cluster's
			case !strings.HasPrefix(line, "kubectl ") && !strings.HasPrefix(line, "curl ") && !strings.HasPrefix(line, "bin/manager "):
				t.Fatalf("%s: step %q has a command the test does not know how to run: %s", gettingStarted, step.title, line)
			}
			command := replacer.Replace(line)
			var out []byte
			testenv.Eventually(t, 3*time.Minute, func() error {
				c := exec.Command("sh", "-c", command)
				c.Dir, c.Env = absRoot, env
				var err error
				if out, err = c.CombinedOutput(); err != nil {
					return fmt.Errorf("step %q: %s: %v\n%s", step.title, line, err, out)
				}
				// The columns the reader sees are those the page shows ("No resources found"
				// is tried again, as a reader would).
				if header, _, _ := strings.Cut(string(out), "\n"); listsColumns(line) && !step.showsHeader(header) {
					return fmt.Errorf("step %q: %s printed the columns %q, which the page's sample output does not show:\n%s", step.title, line, header, out)
				}
				return nil
			})
			t.Logf("step %q: $ %s\n%s", step.title, line, out)
		}
	}

	// The last step: Ctrl-C stops the manager and the cluster, and the launcher exits cleanly.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	stopped = true
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("make run after Ctrl-C: %v", err)
		}
	case <-time.After(time.Minute):
		t.Error("make run did not stop within a minute of Ctrl-C")
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if err := <-exited; err != nil {
			t.Logf("make run after SIGKILL: %v", err)
		}
	}
}

// readWalkthrough returns the page's steps (its "## " sections) with the commands of their
// `sh` blocks, comments and blank lines left out, and the lines of their `text` blocks.
func readWalkthrough(t *testing.T) []walkthroughStep {
	t.Helper()
	f, err := os.Open(gettingStarted)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []walkthroughStep
	inShell, inText, inBlock := false, false, false
	comment := regexp.MustCompile(`\s+#\s.*$`)
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			inShell = !inBlock && strings.TrimPrefix(line, "```") == "sh"
			inText = !inBlock && strings.TrimPrefix(line, "```") == "text"
			inBlock = !inBlock
		case inText && len(steps) > 0:
			steps[len(steps)-1].output = append(steps[len(steps)-1].output, line)
		case !inBlock && strings.HasPrefix(line, "## "):
			steps = append(steps, walkthroughStep{title: strings.TrimPrefix(line, "## ")})
		case inShell:
			line = strings.TrimSpace(comment.ReplaceAllString(line, ""))
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if len(steps) == 0 {
				t.Fatalf("%s: a command before the first section: %s", gettingStarted, line)
			}
			steps[len(steps)-1].commands = append(steps[len(steps)-1].commands, line)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	var commands int
	for _, step := range steps {
		commands += len(step.commands)
	}
	if commands < 10 {
		t.Fatalf("%s: only %d commands found; has the page lost its sh blocks?", gettingStarted, commands)
	}
	return steps
}

// abs returns path made absolute, for a process that runs in another directory.
func abs(t *testing.T, path string) string {
	t.Helper()
	a, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
