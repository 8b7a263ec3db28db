// Command manager runs Switchboard's controllers in one process. Which controllers run is chosen
// with --controllers from the table in package controllers; --list-controllers prints it.
// `manager logs` analyses the manager's own logs (package internal/loganalysis).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/loganalysis"
	"github.com/example/switchboard/internal/logging"
	// Heap profiling off before any other package is initialised (the package says why).
	_ "github.com/example/switchboard/internal/noheapprofile"
	"github.com/example/switchboard/internal/version"
)

// exitUsage is the exit status for bad flags, as the flag package uses.
const exitUsage = 2

func main() {
	if len(os.Args) > 1 && os.Args[1] == "logs" {
		os.Exit(loganalysis.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	table := controllers.Table()
	opts := controllers.NewOptions()
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	sections := opts.BindFlags(fs, table)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s [flags]\n       %s logs summary|trace [flags] [files]\n\nRuns the Switchboard controllers. %s.\n", fs.Name(), fs.Name(), controllers.KnownControllers(table))
		for _, section := range sections {
			fmt.Fprintf(fs.Output(), "\n%s flags:\n", section.Name)
			section.FlagSet.SetOutput(fs.Output())
			section.FlagSet.PrintDefaults()
		}
	}
	_ = fs.Parse(os.Args[1:]) // ExitOnError: exits 2 on a bad flag.
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments: %v\n", fs.Args())
		os.Exit(exitUsage)
	}

	build := version.Get()
	if opts.Version {
		fmt.Print(build)
		return
	}
	if opts.ListControllers {
		if err := controllers.PrintTable(os.Stdout, table); err != nil {
			os.Exit(1)
		}
		return
	}
	selection, err := opts.Resolve(table)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(exitUsage)
	}
	if err := opts.CheckMetricsCert(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}

	// controller-runtime's logger, but whose sampling never drops a line that records a write
	// and counts what it drops (package logging).
	logger, sampling, err := logging.New(&opts.Zap, metrics.Registry)
	if err != nil {
		fmt.Fprintln(os.Stderr, "setting up the logger:", err)
		os.Exit(1)
	}
	ctrl.SetLogger(logger)
	log := ctrl.Log.WithName("setup")
	log.Info("Starting Switchboard", build.KeysAndValues()...)
	if err := metrics.Registry.Register(build.Collector()); err != nil {
		log.Error(err, "Registering the build_info metric failed")
		os.Exit(1)
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "Loading kubeconfig failed")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	if selection, err = opts.Prepare(ctx, opts.RESTConfig(cfg), selection, log); err != nil {
		log.Error(err, "Preparing controllers failed")
		os.Exit(1)
	}
	mgrOpts := opts.ManagerOptions(controllers.NewScheme(), selection)
	mgrOpts.MapperProvider = controllers.MapperProvider(ctx, log)
	if mgrOpts.LeaderElectionResourceLockInterface, err = opts.ManagerLeaseLock(cfg, selection); err != nil {
		log.Error(err, "Setting up leader election failed")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(opts.RESTConfig(cfg), mgrOpts)
	if err != nil {
		log.Error(err, "Creating manager failed")
		os.Exit(1)
	}
	if err := mgr.Add(sampling.Reporter(logger)); err != nil {
		log.Error(err, "Adding the log sampling reporter failed")
		os.Exit(1)
	}
	if err := controllers.Wire(ctx, mgr, selection, opts); err != nil {
		log.Error(err, "Setting up controllers failed")
		os.Exit(1)
	}

	log.Info("Starting manager", "controllers", selection.Names())
	if err := mgr.Start(ctx); err != nil && !errors.Is(err, ctx.Err()) {
		log.Error(err, "Manager stopped with an error")
		os.Exit(1)
	}
}
