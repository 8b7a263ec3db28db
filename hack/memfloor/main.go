// Command memfloor is the floor that BenchmarkMemoryAndLatency (controllers/configmapwatcher)
// compares the manager's memory to: a controller-runtime manager that caches what the
// configmapwatcher caches (Deployments, StatefulSets, DaemonSets, CronJobs and Jobs; Argo
// Rollouts only where their CRD is installed, and ConfigMaps and Secrets are watched, not
// cached) and does nothing else: no controller, no watch, no metrics,
// no probes. It prints "synced" once its cache has synced and runs until SIGTERM or SIGINT.
//
//	go run ./hack/memfloor --kubeconfig=PATH
package main

import (
	"flag"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func main() {
	// controller-runtime's config package reads --kubeconfig from the command line.
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "memfloor:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	for _, obj := range []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{}, &batchv1.CronJob{}, &batchv1.Job{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("creating the %T informer: %w", obj, err)
		}
	}
	errs := make(chan error, 1)
	go func() { errs <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("the cache did not sync: %w", <-errs)
	}
	fmt.Println("synced")
	return <-errs
}
