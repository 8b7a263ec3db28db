package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// startControlPlane starts etcd and kube-apiserver through envtest, with the aggregation layer
// for metrics, installs the CRDs, and writes the admin kubeconfig. envtest keeps etcd's data and
// the certificates in Dir, so that nothing is left in the temporary directory if the launcher
// dies.
func (c *Cluster) startControlPlane(cfg Config, pipeline *metricsPipeline) error {
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
	// envtest's default Service range is a /24; a /16 keeps ClusterIPs from running out when a
	// cluster holds many MyApps, each with its Service.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.96.0.0/16")
	for _, f := range pipeline.apiServerFlags() {
		env.ControlPlane.GetAPIServer().Configure().Set(f.name, f.value)
	}
	if len(cfg.DisableAdmissionPlugins) > 0 {
		env.ControlPlane.GetAPIServer().Configure().Set("disable-admission-plugins", strings.Join(cfg.DisableAdmissionPlugins, ","))
	}
	minor, err := apiServerMinor(c.apiServerPath)
	if err != nil {
		return err
	}
	if minor >= shardedListAndWatchSince {
		env.ControlPlane.GetAPIServer().Configure().Append("feature-gates", shardedListAndWatch+"=true")
	}
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

// shardedListAndWatch is the API server's feature gate of lists and watches filtered by shard
// (KEP-5866, alpha), which the local cluster turns on where the API server has it
// (shardedListAndWatchSince and later), so that --shard-group is filtered on the server.
const (
	shardedListAndWatch      = "ShardedListAndWatch"
	shardedListAndWatchSince = 36
)

// apiServerMinor returns the minor version of the kube-apiserver binary at path, from its
// --version ("Kubernetes v1.37.2").
func apiServerMinor(path string) (int, error) {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return 0, fmt.Errorf("asking %s its version: %w", path, err)
	}
	version := strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes")), "v")
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return 0, fmt.Errorf("%s --version said %q, not Kubernetes vMAJOR.MINOR.PATCH", path, out)
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil {
		return 0, fmt.Errorf("%s --version said %q, not Kubernetes vMAJOR.MINOR.PATCH", path, out)
	}
	return minor, nil
}
