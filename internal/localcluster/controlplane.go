package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
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
	if err := waitCRDsInOpenAPI(restConfig, env.CRDs); err != nil {
		return err
	}
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

// crdOpenAPITimeout bounds the wait for the installed CRDs' OpenAPI. kube-apiserver publishes a
// CRD's OpenAPI a moment after envtest sees it served.
const crdOpenAPITimeout = time.Minute

// waitCRDsInOpenAPI waits until kube-apiserver's OpenAPI v3 has a path for each group and
// version the CRDs serve. kwok reads a custom resource's schema there when it starts a Stage
// for it (an Argo Rollout's), and exits if the path is not there yet.
func waitCRDsInOpenAPI(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	var want []string
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if v.Served {
				want = append(want, "apis/"+crd.Spec.Group+"/"+v.Name)
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a discovery client: %w", err)
	}
	var missing []string
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, crdOpenAPITimeout, true, func(context.Context) (bool, error) {
		paths, err := d.OpenAPIV3().Paths()
		if err != nil {
			return false, nil //nolint:nilerr // published a moment later: poll again
		}
		missing = missing[:0]
		for _, p := range want {
			if _, ok := paths[p]; !ok {
				missing = append(missing, p)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("the installed CRDs' OpenAPI (%s) not published by kube-apiserver in %s: %w", strings.Join(missing, ", "), crdOpenAPITimeout, err)
	}
	return nil
}
