package localcluster

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// stopTimeout is how long a process has to exit after SIGTERM before it gets SIGKILL.
const stopTimeout = 10 * time.Second

// process is a child process in a process group of its own, so that a Ctrl-C in the terminal
// reaches only the launcher, which stops the processes in order, and so that stopping a
// process also stops anything it started.
type process struct {
	name string
	cmd  *exec.Cmd
	// done is closed when the process has exited; err is then Wait's result.
	done chan struct{}
	err  error
}

// startProcess starts path with args in the environment env, its output going to out.
func startProcess(name string, out io.Writer, env []string, path string, args ...string) (*process, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// withKubeconfig returns environ with KUBECONFIG set to kubeconfig, in place of any other.
func withKubeconfig(environ []string, kubeconfig string) []string {
	env := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, "KUBECONFIG=") })
	return append(env, "KUBECONFIG="+kubeconfig)
}

// pid is the process's ID, which is also its process group's ID.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, and SIGKILL when the process has not exited within
// stopTimeout. It returns an error only when the process could not be stopped; how it exited
// is not an error, because every process exits with a signal status here.
func (p *process) stop() error {
	if p.exited() {
		return nil
	}
	if err := syscall.Kill(-p.pid(), syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := p.kill(); err != nil {
		return err
	}
	return fmt.Errorf("%s did not exit within %s of SIGTERM and was killed", p.name, stopTimeout)
}

// kill sends SIGKILL to the process group, as a crash would end it, and waits until the
// process has exited.
func (p *process) kill() error {
	if err := syscall.Kill(-p.pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("%s (pid %d) did not exit within %s of SIGKILL", p.name, p.pid(), stopTimeout)
	}
}
