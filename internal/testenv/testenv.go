// Package testenv is Switchboard's one test kit, modelled on cluster-api's
// internal/test/envtest: it starts a real API server (envtest: etcd and kube-apiserver, no
// controllers) with Switchboard's CRDs, and managers on it wired exactly as main.go wires them:
// the same flags, the same table, the same Wire. Each controller package's TestMain uses it to
// prove that its controller works alone, and the all-controllers suite in controllers/ to prove
// that they work together.
//
// It lives in the module root's internal/, not under controllers/internal/, because Go's
// internal rule lets a package be imported only from the tree rooted at the parent of its
// internal/ directory: under controllers/ it could serve the envtest suites but not test/e2e
// nor testdata/logs/capture.go, and the kit is the one place every one of them takes its
// helpers from.
//
// What it offers:
//   - the control plane (Start, Main, Env, Env.AddUser) and managers in the test process
//     (Env.StartManager), several of them as replicas of one installation (Env.StartReplica),
//     and a record of every reconcile a manager ran (ReconcileRecorder);
//   - a namespace per test (Namespace, Env.Namespace);
//   - one wait until controllers are quiet (Quiet, WaitQuiet), reading this process's
//     controller metrics (InProcess) or a manager process's (MetricsEndpoint,
//     Process.ControllerMetrics);
//   - the manager binary, or another program of the module, as a process (Build, BuildBinary,
//     WriteKubeconfig, StartProcess, RunProcess, Process): errors from its methods, so that
//     programs without a testing.T use it too;
//   - the local cluster of `make run` for the end-to-end, chaos and soak tests (LocalCluster,
//     StartLocalCluster), with the shipped manifests (Deploy), the manager's ServiceAccount
//     (ServiceAccountKubeconfig) and the manager on it as a process (RunManager);
//   - malformed objects and their well-formed twins for the bad-input tests
//     (MalformedObjects, WellFormedTwins) and the warnings Events say (Warnings);
//   - polling (Poll, Eventually), free ports (FreeAddress), the API server's own counters
//     (Env.APIWrites, Env.APIServerCPUSeconds) and benchmark sizes (BenchSetting);
//   - Pods of the shape a busy cluster has, created with their running status (BusyPod,
//     CreatePod), for what a cache of Pods costs;
//   - a control plane of a test's own (StartForTest), kube-controller-manager's controllers
//     against it (Env.RunControllerManager), and kustomizations rendered as users apply them
//     (Kustomize).
//
// Its sibling internal/faultproxy is the hostile API server between a manager and the real one.
//
// The go-cmp comparer for resource.Quantity is compare.Quantities in
// controllers/internal/compare, because the controllers themselves use it to decide whether to
// write; tests of the controllers import it from there. The kit does not re-export it: Go's
// internal rule keeps controllers/internal/ to controllers/, and moving it out would put
// production code under a test kit.
package testenv

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/example/switchboard/controllers"
)

// Env is a running control plane.
type Env struct {
	// Config is an admin's REST config.
	Config *rest.Config
	// Client is an uncached admin client, for tests to set up and inspect the world.
	Client client.Client

	env *envtest.Environment
}

// Start starts etcd and kube-apiserver and installs the CRDs from config/crd/bases. The
// binaries come from KUBEBUILDER_ASSETS when set, else from bin/k8s at the module root, where
// `make envtest-assets` builds them. apiServerFlags are kube-apiserver's flags beyond envtest's,
// each name=value (feature-gates=ShardedListAndWatch=true).
func Start(apiServerFlags ...string) (*Env, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		env.BinaryAssetsDirectory = filepath.Join(root, "bin", "k8s")
		if _, err := os.Stat(filepath.Join(env.BinaryAssetsDirectory, "kube-apiserver")); err != nil {
			return nil, fmt.Errorf("no kube-apiserver in %s and KUBEBUILDER_ASSETS is not set: run `make envtest-assets` (or `make test`) first", env.BinaryAssetsDirectory)
		}
	}
	// envtest's default /24 has too few Service addresses for the benchmarks, which create a
	// Service per MyApp.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.96.0.0/16")
	for _, f := range apiServerFlags {
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("kube-apiserver flag %q is not name=value", f)
		}
		env.ControlPlane.GetAPIServer().Configure().Append(name, value)
	}
	cfg, err := env.Start()
	if err != nil {
		// envtest leaves etcd and kube-apiserver running when a later step (installing the
		// CRDs) fails.
		_ = env.Stop()
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return &Env{Config: cfg, Client: c, env: env}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error { return e.env.Stop() }

// AddUser adds a user who authenticates with a client certificate and belongs to groups, and
// returns a REST config that connects as that user: for running something under RBAC narrower
// than the admin's (WriteKubeconfig turns it into a file for a process).
func (e *Env) AddUser(name string, groups ...string) (*rest.Config, error) {
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	return user.Config(), nil
}

// Main is a TestMain body: it starts the control plane, runs the tests, and stops it.
func Main(m *testing.M, env **Env) int {
	logs, closeLogs, err := logOutput()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer closeLogs()
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(logs), zap.Level(zapLevel())))
	e, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	return code
}

// logOutput is where the managers of the tests log: stderr, except under -bench. go test prints
// a benchmark's result line in two parts, its name before the run and its figures after, so
// a log line written during the run splits it and hack/benchreport loses that run; there the
// logs go to a file, whose path is printed first.
func logOutput() (io.Writer, func(), error) {
	flag.Parse()
	if bench := flag.Lookup("test.bench"); bench == nil || bench.Value.String() == "" {
		return os.Stderr, func() {}, nil
	}
	f, err := os.CreateTemp("", "switchboard-bench-*.log")
	if err != nil {
		return nil, nil, fmt.Errorf("creating the benchmark log file: %w", err)
	}
	fmt.Println("manager logs of the benchmarks:", f.Name())
	// Test logs: a lost tail of the log file is not worth failing a test run for.
	return f, func() { _ = f.Close() }, nil
}

// zapLevel keeps test output short unless SWITCHBOARD_TEST_LOG=debug.
func zapLevel() zapcore.Level {
	if os.Getenv("SWITCHBOARD_TEST_LOG") == "debug" {
		return zapcore.DebugLevel
	}
	return zapcore.WarnLevel
}

// Manager is a running manager.
type Manager struct {
	ctrl.Manager
	cancel context.CancelFunc
	// done is closed once the manager has returned, with err.
	done chan struct{}
	err  error
	once sync.Once
}

// Err returns the error the manager stopped with of itself, or nil while it runs (and once it
// stopped without one).
func (m *Manager) Err() error {
	select {
	case <-m.done:
		return m.err
	default:
		return nil
	}
}

// StartManager parses args with the manager's own flags (as main.go does), wires a manager
// with Wire and starts it. Metrics and probes are off unless args turn them on. The manager is
// stopped when the test ends.
func (e *Env) StartManager(t testing.TB, args ...string) *Manager {
	t.Helper()
	return e.StartReplica(t, Replica{}, args...)
}

// Replica says what sets one manager apart from the others of a test that runs several in this
// process, as replicas of one installation.
type Replica struct {
	// Identity names the replica in the Leases of --leader-elect-scope=controller; empty, the
	// manager's default (host name and a random suffix).
	Identity string
	// Logger is the manager's logger (its controllers log through it), for example a
	// ReconcileRecorder's; zero, the process's.
	Logger logr.Logger
	// WrapTransport wraps the manager's connection to the API server, for example to cut it
	// off from some requests.
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// StartReplica is StartManager for one of several replicas: with r's identity, logger and
// connection.
func (e *Env) StartReplica(t testing.TB, r Replica, args ...string) *Manager {
	t.Helper()
	table := controllers.Table()
	opts := controllers.NewOptions()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	opts.BindFlags(fs, table)
	// No second look at idle controllers: tests install CRDs (the VPA's) beside managers that
	// run on, which would stop them. A test of the look passes its own interval.
	defaults := []string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--idle-recheck-interval=0"}
	if err := fs.Parse(append(defaults, args...)); err != nil {
		t.Fatalf("parsing manager flags %v: %v", args, err)
	}
	selection, err := opts.Resolve(table)
	if err != nil {
		t.Fatalf("resolving manager flags %v: %v", args, err)
	}
	opts.LeaderElectionIdentity = r.Identity
	logger := r.Logger
	if logger.GetSink() == nil {
		logger = ctrl.Log
	}
	if selection, err = opts.Prepare(context.Background(), e.Config, selection, logger.WithName("setup")); err != nil {
		t.Fatalf("preparing controllers: %v", err)
	}
	mgrOpts := opts.ManagerOptions(controllers.NewScheme(), selection)
	mgrOpts.MapperProvider = controllers.MapperProvider(context.Background(), logger.WithName("setup"))
	// Tests start one manager after another in one process; controller names need only be
	// unique within a manager.
	mgrOpts.Controller.SkipNameValidation = new(true)
	if r.Logger.GetSink() != nil {
		mgrOpts.Logger = r.Logger
	}
	cfg := opts.RESTConfig(e.Config)
	if r.WrapTransport != nil {
		cfg.Wrap(r.WrapTransport)
	}
	if mgrOpts.LeaderElectionResourceLockInterface, err = opts.ManagerLeaseLock(cfg, selection); err != nil {
		t.Fatalf("creating the manager's Lease lock: %v", err)
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := controllers.Wire(ctx, mgr, selection, opts); err != nil {
		cancel()
		t.Fatalf("wiring manager: %v", err)
	}
	var names []string
	for _, c := range selection.Controllers {
		names = append(names, c.Name)
	}
	if err := noteStaleDepth(names); err != nil {
		cancel()
		t.Fatal(err)
	}
	m := &Manager{Manager: mgr, cancel: cancel, done: make(chan struct{})}
	go func() {
		m.err = mgr.Start(ctx)
		close(m.done)
	}()
	t.Cleanup(m.Stop)
	return m
}

// Stop stops the manager and waits for it to return. Stopping twice is harmless.
func (m *Manager) Stop() {
	m.once.Do(func() {
		m.cancel()
		select {
		case <-m.done:
			if m.err != nil && !errors.Is(m.err, context.Canceled) {
				fmt.Fprintln(os.Stderr, "manager stopped with an error:", m.err)
			}
		case <-time.After(30 * time.Second):
			fmt.Fprintln(os.Stderr, "manager did not stop within 30s")
		}
	})
}

// BenchSetting reads a positive integer benchmark setting (SWITCHBOARD_BENCH_*) from the
// environment, def when it is unset or not positive, so that `make bench` and
// `make bench-smoke` run the same benchmark code at different sizes.
func BenchSetting(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// Eventually calls check until it returns nil, failing the test with check's last error when
// timeout passes first.
func Eventually(t testing.TB, timeout time.Duration, check func() error) {
	t.Helper()
	Poll(t, timeout, 50*time.Millisecond, check)
}

// Clientset returns a typed clientset for the admin, for what the controller-runtime client
// does not do (the API server's /metrics).
func (e *Env) Clientset() (*kubernetes.Clientset, error) { return kubernetes.NewForConfig(e.Config) }

// ModuleRoot walks up from the working directory to the directory holding this module's
// go.mod: tests run in their package's directory, `go run` programs wherever they are started.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(data, []byte("module github.com/example/switchboard\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod of github.com/example/switchboard not found above the working directory")
		}
		dir = parent
	}
}

// UnthrottledClient returns an admin client without client-side rate limit, for tests and
// benchmarks that create objects by the thousand.
func (e *Env) UnthrottledClient(t testing.TB) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
