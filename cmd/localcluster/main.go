// Command localcluster runs the manager on a local cluster it starts without Docker (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok with fake Nodes and their Pods'
// usage, metrics-server), with the CRDs installed and the samples applied. It is what `make run`
// runs unless RUN_KUBECONFIG names another cluster; the KUBECONFIG of the shell is not used:
// every process it starts gets the local cluster's kubeconfig. Ctrl-C stops the manager and
// then the cluster.
//
// Usage: localcluster [flags] [-- manager flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/example/switchboard/internal/localcluster"
)

// fieldManager applies the samples.
const fieldManager = "localcluster"

func main() { os.Exit(run()) }

func run() int {
	fs := flag.NewFlagSet("localcluster", flag.ExitOnError)
	dir := fs.String("dir", filepath.Join("bin", "cluster"), "directory for the kubeconfig, the logs and the cluster's data; emptied at start")
	k8sBin := fs.String("k8s-bin-dir", filepath.Join("bin", "k8s"), "directory holding etcd, kube-apiserver, kube-controller-manager and kube-scheduler")
	kwok := fs.String("kwok", filepath.Join("bin", "kwok"), "kwok binary")
	stages := fs.String("kwok-stages", filepath.Join("bin", "kwok-stages.yaml"), "kwok Stages for Nodes and Pods")
	kwokMetrics := fs.String("kwok-metrics", filepath.Join("bin", "kwok-metrics.yaml"), "kwok's usage of Pods and its kubelet resource metrics endpoint")
	metricsServer := fs.String("metrics-server", filepath.Join("bin", "metrics-server"), "metrics-server binary")
	crds := fs.String("crd-dir", filepath.Join("config", "crd", "bases"), "CustomResourceDefinitions to install")
	samples := fs.String("samples", filepath.Join("config", "samples"), "kustomization directory whose resources are applied before the manager starts; empty for none")
	nodes := fs.Int("nodes", 1, "number of fake Nodes")
	manager := fs.String("manager", filepath.Join("bin", "manager"), "manager binary")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s [flags] [-- manager flags]\n\nRuns the manager on a local cluster it starts. Ctrl-C stops both.\n\nFlags:\n", fs.Name())
		fs.PrintDefaults()
	}
	_ = fs.Parse(os.Args[1:]) // ExitOnError: exits 2 on a bad flag.

	absDir, err := filepath.Abs(*dir)
	if err != nil {
		return fail(err)
	}
	kubeconfig := filepath.Join(absDir, "kubeconfig")
	mgrArgs := managerArgs(kubeconfig, fs.Args())
	if err := checkManagerPorts(mgrArgs); err != nil {
		return fail(err)
	}
	if _, err := exec.LookPath(*manager); err != nil {
		return fail(fmt.Errorf("manager binary: %w: `make build` builds it", err))
	}
	var manifests []byte
	if *samples != "" {
		if manifests, err = readKustomization(*samples); err != nil {
			return fail(fmt.Errorf("samples: %w", err))
		}
	}

	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	began := time.Now()
	fmt.Fprintf(os.Stderr, "Starting a local cluster in %s\n", absDir)
	c, err := localcluster.Start(ctx, localcluster.Config{
		Dir:           absDir,
		K8sBinDir:     *k8sBin,
		Kwok:          *kwok,
		KwokStages:    *stages,
		KwokMetrics:   *kwokMetrics,
		MetricsServer: *metricsServer,
		CRDDir:        *crds,
		Nodes:         *nodes,
	})
	if err != nil {
		return fail(err)
	}
	code := runManager(ctx, c, manifests, *manager, mgrArgs, *nodes, time.Since(began))
	// A second Ctrl-C while the cluster stops kills the launcher at once; the watchdog then
	// stops what is left.
	stopSignals()
	fmt.Fprintln(os.Stderr, "Stopping the manager and the local cluster")
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		return 1
	}
	return code
}

// runManager applies the samples, says how to use the cluster, and runs the manager until a
// signal or until the manager or a process of the cluster exits. It returns the exit status.
func runManager(ctx context.Context, c *localcluster.Cluster, samples []byte, manager string, args []string, nodes int, startup time.Duration) int {
	fmt.Fprint(os.Stderr, target(c.Config.Host, c.Kubeconfig, os.Getenv("KUBECONFIG")))
	if len(samples) > 0 {
		if err := c.Apply(ctx, fieldManager, samples); err != nil {
			return fail(fmt.Errorf("applying the samples: %w", err))
		}
	}
	fmt.Fprint(os.Stderr, usage(c.Kubeconfig, c.LogDir, nodes, startup))
	if err := c.StartProcess("manager", os.Stderr, manager, args...); err != nil {
		return fail(err)
	}
	select {
	case <-ctx.Done():
		return 0
	case exit := <-c.Exits():
		if exit.Err == nil {
			fmt.Fprintf(os.Stderr, "%s exited\n", exit.Name)
			return 0
		}
		hint := ""
		if exit.Name != "manager" {
			hint = fmt.Sprintf(" (see %s)", filepath.Join(c.LogDir, exit.Name+".log"))
		}
		return fail(fmt.Errorf("%s exited: %w%s", exit.Name, exit.Err, hint))
	}
}

// target says, before anything is written, which cluster the samples and the manager go to:
// this one, at server, whose kubeconfig is kubeconfig; and that the shell's KUBECONFIG
// (exported), when it names another, is not used.
func target(server, kubeconfig, exported string) string {
	out := fmt.Sprintf("The samples and the manager go to the local cluster at %s (kubeconfig %s).\n", server, kubeconfig)
	if exported != "" && exported != kubeconfig {
		out += fmt.Sprintf("KUBECONFIG=%s of this shell is not used; `make run RUN_KUBECONFIG=path` runs the manager on another cluster.\n", exported)
	}
	return out
}

// usage says what runs and which commands to try.
func usage(kubeconfig, logDir string, nodes int, startup time.Duration) string {
	return fmt.Sprintf(`
Local cluster ready in %.1fs: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (%d fake Node(s)), metrics-server; CRDs installed, samples applied.
Logs of the cluster: %s

In another terminal (docs/getting-started.md walks through each step):
  export KUBECONFIG=%s
  kubectl get myapps,verticalscalers,deployments,pods    # short names: ma, vs
  kubectl top pods                                       # after about a minute
  kubectl patch configmap sample-config --type=merge -p '{"data":{"GREETING":"hello again"}}'
  kubectl patch secret sample-credentials --type=merge -p '{"stringData":{"API_TOKEN":"rotated-token"}}'
  kubectl get events --field-selector reason=ConfigChanged
  kubectl get pods -l app=resized -w -o custom-columns='NAME:.metadata.name,CPU:.spec.containers[0].resources.requests.cpu,MEMORY:.spec.containers[0].resources.requests.memory,RUNNING CPU:.status.containerStatuses[0].resources.requests.cpu,RESTARTS:.status.containerStatuses[0].restartCount'
                                                         # the VerticalScaler "resized" resizes these in place: new requests, same Pods, no restart

Starting the manager with every default controller. Ctrl-C stops the manager and the cluster.

`, startup.Seconds(), nodes, logDir, kubeconfig)
}

// fail prints err and returns the exit status for it.
func fail(err error) int {
	fmt.Fprintln(os.Stderr, "localcluster:", err)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() > 0 {
		return exit.ExitCode()
	}
	return 1
}
