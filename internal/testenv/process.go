package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// shippedBuild is how `make build`, `make image` and the Dockerfile build the manager (the
// Makefile's GO_BUILD_MANAGER, but for its version stamps; a test keeps the two in step):
// static, without file paths of the build machine, stripped.
var shippedBuild = struct {
	env  []string
	args []string
}{
	env:  []string{"CGO_ENABLED=0"},
	args: []string{"build", "-trimpath", "-ldflags=-s -w"},
}

// Build builds pkg, a package of this module ("." for the manager, or an import path such as
// "github.com/example/switchboard/hack/memfloor"), into the file out, as `make build` builds
// the manager: what a test runs or a benchmark measures is what ships.
func Build(pkg, out string) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", append(slices.Clone(shippedBuild.args), "-o", out, pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), shippedBuild.env...)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, output)
	}
	return nil
}

// BuildBinary is Build for a test: it builds pkg into the test's temporary directory and
// returns the binary's path.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if pkg == "." {
		out = filepath.Join(filepath.Dir(out), "manager")
	}
	if err := Build(pkg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// WriteKubeconfig writes a kubeconfig file at path that connects as cfg does: with cfg's client
// certificate or bearer token, and namespace (when not empty) as the context's namespace.
func WriteKubeconfig(path string, cfg *rest.Config, namespace string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["context"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user", Namespace: namespace}
	kc.CurrentContext = "context"
	return clientcmd.WriteToFile(*kc, path)
}

// Command is a program to run as a process of its own: the manager binary, or another program
// of this module.
type Command struct {
	// Binary is the program's path (Build makes one) and Args its arguments.
	Binary string
	Args   []string
	// ProbeAddress is where the program serves /readyz (the manager's
	// --health-probe-bind-address), for Ready; empty when it serves none.
	ProbeAddress string
	// MetricsAddress is where the program serves /metrics over plain HTTP (the manager's
	// --metrics-bind-address with --metrics-secure=false), for Metrics and ControllerMetrics;
	// empty when it serves none.
	MetricsAddress string
	// LogDir, when set, is where RunProcess saves the program's output when the test ends, as
	// TEST-NN.log, NN numbering the processes of the test binary in start order.
	LogDir string
	// Root, when set, is the directory the program runs in as its root (chroot, which needs
	// root), as a container runs in its image's filesystem: Binary and the paths in Args are
	// then inside it.
	Root string
	// User, when set, is the user and group the program runs as, as an image's User.
	User *syscall.Credential
	// Env, when not nil, is the program's whole environment, as a container's is: nothing of
	// the test's. Nil passes on the test's.
	Env []string
}

// Process is a running Command. Its methods return errors rather than fail a test, so that
// programs without a testing.T (testdata/logs/capture.go) can use it; RunProcess wraps it for
// tests.
type Process struct {
	Command
	cmd    *exec.Cmd
	output *lockedBuffer
	// done is closed when the process has exited, whoever stopped it; err is then Wait's result.
	done chan struct{}
	err  error
}

// StartProcess starts c in a process group of its own, so that stopping it also stops whatever
// it started, with stdout and stderr captured together.
func StartProcess(c Command) (*Process, error) {
	p := &Process{Command: c, output: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(c.Binary, c.Args...)
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Chroot: c.Root, Credential: c.User}
	p.cmd.Env = c.Env
	if c.Root != "" {
		// chroot leaves the working directory outside the new root.
		p.cmd.Dir = "/"
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", c.Binary, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// processesStarted numbers the processes RunProcess starts, so that saved logs sort in start
// order.
var processesStarted atomic.Int32

// RunProcess starts c for a test and stops it when the test ends (Stop, with 30 s before
// SIGKILL, which fails the test). When the test has failed it logs the process's output, and
// when c.LogDir is set it saves the output there.
func RunProcess(t testing.TB, c Command) *Process {
	t.Helper()
	p, err := StartProcess(c)
	if err != nil {
		t.Fatal(err)
	}
	number := processesStarted.Add(1)
	t.Cleanup(func() {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("%s %v output:\n%s", filepath.Base(c.Binary), c.Args, p.Output())
		}
		if c.LogDir != "" {
			name := fmt.Sprintf("%s-%02d.log", strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()), number)
			if err := p.SaveLog(filepath.Join(c.LogDir, name)); err != nil {
				t.Errorf("saving the output of %s: %v", c.Binary, err)
			}
		}
	})
	return p
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output is what the process has written to stdout and stderr so far.
func (p *Process) Output() string { return p.output.String() }

// SaveLog writes the process's output so far to path.
func (p *Process) SaveLog(path string) error {
	return os.WriteFile(path, []byte(p.Output()), 0o644)
}

// WaitOutput waits until the process's output contains s, and fails if it exits first.
func (p *Process) WaitOutput(ctx context.Context, s string) error {
	for {
		if strings.Contains(p.Output(), s) {
			return nil
		}
		select {
		case <-p.done:
			if strings.Contains(p.Output(), s) {
				return nil
			}
			return fmt.Errorf("%s exited (%v) before writing %q:\n%s", p.Binary, p.err, s, p.Output())
		case <-ctx.Done():
			return fmt.Errorf("%s has not written %q: %w", p.Binary, s, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Ready returns nil when the process's /readyz answers 200.
func (p *Process) Ready(ctx context.Context) error {
	if p.ProbeAddress == "" {
		return errors.New("the process serves no /readyz (no ProbeAddress)")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.ProbeAddress+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz answered %s", resp.Status)
	}
	return nil
}

// Metrics scrapes the process's /metrics and returns, per family, the sum of its counter,
// gauge and untyped samples (histograms and summaries count as zero).
func (p *Process) Metrics(ctx context.Context) (map[string]float64, error) {
	if p.MetricsAddress == "" {
		return nil, errors.New("the process serves no /metrics (no MetricsAddress)")
	}
	families, err := scrape(ctx, "http://"+p.MetricsAddress+"/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, family := range families {
		for _, m := range family.GetMetric() {
			out[name] += sampleValue(m)
		}
	}
	return out, nil
}

// Families scrapes the process's /metrics and returns its metric families by name.
func (p *Process) Families(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	if p.MetricsAddress == "" {
		return nil, errors.New("the process serves no /metrics (no MetricsAddress)")
	}
	return scrape(ctx, "http://"+p.MetricsAddress+"/metrics")
}

// MetricByLabel scrapes the process's /metrics and returns, for the family, the sum of its
// samples per value of label: for example switchboard_controller_leader by "controller".
func (p *Process) MetricByLabel(ctx context.Context, family, label string) (map[string]float64, error) {
	if p.MetricsAddress == "" {
		return nil, errors.New("the process serves no /metrics (no MetricsAddress)")
	}
	families, err := scrape(ctx, "http://"+p.MetricsAddress+"/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range families[family].GetMetric() {
		out[labels(m)[label]] += sampleValue(m)
	}
	return out, nil
}

// ControllerMetrics reads each controller's Reading from the process's /metrics: a
// MetricsSource for Quiet.
func (p *Process) ControllerMetrics(ctx context.Context) (map[string]Reading, error) {
	if p.MetricsAddress == "" {
		return nil, errors.New("the process serves no /metrics (no MetricsAddress)")
	}
	return MetricsEndpoint("http://" + p.MetricsAddress + "/metrics")(ctx)
}

// Status reads the named fields of /proc/PID/status that are sizes ("VmRSS", "VmHWM",
// "RssAnon", "RssFile"), in bytes.
func (p *Process) Status(fields ...string) (map[string]float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		words := strings.Fields(line)
		if len(words) != 3 || words[2] != "kB" {
			continue
		}
		if name := strings.TrimSuffix(words[0], ":"); slices.Contains(fields, name) {
			kb, err := strconv.ParseFloat(words[1], 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/%d/status: %s: %w", p.Pid(), name, err)
			}
			out[name] = kb * 1024
		}
	}
	if len(out) != len(fields) {
		return nil, fmt.Errorf("/proc/%d/status has %v of %v", p.Pid(), out, fields)
	}
	return out, nil
}

// Stop stops the process as the kubelet would: SIGTERM to its process group, then SIGKILL if
// it has not exited within timeout, which Stop reports as an error. It waits for the exit.
// Stopping a process that has exited does nothing.
func (p *Process) Stop(timeout time.Duration) error {
	if exited, _ := p.Exited(); exited {
		return nil
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = p.Kill()
		return fmt.Errorf("%s did not stop within %s of SIGTERM", p.Binary, timeout)
	}
}

// Kill kills the process group with SIGKILL, as a crash would (no chance to hand anything
// over), and waits for the exit.
func (p *Process) Kill() error {
	if exited, _ := p.Exited(); exited {
		return nil
	}
	if err := syscall.Kill(-p.Pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s: %w", p.Binary, err)
	}
	<-p.done
	return nil
}

// Exited reports whether the process has exited, and Wait's error if so.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// lockedBuffer is a process's output, which tests read while the process writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
