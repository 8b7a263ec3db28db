// Command seedmanager runs the seed-style MyApp controller (internal/testenv/seedpeer) as a
// process of its own, so that the scale benchmarks (test/scale) read its memory as they read
// the manager's. It serves controller-runtime's metrics over plain HTTP and runs until SIGTERM
// or SIGINT.
//
//	go run ./hack/seedmanager --kubeconfig=PATH --namespace=NS --workers=4 --metrics-bind-address=127.0.0.1:8080
package main

import (
	"flag"
	"fmt"
	"os"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/example/switchboard/internal/testenv/seedpeer"
)

func main() {
	namespace := flag.String("namespace", "", "Namespace whose MyApps to reconcile.")
	workers := flag.Int("workers", 4, "Concurrent reconciles.")
	metrics := flag.String("metrics-bind-address", "0", "Address of /metrics, plain HTTP; '0' turns it off.")
	// controller-runtime's config package reads --kubeconfig from the command line.
	flag.Parse()
	if err := run(*namespace, *workers, *metrics); err != nil {
		fmt.Fprintln(os.Stderr, "seedmanager:", err)
		os.Exit(1)
	}
}

func run(namespace string, workers int, metrics string) error {
	if namespace == "" {
		return fmt.Errorf("--namespace is required")
	}
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	cfg, err := config.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := seedpeer.NewManager(cfg, namespace, workers, metrics)
	if err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
