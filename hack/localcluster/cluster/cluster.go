// Package cluster starts a local Kubernetes cluster without Docker: etcd and kube-apiserver
// (through envtest), kube-controller-manager, kube-scheduler, and kwok playing the kubelet of
// fake Nodes, so that Deployments get ReplicaSets and Pods, Pods get scheduled and become Ready,
// and owned objects are garbage-collected. `make run` runs the manager on it; tests can start
// one too.
//
// Every process runs in a process group of its own and is stopped by Stop, in the reverse
// order of start. A watchdog process stops them all if the program that started the cluster
// dies without calling Stop (SIGKILL, a crash), so no process is left behind either way. Linux
// only: the processes envtest starts are found through /proc.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Config says which binaries to run and where the cluster keeps its files.
type Config struct {
	// Dir holds the admin kubeconfig, the logs of every process, etcd's data and the API
	// server's certificates. What a previous cluster left there is removed first.
	Dir string
	// K8sBinDir holds etcd, kube-apiserver, kube-controller-manager and kube-scheduler.
	K8sBinDir string
	// Kwok is the kwok binary.
	Kwok string
	// KwokStages is a file of kwok Stages for Nodes and Pods.
	KwokStages string
	// CRDDir holds CustomResourceDefinitions to install before Start returns; empty for none.
	CRDDir string
	// Nodes is the number of fake Nodes; at least 1.
	Nodes int
}

// Exit is a process of the cluster that exited before Stop.
type Exit struct {
	// Name is the process's name, as in its log file's name.
	Name string
	// Err is how it exited: nil for status 0.
	Err error
}

// Cluster is a running local cluster.
type Cluster struct {
	// Kubeconfig is the path of a kubeconfig file for the admin (group system:masters).
	Kubeconfig string
	// Config is the admin's REST config.
	Config *rest.Config
	// Client is an uncached client for the admin, with client-go's scheme.
	Client client.Client
	// LogDir holds one log file per process.
	LogDir string

	env      *envtest.Environment
	watchdog *watchdog
	exits    chan Exit
	// kube-apiserver's binary, certificate directory and log, for RestartAPIServer.
	apiServerPath    string
	apiServerCertDir string
	apiServerLog     *os.File

	mu       sync.Mutex
	procs    []*process
	stopping bool
	logs     []*os.File
	// apiServer is the kube-apiserver RestartAPIServer started, nil while envtest's runs;
	// apiServerArgs are its arguments, read from envtest's on the first restart.
	apiServer     *process
	apiServerArgs []string
}

// The binaries a cluster runs from Config.K8sBinDir.
const (
	etcdBin              = "etcd"
	apiServerBin         = "kube-apiserver"
	controllerManagerBin = "kube-controller-manager"
	schedulerBin         = "kube-scheduler"
)

// readyTimeout bounds the wait for the controller manager and the Nodes once the processes run.
const readyTimeout = 60 * time.Second

// Start starts the cluster and returns once the API server serves the CRDs, the Nodes are
// Ready and kube-controller-manager runs its controllers. On error, whatever started is
// stopped. ctx bounds the waits.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if err := resetDir(cfg.Dir); err != nil {
		return nil, err
	}
	c := &Cluster{
		Kubeconfig: filepath.Join(cfg.Dir, "kubeconfig"),
		LogDir:     filepath.Join(cfg.Dir, "logs"),
		exits:      make(chan Exit, 1),
	}
	var err error
	if c.watchdog, err = startWatchdog(); err != nil {
		return nil, err
	}
	if err := c.start(ctx, cfg); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

// start starts the processes in order and waits for them.
func (c *Cluster) start(ctx context.Context, cfg Config) error {
	if err := c.startControlPlane(cfg); err != nil {
		return err
	}
	if err := c.startProcess(controllerManagerBin, filepath.Join(cfg.K8sBinDir, controllerManagerBin), controllerManagerArgs(c.Kubeconfig)...); err != nil {
		return err
	}
	if err := c.startProcess(schedulerBin, filepath.Join(cfg.K8sBinDir, schedulerBin), schedulerArgs(c.Kubeconfig)...); err != nil {
		return err
	}
	if err := c.startProcess("kwok", cfg.Kwok, kwokArgs(c.Kubeconfig, cfg.KwokStages)...); err != nil {
		return err
	}
	if err := c.addNodes(ctx, cfg.Nodes); err != nil {
		return err
	}
	return c.waitReady(ctx, cfg.Nodes)
}

// check reports a missing binary, a bad stages file, or a bad count, before anything starts.
func (cfg Config) check() error {
	if cfg.Dir == "" {
		return errors.New("no directory for the cluster's files")
	}
	if cfg.Nodes < 1 {
		return fmt.Errorf("%d Nodes: the cluster needs at least one", cfg.Nodes)
	}
	for _, bin := range []string{etcdBin, apiServerBin, controllerManagerBin, schedulerBin} {
		if err := checkExecutable(filepath.Join(cfg.K8sBinDir, bin)); err != nil {
			return fmt.Errorf("%w: `make %s` builds it", err, filepath.Join("bin", "k8s", bin))
		}
	}
	if err := checkExecutable(cfg.Kwok); err != nil {
		return fmt.Errorf("%w: `make kwok` builds it", err)
	}
	stages, err := os.ReadFile(cfg.KwokStages)
	if err != nil {
		return fmt.Errorf("reading kwok stages: %w: `make kwok` writes them", err)
	}
	if err := checkStages(stages); err != nil {
		return fmt.Errorf("kwok stages %s: %w", cfg.KwokStages, err)
	}
	if cfg.CRDDir != "" {
		if _, err := os.Stat(cfg.CRDDir); err != nil {
			return fmt.Errorf("CRD directory: %w", err)
		}
	}
	return nil
}

// checkExecutable reports a missing or non-executable file.
func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("binary %s not found", path)
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// resetDir removes what a previous cluster left in dir, and only that: dir may be a directory
// the caller keeps other files in.
func resetDir(dir string) error {
	for _, name := range []string{"kubeconfig", "logs", "etcd", "apiserver"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("removing the previous cluster's files: %w", err)
		}
	}
	for _, name := range []string{"logs", "etcd", "apiserver"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
			return fmt.Errorf("creating the cluster's directory: %w", err)
		}
	}
	return nil
}

// startControlPlane starts etcd and kube-apiserver through envtest, installs the CRDs, and
// writes the admin kubeconfig. envtest keeps etcd's data and the certificates in Dir, so that
// nothing is left in the temporary directory if the launcher dies.
func (c *Cluster) startControlPlane(cfg Config) error {
	etcdLog, err := c.logFile(etcdBin)
	if err != nil {
		return err
	}
	apiServerLog, err := c.logFile(apiServerBin)
	if err != nil {
		return err
	}
	c.apiServerPath = filepath.Join(cfg.K8sBinDir, apiServerBin)
	c.apiServerCertDir = filepath.Join(cfg.Dir, "apiserver")
	c.apiServerLog = apiServerLog
	env := &envtest.Environment{
		UseExistingCluster: new(false),
		ControlPlane: envtest.ControlPlane{
			Etcd: &envtest.Etcd{
				Path:    filepath.Join(cfg.K8sBinDir, etcdBin),
				DataDir: filepath.Join(cfg.Dir, "etcd"),
				Out:     etcdLog,
				Err:     etcdLog,
			},
			APIServer: &envtest.APIServer{
				Path:    c.apiServerPath,
				CertDir: c.apiServerCertDir,
				Out:     apiServerLog,
				Err:     apiServerLog,
			},
		},
	}
	// envtest's default /24 runs out after about 250 Services.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.96.0.0/16")
	if cfg.CRDDir != "" {
		env.CRDDirectoryPaths = []string{cfg.CRDDir}
		env.ErrorIfCRDPathMissing = true
	}
	c.env = env
	// envtest does not say which processes it started: tell the watchdog about each new child
	// while it starts them.
	stopWatching := c.watchChildrenUntilStopped()
	restConfig, err := env.Start()
	watchErr := stopWatching()
	if err != nil {
		return fmt.Errorf("starting etcd and kube-apiserver (logs in %s): %w", c.LogDir, err)
	}
	if watchErr != nil {
		return watchErr
	}
	c.Config = restConfig
	if c.Client, err = client.New(restConfig, client.Options{Scheme: scheme()}); err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	if err := os.WriteFile(c.Kubeconfig, env.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return nil
}

// watchChildrenUntilStopped tells the watchdog about new children every 100ms until the
// returned function is called, which does it a last time and returns the first error.
func (c *Cluster) watchChildrenUntilStopped() func() error {
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- c.watchdog.watchChildren()
				return
			case <-tick.C:
				if err := c.watchdog.watchChildren(); err != nil {
					<-stop
					done <- err
					return
				}
			}
		}
	}()
	return func() error {
		close(stop)
		return <-done
	}
}

// scheme is client-go's scheme: the cluster's client handles built-in kinds, and custom
// resources as unstructured objects.
func scheme() *runtime.Scheme { return clientgoscheme.Scheme }

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
// if it exits before Stop. Its stdout and stderr go to out.
func (c *Cluster) StartProcess(name string, out io.Writer, path string, args ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return fmt.Errorf("starting %s: the cluster is stopping", name)
	}
	if err := checkExecutable(path); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p, err := startProcess(name, out, path, args...)
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
// kwok, and those started with StartProcess.
func (c *Cluster) Exits() <-chan Exit { return c.exits }

// addNodes creates the fake Nodes node-1, node-2, ...
func (c *Cluster) addNodes(ctx context.Context, n int) error {
	for i := 1; i <= n; i++ {
		if err := c.Client.Create(ctx, fakeNode(fmt.Sprintf("node-%d", i))); err != nil {
			return fmt.Errorf("creating fake Node node-%d: %w", i, err)
		}
	}
	return nil
}

// waitReady waits until kwok has made every Node Ready and kube-controller-manager has created
// the default namespace's ServiceAccount, which shows that its controllers run.
func (c *Cluster) waitReady(ctx context.Context, nodes int) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := c.poll(ctx, func() (bool, error) { return c.nodesReady(ctx, nodes) }); err != nil {
		return fmt.Errorf("waiting for kwok to make the Nodes Ready (see %s): %w", filepath.Join(c.LogDir, "kwok.log"), err)
	}
	if err := c.poll(ctx, func() (bool, error) { return c.serviceAccountExists(ctx) }); err != nil {
		return fmt.Errorf("waiting for kube-controller-manager to create the default ServiceAccount (see %s): %w",
			filepath.Join(c.LogDir, controllerManagerBin+".log"), err)
	}
	return nil
}

// nodesReady reports whether n Nodes have the condition Ready=True.
func (c *Cluster) nodesReady(ctx context.Context, n int) (bool, error) {
	var nodes corev1.NodeList
	if err := c.Client.List(ctx, &nodes); err != nil {
		return false, err
	}
	ready := 0
	for _, node := range nodes.Items {
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready >= n, nil
}

// serviceAccountExists reports whether default/default exists.
func (c *Cluster) serviceAccountExists(ctx context.Context) (bool, error) {
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &corev1.ServiceAccount{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// poll calls done every 200ms until it returns true, a process of the cluster exits, or ctx
// ends.
func (c *Cluster) poll(ctx context.Context, done func() (bool, error)) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := done()
		if ok {
			return nil
		}
		lastErr = err
		select {
		case exit := <-c.exits:
			return fmt.Errorf("%s exited: %v", exit.Name, exit.Err)
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Stop stops every process in the reverse order of start (the processes started with
// StartProcess first, then kube-apiserver, whether envtest's or the one RestartAPIServer
// started, and etcd last), then the watchdog. Stopping twice is harmless.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return nil
	}
	c.stopping = true
	procs, apiServer := c.procs, c.apiServer
	c.mu.Unlock()

	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		errs = append(errs, procs[i].stop())
	}
	if apiServer != nil {
		errs = append(errs, apiServer.stop())
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping kube-apiserver and etcd: %w", err))
		}
	}
	if c.watchdog != nil {
		errs = append(errs, c.watchdog.done())
	}
	for _, f := range c.logs {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
