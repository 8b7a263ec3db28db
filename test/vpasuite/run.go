package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/internal/localcluster"
	"github.com/example/switchboard/internal/suitereport"
	"github.com/example/switchboard/internal/suiterun"
	"github.com/example/switchboard/internal/testenv"
)

// runConfig is what `vpasuite run` is told.
type runConfig struct {
	vpaDir  string
	suites  []string
	out     string
	manager string
	crds    string
	// podResourcesPolicy is the verticalscaler component's admission policy file.
	podResourcesPolicy string
	focus              string
	skip               string
	nodes              int
	replaces           []string
	managerArgs        []string
	baseline           string
	cluster            localcluster.Config
}

// knownSuites are the VPA's e2e suites, as its hack/run-e2e-tests.sh names them.
var knownSuites = []string{"recommender", "updater", "admission-controller", "actuation", "full-vpa"}

// skipByDefault is what the VPA's hack/run-e2e-tests.sh skips unless its feature gates are on.
const skipByDefault = `\[Feature:OffByDefault\]`

func parseRunFlags(args []string) (runConfig, error) {
	var cfg runConfig
	var suites string
	fs := flag.NewFlagSet("vpasuite run", flag.ContinueOnError)
	fs.StringVar(&cfg.vpaDir, "vpa-dir", "", "the vertical-pod-autoscaler directory of a kubernetes/autoscaler checkout (vertical-pod-autoscaler-1.7.0 or later: test/e2e) whose v1 specs run (required)")
	fs.StringVar(&suites, "suites", "recommender,updater,admission-controller,actuation", "comma-separated suites of "+strings.Join(knownSuites, ", ")+" (full-vpa drives real CPU and memory load, which kwok's Pods do not have)")
	fs.StringVar(&cfg.out, "out", filepath.Join("bin", "vpasuite"), "directory for the builds, the cluster, the logs and the results")
	fs.StringVar(&cfg.manager, "manager", filepath.Join("bin", "manager"), "Switchboard's manager binary")
	fs.StringVar(&cfg.crds, "crds", filepath.Join("config", "crd", "bases"), "Switchboard's CustomResourceDefinitions, installed with the VPA's (the checkout's deploy/vpa-v1-crd-gen.yaml)")
	fs.StringVar(&cfg.podResourcesPolicy, "pod-resources-policy", filepath.Join("config", "components", "verticalscaler", "pod_resources_policy.yaml"),
		"the verticalscaler's admission policy and its binding, which size new Pods as the VPA's admission controller does; installed as a deployment of Switchboard installs them")
	fs.StringVar(&cfg.focus, "focus", "", "Ginkgo's --focus, within each suite: a regular expression one of the suite's specs must match")
	fs.StringVar(&cfg.skip, "skip", skipByDefault, "Ginkgo's --skip; the default is the VPA's own (its specs behind feature gates that are off by default)")
	fs.IntVar(&cfg.nodes, "nodes", 4, "Ginkgo's --nodes: specs run in parallel processes, as the VPA's NUMPROC (its [Serial] specs run alone at the end)")
	fs.Func("replace", "a go.mod replace (old=new, as go mod edit -replace takes it) for building the suite where the module proxy does not serve a version the checkout's test/go.mod pins; applied to a copy of that go.mod, never to the checkout; may be given several times", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("%q is not old=new", s)
		}
		cfg.replaces = append(cfg.replaces, s)
		return nil
	})
	fs.Func("manager-args", "a flag appended to the manager's arguments, for looking into a run (for example --zap-log-level=debug); may be given several times", func(s string) error {
		cfg.managerArgs = append(cfg.managerArgs, s)
		return nil
	})
	fs.StringVar(&cfg.baseline, "baseline", "", "results.json of an earlier run: list the specs it passed that this run did not")
	suiterun.BindClusterFlags(fs, &cfg.cluster)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.vpaDir == "" {
		return cfg, errors.New("--vpa-dir is required: the vertical-pod-autoscaler directory of a checkout of https://github.com/kubernetes/autoscaler")
	}
	if cfg.nodes < 1 {
		return cfg, fmt.Errorf("--nodes is %d: at least 1", cfg.nodes)
	}
	var err error
	if cfg.suites, err = suiterun.Suites(suites, knownSuites); err != nil {
		return cfg, err
	}
	cfg.cluster.Nodes = 1
	return cfg, suiterun.AbsPaths(&cfg.cluster, &cfg.vpaDir, &cfg.out, &cfg.manager, &cfg.crds, &cfg.podResourcesPolicy, &cfg.baseline)
}

func run(args []string) error {
	cfg, err := parseRunFlags(args)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(cfg.vpaDir, "test", "e2e", "v1")); err != nil {
		return fmt.Errorf("--vpa-dir %s has no test/e2e/v1 (the suite moved there in vertical-pod-autoscaler-1.7.0): %w", cfg.vpaDir, err)
	}
	if _, err := os.Stat(cfg.manager); err != nil {
		return fmt.Errorf("the manager: %w (make build builds it)", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	buildDir := filepath.Join(cfg.out, "build")
	resultsDir := filepath.Join(cfg.out, "results")
	for _, dir := range []string{buildDir, resultsDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	// One run per directory: a second would reset the first's cluster.
	lock, err := suiterun.LockDir(cfg.out)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Close() }()
	suiteBinary, ginkgo, err := build(ctx, cfg, buildDir)
	if err != nil {
		return err
	}
	// The suites' CronJob Pods run until they are stopped, as on a kubelet.
	if cfg.cluster.KwokStages, err = suiterun.WithoutStage(cfg.cluster.KwokStages, suiterun.JobPodsCompleteStage, buildDir); err != nil {
		return err
	}
	cfg.cluster.CRDDir = filepath.Join(cfg.out, "crds")
	if err := crdDir(cfg.cluster.CRDDir, filepath.Join(cfg.vpaDir, "deploy", "vpa-v1-crd-gen.yaml"), cfg.crds); err != nil {
		return err
	}

	c, stopCluster, err := suiterun.StartCluster(ctx, cfg.cluster, filepath.Join(cfg.out, "cluster"))
	if err != nil {
		return err
	}
	defer stopCluster()
	if err := registerWebhookStandIn(ctx, c.Client); err != nil {
		return err
	}
	if err := installPodResourcesPolicy(ctx, c.Client, cfg.podResourcesPolicy); err != nil {
		return err
	}

	var results []suitereport.Result
	for _, suite := range cfg.suites {
		r, err := runSuite(ctx, cfg, c.Client, suite, suiteBinary, ginkgo, resultsDir, c.Kubeconfig)
		if err != nil {
			return err
		}
		results = append(results, r...)
	}
	if err := suitereport.Write(filepath.Join(resultsDir, "results.json"), results); err != nil {
		return err
	}
	if err := suitereport.Print(os.Stdout, "switchboard", results); err != nil {
		return err
	}
	fmt.Printf("\nResults: %s; the suites' and the manager's logs: %s\n", filepath.Join(resultsDir, "results.json"), resultsDir)
	if cfg.baseline != "" {
		return suitereport.CompareWith(cfg.baseline, results)
	}
	return nil
}

// build compiles the checkout's v1 specs and the Ginkgo CLI of the version its test/go.mod
// requires, with cfg.replaces applied to a copy of that go.mod.
func build(ctx context.Context, cfg runConfig, buildDir string) (suiteBinary, ginkgo string, err error) {
	testModule := filepath.Join(cfg.vpaDir, "test")
	modFile := filepath.Join(buildDir, "go.mod")
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(testModule, f))
		if err != nil {
			return "", "", err
		}
		if err := os.WriteFile(filepath.Join(buildDir, f), data, 0o644); err != nil {
			return "", "", err
		}
	}
	for _, r := range cfg.replaces {
		if err := suiterun.Go(ctx, testModule, "mod", "edit", "-modfile="+modFile, "-replace="+r); err != nil {
			return "", "", err
		}
	}
	// -mod=mod lets the go command record the sums of replaced modules in the copy's go.sum.
	modFlags := []string{"-modfile=" + modFile, "-mod=mod"}
	fmt.Fprintln(os.Stderr, "Building the VPA's v1 e2e specs (the first build compiles Kubernetes' e2e framework: about 10 minutes)")
	suiteBinary = filepath.Join(buildDir, "v1.test")
	if err := suiterun.Go(ctx, testModule, append(append([]string{"test", "-c"}, modFlags...), "-o", suiteBinary, "./e2e/v1")...); err != nil {
		return "", "", err
	}
	ginkgo = filepath.Join(buildDir, "ginkgo")
	if err := suiterun.Go(ctx, testModule, append(append([]string{"build"}, modFlags...), "-o", ginkgo, "github.com/onsi/ginkgo/v2/ginkgo")...); err != nil {
		return "", "", err
	}
	return suiteBinary, ginkgo, nil
}

// crdDir fills dir with the VPA's CRDs and Switchboard's.
func crdDir(dir, vpaCRDs, switchboardCRDs string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := []string{vpaCRDs}
	ours, err := filepath.Glob(filepath.Join(switchboardCRDs, "*.yaml"))
	if err != nil {
		return err
	}
	if len(ours) == 0 {
		return fmt.Errorf("--crds %s holds no CRD", switchboardCRDs)
	}
	for _, f := range append(files, ours...) {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// runSuite starts the manager as the suite needs it, runs the suite's specs and reads their
// report. A suite that fails still has its report read.
func runSuite(ctx context.Context, cfg runConfig, c client.Client, suite, suiteBinary, ginkgo, resultsDir, kubeconfig string) ([]suitereport.Result, error) {
	var mu sync.Mutex
	stopManager, err := startManager(ctx, cfg, suite, kubeconfig, filepath.Join(resultsDir, suite+"-manager.log"))
	if err != nil {
		return nil, err
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		stopManager()
	}()
	if suite == "recommender" {
		// Its restart specs restart the VPA's recommender by deleting its Pod: the manager is
		// restarted in its place (a planned stop, which writes its checkpoints, and a start).
		restarts := 0
		restart := func() error {
			mu.Lock()
			defer mu.Unlock()
			stopManager()
			restarts++
			stop, err := startManager(ctx, cfg, suite, kubeconfig, filepath.Join(resultsDir, fmt.Sprintf("%s-manager-%d.log", suite, restarts)))
			if err != nil {
				stopManager = func() {}
				return err
			}
			stopManager = stop
			return nil
		}
		standInCtx, stopStandIn := context.WithCancel(ctx)
		defer stopStandIn()
		go superviseRecommenderStandIn(standInCtx, c, restart)
	}

	report := suite + ".json"
	_ = os.Remove(filepath.Join(resultsDir, report))
	focus := `\[VPA\] \[` + suite + `\]`
	if cfg.focus != "" {
		focus += ".*(?:" + cfg.focus + ")"
	}
	args := []string{"--nodes=" + fmt.Sprint(cfg.nodes), "--focus=" + focus, "--json-report=" + report, "--output-dir=" + resultsDir, "-v", "--no-color"}
	if cfg.skip != "" {
		args = append(args, "--skip="+cfg.skip)
	}
	args = append(args, suiteBinary, "--", "--kubeconfig="+kubeconfig, "--report-dir="+resultsDir, "--disable-log-dump")
	logPath := filepath.Join(resultsDir, suite+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	began := time.Now()
	fmt.Fprintf(os.Stderr, "Running the %s suite (log: %s)\n", suite, logPath)
	cmd := exec.CommandContext(ctx, ginkgo, args...)
	// Ginkgo's processes with it, so that an interrupted run leaves none behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// As `go test` would run it: in the package's directory.
	cmd.Dir = filepath.Join(cfg.vpaDir, "test", "e2e", "v1")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	runErr := cmd.Run()
	fmt.Fprintf(os.Stderr, "The %s suite ran in %s\n", suite, time.Since(began).Round(time.Second))
	data, err := os.ReadFile(filepath.Join(resultsDir, report))
	if err != nil {
		return nil, fmt.Errorf("the %s suite wrote no report (%v); see %s", suite, runErr, logPath)
	}
	results, err := suitereport.ReadGinkgoReport(suite, data)
	if err != nil {
		return nil, err
	}
	return ofSuite(suite, results), nil
}

// ofSuite keeps the results of suite's own specs and of the suite-wide nodes: the binary holds
// every suite's specs, and those of Kubernetes' e2e framework, which the focus skips.
func ofSuite(suite string, results []suitereport.Result) []suitereport.Result {
	tag := "[VPA] [" + suite + "]"
	var out []suitereport.Result
	for _, r := range results {
		// Suite-wide nodes are named by their type: [SynchronizedBeforeSuite], [AfterSuite], ...
		node, _, _ := strings.Cut(r.Spec, "]")
		if strings.Contains(r.Spec, tag) || strings.HasPrefix(node, "[") && strings.HasSuffix(node, "Suite") {
			out = append(out, r)
		}
	}
	return out
}

// startManager starts Switchboard's manager for suite and waits until it is ready; the
// function it returns stops it.
func startManager(ctx context.Context, cfg runConfig, suite, kubeconfig, logPath string) (func(), error) {
	probes, err := testenv.LoopbackAddress()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.manager, append(managerArgs(suite, kubeconfig, probes), cfg.managerArgs...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting the manager: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		var err error
		select {
		case err = <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			err = fmt.Errorf("killed after 30s: %w", <-exited)
		}
		if err != nil {
			// A manager that stopped badly may explain failed specs; the run goes on.
			fmt.Fprintf(os.Stderr, "The manager for the %s suite did not stop cleanly (%v); see %s\n", suite, err, logPath)
		}
		_ = logFile.Close()
	}
	if err := waitReady(ctx, "http://"+probes+"/readyz", exited); err != nil {
		stop()
		return nil, fmt.Errorf("the manager for the %s suite (log: %s): %w", suite, logPath, err)
	}
	return stop, nil
}

// waitReady polls url until it answers 200, the process exits, or a minute passes.
func waitReady(ctx context.Context, url string, exited <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before it was ready: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("not ready at %s: %w", url, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
