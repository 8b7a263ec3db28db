package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/example/switchboard/internal/manifests"
)

// Config says which binaries to run and where the cluster keeps its files.
type Config struct {
	// Dir holds the admin kubeconfig, the logs of every process, etcd's data, the API server's
	// certificates and those of the aggregation layer. What a previous cluster left there is
	// removed first.
	Dir string
	// K8sBinDir holds etcd, kube-apiserver, kube-controller-manager and kube-scheduler.
	K8sBinDir string
	// Kwok is the kwok binary.
	Kwok string
	// KwokStages is a file of kwok Stages for Nodes and Pods.
	KwokStages string
	// KwokConfigs are further files of kwok configuration, for what a run adds to the cluster:
	// for example a ClusterExec that runs a Pod's commands on this machine.
	KwokConfigs []string
	// KwokMetrics is a file of kwok configuration that emulates the kubelet's resource metrics:
	// a ClusterResourceUsage (or ResourceUsage) giving Pods their usage, and a Metric serving it
	// at /metrics/nodes/{nodeName}/metrics/resource, the path each fake Node names for
	// metrics-server.
	KwokMetrics string
	// MetricsServer is the metrics-server binary. It scrapes kwok and serves metrics.k8s.io
	// through the API server's aggregation layer.
	MetricsServer string
	// CRDDir holds CustomResourceDefinitions to install before Start returns; empty for none.
	CRDDir string
	// Nodes is the number of fake Nodes; at least 1.
	Nodes int
	// DisableAdmissionPlugins are admission plugins of kube-apiserver to switch off: a test
	// turns PodResizeValidator off to see kwok answer a resize beyond a Node's allocatable as
	// the kubelet does.
	DisableAdmissionPlugins []string
}

// The binaries a cluster runs from Config.K8sBinDir.
const (
	etcdBin              = "etcd"
	apiServerBin         = "kube-apiserver"
	controllerManagerBin = "kube-controller-manager"
	schedulerBin         = "kube-scheduler"
)

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
	for _, f := range cfg.KwokConfigs {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("reading kwok configuration: %w", err)
		}
		if err := checkKwokConfig(data); err != nil {
			return fmt.Errorf("kwok configuration %s: %w", f, err)
		}
	}
	if err := checkExecutable(cfg.MetricsServer); err != nil {
		return fmt.Errorf("%w: `make metrics-server` builds it", err)
	}
	metrics, err := os.ReadFile(cfg.KwokMetrics)
	if err != nil {
		return fmt.Errorf("reading kwok metrics configuration: %w: `make kwok` writes it", err)
	}
	if err := checkKwokMetrics(metrics); err != nil {
		return fmt.Errorf("kwok metrics configuration %s: %w", cfg.KwokMetrics, err)
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
	for _, name := range []string{"kubeconfig", "logs", "etcd", "apiserver", pkiDir} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("removing the previous cluster's files: %w", err)
		}
	}
	for _, name := range []string{"logs", "etcd", "apiserver", pkiDir} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
			return fmt.Errorf("creating the cluster's directory: %w", err)
		}
	}
	return nil
}

// checkKwokConfig checks that data holds kwok configuration, and nothing else: kwok would
// ignore an object of another group.
func checkKwokConfig(data []byte) error {
	docs, err := manifests.Decode(data)
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return errors.New("no object")
	}
	for i, doc := range docs {
		if doc.GetAPIVersion() != "kwok.x-k8s.io/v1alpha1" {
			return fmt.Errorf("object %d is a %s %s, not kwok configuration (kwok.x-k8s.io/v1alpha1)", i+1, doc.GetAPIVersion(), doc.GetKind())
		}
	}
	return nil
}
