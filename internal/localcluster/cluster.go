// Package localcluster starts a local Kubernetes cluster without Docker: etcd and kube-apiserver
// (through envtest), kube-controller-manager, kube-scheduler, kwok playing the kubelet of fake
// Nodes, and metrics-server, so that Deployments get ReplicaSets and Pods, Pods get scheduled and
// become Ready, owned objects are garbage-collected, and Pods have CPU and memory usage in
// metrics.k8s.io (emulated by kwok, scraped by a real metrics-server behind kube-apiserver's
// aggregation layer). `make run` runs the manager on it; tests can start one too.
//
// Every process runs in a process group of its own and is stopped by Stop, in the reverse
// order of start. A watchdog process stops them all if the program that started the cluster
// dies without calling Stop (SIGKILL, a crash), so no process is left behind either way. Linux
// only: the processes envtest starts are found through /proc.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

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

// Start starts the cluster and returns once the API server serves the CRDs, the Nodes are
// Ready, kube-controller-manager runs its controllers and the API server reaches
// metrics-server. On error, whatever started is stopped. ctx bounds the waits.
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
	pipeline, err := newMetricsPipeline(filepath.Join(cfg.Dir, pkiDir))
	if err != nil {
		return err
	}
	if err := c.startControlPlane(cfg, pipeline); err != nil {
		return err
	}
	if err := c.startProcess(controllerManagerBin, filepath.Join(cfg.K8sBinDir, controllerManagerBin), controllerManagerArgs(c.Kubeconfig)...); err != nil {
		return err
	}
	if err := c.startProcess(schedulerBin, filepath.Join(cfg.K8sBinDir, schedulerBin), schedulerArgs(c.Kubeconfig)...); err != nil {
		return err
	}
	resizeStages := filepath.Join(cfg.Dir, resizeStagesFile)
	if err := writeResizeStages(resizeStages); err != nil {
		return err
	}
	if err := c.startProcess("kwok", cfg.Kwok, kwokArgs(c.Kubeconfig, cfg.KwokStages, resizeStages, cfg.KwokMetrics, cfg.KwokConfigs, pipeline)...); err != nil {
		return err
	}
	if err := c.startMetricsServer(ctx, cfg.MetricsServer, pipeline); err != nil {
		return err
	}
	if err := c.addNodes(ctx, cfg.Nodes); err != nil {
		return err
	}
	return c.waitReady(ctx, cfg.Nodes)
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
