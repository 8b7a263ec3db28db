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
	"strings"
	"syscall"
	"time"

	"github.com/example/switchboard/internal/localcluster"
	"github.com/example/switchboard/internal/suitereport"
	"github.com/example/switchboard/internal/suiterun"
)

// runConfig is what `reloadersuite run` is told.
type runConfig struct {
	reloaderDir     string
	openshiftAPIDir string
	subject         string
	suites          []string
	out             string
	manager         string
	chart           string
	values          string
	labelFilter     string
	focus           string
	crds            string
	argoRollouts    bool
	secretsStoreCSI string
	managerArgs     []string
	baseline        string
	cluster         localcluster.Config
}

// knownSuites are the suites of Reloader's test/e2e.
var knownSuites = []string{"core", "annotations", "flags", "advanced", "argo", "csi"}

func parseRunFlags(args []string) (runConfig, error) {
	var cfg runConfig
	var suites string
	fs := flag.NewFlagSet("reloadersuite run", flag.ContinueOnError)
	fs.StringVar(&cfg.reloaderDir, "reloader-dir", "", "a checkout of stakater/Reloader whose test/e2e suites run (required)")
	fs.StringVar(&cfg.openshiftAPIDir, "openshift-api-dir", "", "a directory holding github.com/openshift/api at the version Reloader's go.mod pins, when the module proxy does not serve it: the suites are built with a replace to it (Reloader's go.mod is not changed)")
	fs.StringVar(&cfg.subject, "subject", subjectSwitchboard, "what the suites run against: switchboard (the configmapwatcher, installed with its chart in place of Reloader's) or reloader (Reloader built from the checkout, installed with its own chart: the baseline)")
	fs.StringVar(&suites, "suites", "core,annotations,flags,advanced,argo,csi", "comma-separated suites of "+strings.Join(knownSuites, ", "))
	fs.StringVar(&cfg.out, "out", filepath.Join("bin", "reloadersuite"), "directory for the builds, the cluster, the logs and the results")
	fs.StringVar(&cfg.manager, "manager", filepath.Join("bin", "manager"), "Switchboard's manager binary")
	fs.StringVar(&cfg.chart, "chart", filepath.Join("charts", "switchboard"), "Switchboard's chart, installed with the suite's Reloader values")
	fs.StringVar(&cfg.values, "values", filepath.Join("charts", "switchboard", "ci", "configmapwatcher-values.yaml"), "Switchboard's values files (comma-separated), given before the suite's; the migration page's")
	fs.StringVar(&cfg.labelFilter, "label-filter", "", "Ginkgo's --label-filter for every suite")
	fs.StringVar(&cfg.focus, "focus", "", "Ginkgo's --focus for every suite")
	fs.StringVar(&cfg.crds, "crds", "", "a directory of CustomResourceDefinitions to install first (for example the Secrets Store CSI driver's)")
	fs.StringVar(&cfg.secretsStoreCSI, "secrets-store-csi", filepath.Join("testdata", "crds", "secrets-store-csi-driver"), "the Secrets Store CSI driver's CRDs: install them, and play the driver and the Vault server of Reloader's csi suite (and of the SecretProviderClass specs of the others), which cannot run in kwok's Pods; empty for none")
	fs.BoolVar(&cfg.argoRollouts, "argo-rollouts", true, "install Argo Rollouts' Rollout CRD (from the argo-rollouts module the checkout requires) and play its controller as far as the suites see it (a ReplicaSet of each Rollout's template, the Rollout's status from it), so that the argo suite and the ArgoRollout entries of the others run")
	fs.Func("manager-args", "a flag appended to the arguments the chart gives Switchboard's manager, for looking into a run (for example --zap-log-level=debug or --zap-time-encoding=rfc3339nano); may be given several times", func(s string) error {
		cfg.managerArgs = append(cfg.managerArgs, s)
		return nil
	})
	fs.StringVar(&cfg.baseline, "baseline", "", "results.json of a baseline run: list the specs it passed that this run did not")
	suiterun.BindClusterFlags(fs, &cfg.cluster)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.reloaderDir == "" {
		return cfg, errors.New("--reloader-dir is required: a checkout of https://github.com/stakater/Reloader")
	}
	if cfg.subject != subjectSwitchboard && cfg.subject != subjectReloader {
		return cfg, fmt.Errorf("--subject is %s or %s, not %q", subjectSwitchboard, subjectReloader, cfg.subject)
	}
	var err error
	if cfg.suites, err = suiterun.Suites(suites, knownSuites); err != nil {
		return cfg, err
	}
	cfg.cluster.Nodes = 1
	return cfg, suiterun.AbsPaths(&cfg.cluster, &cfg.reloaderDir, &cfg.openshiftAPIDir, &cfg.out, &cfg.manager, &cfg.chart, &cfg.crds, &cfg.secretsStoreCSI, &cfg.baseline)
}

func run(args []string) error {
	cfg, err := parseRunFlags(args)
	if err != nil {
		return err
	}
	// The absolute values files: the stand-in runs in the Reloader checkout.
	var values []string
	for _, v := range strings.Split(cfg.values, ",") {
		if v == "" {
			continue
		}
		abs, err := filepath.Abs(v)
		if err != nil {
			return err
		}
		values = append(values, abs)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	// One run per directory: a second would reset the first's cluster and take its socket.
	lock, err := suiterun.LockDir(cfg.out)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Close() }()
	buildDir := filepath.Join(cfg.out, "build")
	resultsDir := filepath.Join(cfg.out, cfg.subject)
	stateDir := filepath.Join(cfg.out, "state")
	for _, dir := range []string{buildDir, resultsDir, stateDir, filepath.Join(stateDir, "logs"), filepath.Join(cfg.out, "shim")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	binary, modFlags, err := build(ctx, cfg, buildDir)
	if err != nil {
		return err
	}
	vaultStorePath, err := addToCluster(ctx, &cfg, modFlags, stateDir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The suites find the stand-in for helm on their PATH, and kwok the one for vault.
	shimDir := filepath.Join(cfg.out, "shim")
	for _, name := range []string{"helm", "vault"} {
		shim := filepath.Join(shimDir, name)
		_ = os.Remove(shim)
		if err := os.Symlink(self, shim); err != nil {
			return err
		}
	}
	if err := os.Setenv("PATH", shimDir+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		return err
	}

	c, stopCluster, err := suiterun.StartCluster(ctx, cfg.cluster, filepath.Join(cfg.out, "cluster"))
	if err != nil {
		return err
	}
	defer stopCluster()
	if cfg.argoRollouts {
		stopRollouts, err := startRolloutsStandIn(ctx, c.Config, filepath.Join(stateDir, "logs", "argo-rollouts.log"))
		if err != nil {
			return err
		}
		defer stopRollouts()
	}
	if vaultStorePath != "" {
		stopDriver, err := startSecretsStoreCSI(ctx, c.Config, vaultStorePath, filepath.Join(stateDir, "logs", "secrets-store-csi.log"))
		if err != nil {
			return err
		}
		defer stopDriver()
	}
	sup := &supervisor{binary: binary, subject: cfg.subject, logDir: filepath.Join(stateDir, "logs"), extraArgs: cfg.managerArgs}
	stopSupervisor, err := sup.serve(ctx, filepath.Join(stateDir, socketName))
	if err != nil {
		return err
	}
	defer stopSupervisor()

	env := append(os.Environ(),
		"KUBECONFIG="+c.Kubeconfig,
		envSubject+"="+cfg.subject,
		envChart+"="+cfg.chart,
		envValues+"="+strings.Join(values, ","),
		envState+"="+stateDir,
		// The image the suite names in its helm command; nothing pulls it.
		"RELOADER_IMAGE=ghcr.io/stakater/reloader:suite",
	)
	var results []suitereport.Result
	for _, suite := range cfg.suites {
		r, err := runSuite(ctx, cfg, suite, buildDir, resultsDir, env)
		if err != nil {
			return err
		}
		results = append(results, r...)
	}
	if err := suitereport.Write(filepath.Join(resultsDir, "results.json"), results); err != nil {
		return err
	}
	if err := suitereport.Print(os.Stdout, cfg.subject, results); err != nil {
		return err
	}
	fmt.Printf("\nResults: %s; logs of the suites and of each controller run: %s, %s\n",
		filepath.Join(resultsDir, "results.json"), resultsDir, filepath.Join(stateDir, "logs"))
	if cfg.baseline != "" {
		return suitereport.CompareWith(cfg.baseline, results)
	}
	return nil
}

// addToCluster sets cfg.cluster up with what the suites look for beyond the local cluster:
// the CRDs of cfg.crds, of Argo Rollouts (argoRollouts) and of the Secrets Store CSI driver,
// the kwok configuration of its stand-in (csi.go), and kwok's Stages without the one that
// completes Jobs' Pods at once (suiterun.JobPodsCompleteStage), which it writes to stateDir. It returns the path of
// the Vault stand-in's secrets, or "" without the driver.
func addToCluster(ctx context.Context, cfg *runConfig, modFlags []string, stateDir string) (vaultStore string, err error) {
	var crds []string
	if cfg.argoRollouts {
		crd, err := argoRollouts(ctx, cfg.reloaderDir, modFlags)
		if err != nil {
			return "", err
		}
		crds = append(crds, crd)
	}
	if cfg.secretsStoreCSI != "" {
		files, err := manifestFiles(cfg.secretsStoreCSI)
		if err != nil {
			return "", fmt.Errorf("the Secrets Store CSI driver's CRDs: %w", err)
		}
		exec, store, err := secretsStoreCSIConfig(stateDir)
		if err != nil {
			return "", err
		}
		crds, cfg.cluster.KwokConfigs, vaultStore = append(crds, files...), append(cfg.cluster.KwokConfigs, exec), store
	}
	if cfg.cluster.KwokStages, err = suiterun.WithoutStage(cfg.cluster.KwokStages, suiterun.JobPodsCompleteStage, stateDir); err != nil {
		return "", err
	}
	cfg.cluster.CRDDir = cfg.crds
	if len(crds) > 0 {
		cfg.cluster.CRDDir = filepath.Join(cfg.out, "crds")
		if err := crdDir(cfg.cluster.CRDDir, cfg.crds, crds); err != nil {
			return "", err
		}
	}
	return vaultStore, nil
}

// build compiles the suites of the Reloader checkout, and Reloader itself for the baseline,
// and returns the controller's binary and the go flags that build the checkout.
func build(ctx context.Context, cfg runConfig, buildDir string) (binary string, modFlags []string, err error) {
	if cfg.openshiftAPIDir != "" {
		modFile := filepath.Join(buildDir, "go.mod")
		for _, f := range []string{"go.mod", "go.sum"} {
			data, err := os.ReadFile(filepath.Join(cfg.reloaderDir, f))
			if err != nil {
				return "", nil, err
			}
			if err := os.WriteFile(filepath.Join(buildDir, f), data, 0o644); err != nil {
				return "", nil, err
			}
		}
		if err := suiterun.Go(ctx, cfg.reloaderDir, "mod", "edit", "-modfile="+modFile, "-replace=github.com/openshift/api="+cfg.openshiftAPIDir); err != nil {
			return "", nil, err
		}
		modFlags = []string{"-modfile=" + modFile}
	}
	for _, suite := range cfg.suites {
		fmt.Fprintf(os.Stderr, "Building Reloader's %s suite\n", suite)
		args := append(append([]string{"test"}, modFlags...), "-c", "-o", filepath.Join(buildDir, suite+".test"), "./test/e2e/"+suite)
		if err := suiterun.Go(ctx, cfg.reloaderDir, args...); err != nil {
			return "", nil, err
		}
	}
	if cfg.subject == subjectSwitchboard {
		if _, err := os.Stat(cfg.manager); err != nil {
			return "", nil, fmt.Errorf("the manager: %w (make build builds it)", err)
		}
		return cfg.manager, modFlags, nil
	}
	fmt.Fprintln(os.Stderr, "Building Reloader")
	binary = filepath.Join(buildDir, "reloader")
	args := append(append([]string{"build"}, modFlags...), "-o", binary, ".")
	return binary, modFlags, suiterun.Go(ctx, cfg.reloaderDir, args...)
}

// runSuite runs one suite's binary in its directory of the checkout, as `go test` would, and
// reads its report. A suite that fails still has its report read.
func runSuite(ctx context.Context, cfg runConfig, suite, buildDir, resultsDir string, env []string) ([]suitereport.Result, error) {
	report := filepath.Join(resultsDir, suite+".json")
	_ = os.Remove(report)
	args := []string{"-test.v", "-test.timeout=3h", "-ginkgo.v", "-ginkgo.json-report=" + report}
	if cfg.labelFilter != "" {
		args = append(args, "-ginkgo.label-filter="+cfg.labelFilter)
	}
	if cfg.focus != "" {
		args = append(args, "-ginkgo.focus="+cfg.focus)
	}
	logPath := filepath.Join(resultsDir, suite+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	began := time.Now()
	fmt.Fprintf(os.Stderr, "Running the %s suite against %s (log: %s)\n", suite, cfg.subject, logPath)
	cmd := exec.CommandContext(ctx, filepath.Join(buildDir, suite+".test"), args...)
	cmd.Dir = filepath.Join(cfg.reloaderDir, "test", "e2e", suite)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	runErr := cmd.Run()
	fmt.Fprintf(os.Stderr, "The %s suite ran in %s\n", suite, time.Since(began).Round(time.Second))
	data, err := os.ReadFile(report)
	if err != nil {
		return nil, fmt.Errorf("the %s suite wrote no report (%v); see %s", suite, runErr, logPath)
	}
	return suitereport.ReadGinkgoReport(suite, data)
}
