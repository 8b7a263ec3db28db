package localcluster

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Exit is a process of the cluster that exited before Stop.
type Exit struct {
	// Name is the process's name, as in its log file's name.
	Name string
	// Err is how it exited: nil for status 0.
	Err error
}

// logFile creates the log file of the named process.
func (c *Cluster) logFile(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(c.LogDir, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("creating a log file: %w", err)
	}
	c.mu.Lock()
	c.logs = append(c.logs, f)
	c.mu.Unlock()
	return f, nil
}

// processEnv is the environment of every process the cluster starts: the launcher's, with
// KUBECONFIG naming this cluster's kubeconfig. Each is given the cluster by a flag too; this
// keeps anything that reads KUBECONFIG instead (a kubectl a process runs, a library's default)
// off the cluster of a KUBECONFIG the user exported for their own kubectl.
func (c *Cluster) processEnv() []string { return withKubeconfig(os.Environ(), c.Kubeconfig) }

// startProcess starts a process of the cluster, logging to LogDir/NAME.log.
func (c *Cluster) startProcess(name, path string, args ...string) error {
	out, err := c.logFile(name)
	if err != nil {
		return err
	}
	return c.StartProcess(name, out, path, args...)
}

// StartProcess starts a process that belongs to the cluster: Stop stops it (before the
// processes started earlier), the watchdog stops it if the caller dies, and Exits reports it
// if it exits before Stop. Its stdout and stderr go to out. Its KUBECONFIG is the cluster's
// (see processEnv).
func (c *Cluster) StartProcess(name string, out io.Writer, path string, args ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return fmt.Errorf("starting %s: the cluster is stopping", name)
	}
	if err := checkExecutable(path); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p, err := startProcess(name, out, c.processEnv(), path, args...)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	if err := c.watchdog.watch(p.pid()); err != nil {
		return err
	}
	go c.reportExit(p)
	return nil
}

// reportExit sends p's exit on Exits unless the cluster is stopping.
func (c *Cluster) reportExit(p *process) {
	<-p.done
	c.mu.Lock()
	stopping := c.stopping
	c.mu.Unlock()
	if stopping {
		return
	}
	select {
	case c.exits <- Exit{Name: p.name, Err: p.err}:
	default: // A report is pending already; the caller acts on the first.
	}
}

// Exits reports the processes that exit before Stop: the controller manager, the scheduler,
// kwok, metrics-server, and those started with StartProcess.
func (c *Cluster) Exits() <-chan Exit { return c.exits }
