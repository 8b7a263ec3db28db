package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// RestartAPIServer kills kube-apiserver with SIGKILL, as a crash would, and starts it again
// with the same command line: the same port, certificates and etcd, so that every client's
// kubeconfig and tokens stay valid and every object is still there. It returns once the new
// one's /readyz answers 200. The new process belongs to the cluster like those of
// StartProcess: Stop stops it and the watchdog stops it if the caller dies; like envtest's,
// its exit is not reported on Exits.
//
// SIGKILL rather than SIGTERM: on SIGTERM kube-apiserver stops listening at once but exits
// only when its shutdown timeout, a minute, has passed, waiting for the watches its clients
// hold open (client-go's informers always hold some). Through that minute every new request
// is refused: kwok cannot renew the Node Leases, so kube-controller-manager marks the fake
// Nodes NotReady and their Pods not ready, and kwok's Stages never make a running Pod ready
// again; the manager cannot renew its leader Lease and exits. After SIGKILL the API server
// is back within seconds.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	p, err := c.replaceAPIServer()
	if err != nil {
		return err
	}
	return c.waitAPIServerReady(ctx, p)
}

// replaceAPIServer kills the running kube-apiserver, waits until it has exited, and starts
// the new one.
func (c *Cluster) replaceAPIServer() (*process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return nil, errors.New("restarting kube-apiserver: the cluster is stopping")
	}
	if c.apiServer == nil {
		if err := c.killEnvtestAPIServer(); err != nil {
			return nil, err
		}
	} else if err := c.apiServer.kill(); err != nil {
		return nil, err
	}
	// The log goes on in the same file; this line shows where the new process begins.
	fmt.Fprintf(c.apiServerLog, "\n=== %s: killed with SIGKILL and started again by RestartAPIServer ===\n\n", time.Now().Format(time.RFC3339Nano))
	p, err := startProcess(apiServerBin, c.apiServerLog, c.processEnv(), c.apiServerPath, c.apiServerArgs...)
	if err != nil {
		return nil, err
	}
	c.apiServer = p
	if err := c.watchdog.watch(p.pid()); err != nil {
		return nil, err
	}
	return p, nil
}

// killEnvtestAPIServer finds the kube-apiserver envtest started, which envtest does not
// expose, among this process's children (by its certificate directory, which no other
// cluster shares), records its arguments, kills it, and waits until it has exited (envtest
// reaps it).
func (c *Cluster) killEnvtestAPIServer() error {
	pid, args, err := findChild(os.Getpid(), c.apiServerPath, "--cert-dir="+c.apiServerCertDir)
	if err != nil {
		return fmt.Errorf("finding envtest's kube-apiserver: %w", err)
	}
	c.apiServerArgs = args
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing kube-apiserver: %w", err)
	}
	stat := filepath.Join("/proc", strconv.Itoa(pid), "stat")
	for deadline := time.Now().Add(stopTimeout); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(stat); os.IsNotExist(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver (pid %d) still there %s after SIGKILL", pid, stopTimeout)
		}
	}
}

// waitAPIServerReady polls /readyz as the admin until it answers 200, p exits, or ctx ends or
// readyTimeout passes.
func (c *Cluster) waitAPIServerReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	httpClient, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return fmt.Errorf("creating an HTTP client for /readyz: %w", err)
	}
	readyz, err := url.JoinPath(c.Config.Host, "readyz")
	if err != nil {
		return fmt.Errorf("the /readyz URL: %w", err)
	}
	log := filepath.Join(c.LogDir, apiServerBin+".log")
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if ready(ctx, httpClient, readyz) {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("the restarted kube-apiserver exited (see %s): %v", log, p.err)
		case <-ctx.Done():
			return fmt.Errorf("waiting for the restarted kube-apiserver's /readyz (see %s): %w", log, ctx.Err())
		case <-tick.C:
		}
	}
}

// ready reports whether a GET of url answers 200.
func ready(ctx context.Context, httpClient *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// findChild finds the child of ppid leading its own process group that runs path with arg
// among its arguments, and returns its ID and arguments, from /proc (Linux).
func findChild(ppid int, path, arg string) (int, []string, error) {
	pids, err := childGroupLeaders(ppid)
	if err != nil {
		return 0, nil, err
	}
	for _, pid := range pids {
		data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			continue // The process exited since the listing.
		}
		if argv := parseCmdline(data); runs(argv, path, arg) {
			return pid, argv[1:], nil
		}
	}
	return 0, nil, fmt.Errorf("no child process runs %s with %s", path, arg)
}

// runs reports whether argv runs path (argv[0], as exec.Command passes it) with arg among
// its arguments.
func runs(argv []string, path, arg string) bool {
	return len(argv) > 0 && argv[0] == path && slices.Contains(argv[1:], arg)
}

// parseCmdline splits the contents of /proc/PID/cmdline: the arguments, argv[0] first, each
// ended by a NUL byte. Arguments may be empty or hold spaces; a zombie's cmdline is empty.
func parseCmdline(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	fields := bytes.Split(bytes.TrimSuffix(data, []byte{0}), []byte{0})
	argv := make([]string, len(fields))
	for i, f := range fields {
		argv[i] = string(f)
	}
	return argv
}
