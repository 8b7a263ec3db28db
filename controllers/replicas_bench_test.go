package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/testenv"
)

// BenchmarkReplicas measures what each replica costs in memory, and how soon another takes
// over myapp after a SIGKILL, with one Lease for the manager and with a Lease per controller, on
// the same objects: SWITCHBOARD_BENCH_REPLICA_OBJECTS MyApps (default 1,000), each with its
// Deployment and Service, and as many VerticalScalers naming those Deployments, in envtest.
// Every manager is the shipped binary as a process, every controller selected, with the
// e2e tests' short lease timing; memory is read from /proc/PID/status once the manager has
// settled (idle past the Go runtime's forced GC period).
//
//   - scope=manager: the leader (every controller, every cache); a standby nobody has asked
//     whether it is ready (its informers not started: a cold standby); the same standby once
//     its /readyz has been read, which starts the informers of every watched kind, as a kubelet's
//     readiness probe does every 10 s with the shipped manifests. Then the leader is killed and
//     the probed standby takes over (takeover-warm), then that one is killed and a standby
//     started after the objects and never probed takes over (takeover-cold).
//   - scope=controller: three replicas, each leading about one controller and caching what all
//     of them watch: the median and the largest; then the myapp leader is killed and another
//     takes myapp over (takeover).
//
// A takeover is the time from the SIGKILL to the first myapp reconcile on the new leader, read
// from the survivors' metrics every 50 ms.
func BenchmarkReplicas(b *testing.B) {
	objects := testenv.BenchSetting("SWITCHBOARD_BENCH_REPLICA_OBJECTS", 1000)
	idle := 2*time.Minute + 10*time.Second
	if os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" {
		objects, idle = 20, 3*time.Second
	}
	bin := testenv.BuildBinary(b, ".")
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config, ""); err != nil {
		b.Fatal(err)
	}
	ns := env.Namespace(b, "replicas-bench-")
	createMyAppsAndScalers(b, env.UnthrottledClient(b), ns, objects)
	common := []string{"--kubeconfig=" + kubeconfig, "--controllers=*", "--watch-namespaces=" + ns,
		"--leader-elect", "--leader-election-namespace=" + ns, "--usage-source=off",
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
		"--metrics-secure=false", "--zap-log-level=error"}

	b.Run("scope=manager", func(b *testing.B) {
		args := slices.Concat(common, []string{"--leader-elect-scope=manager"})
		leader := startMeasuredManager(b, bin, args)
		waitLeading(b, leader, "myapp")
		standby := startMeasuredManager(b, bin, args)
		waitMyAppsConverged(b, ns, objects)
		time.Sleep(idle)
		report(b, leader, "leader")
		report(b, standby, "standby-cold")
		if err := standby.Ready(context.Background()); err == nil {
			b.Fatal("a cold standby answered ready before its caches could sync")
		}
		testenv.Eventually(b, 2*time.Minute, func() error { return standby.Ready(context.Background()) })
		time.Sleep(idle)
		report(b, standby, "standby-probed")

		b.ReportMetric(takeover(b, leader, []*testenv.Process{standby}).Seconds(), "takeover-warm-s")
		cold := startMeasuredManager(b, bin, args)
		// Up, not leading, never asked whether it is ready: no informer started.
		waitStandby(b, cold)
		b.ReportMetric(takeover(b, standby, []*testenv.Process{cold}).Seconds(), "takeover-cold-s")
	})
	b.Run("scope=controller", func(b *testing.B) {
		args := slices.Concat(common, []string{"--leader-elect-scope=controller"})
		var replicas []*testenv.Process
		for range 3 {
			replicas = append(replicas, startMeasuredManager(b, bin, args))
		}
		// The leader metric is per controller (the configmapwatcher's rows share a Lease, and each
		// says so); an optional row idles without its CRD (envtest has no Argo Rollouts).
		for _, c := range controllers.Table() {
			if c.EnabledByDefault && !c.Optional {
				waitLedByOne(b, replicas, c.Name)
			}
		}
		waitMyAppsConverged(b, ns, objects)
		time.Sleep(idle)
		var anon, rss []float64
		for _, r := range replicas {
			mem, err := r.Status("VmRSS", "RssAnon")
			if err != nil {
				b.Fatal(err)
			}
			anon, rss = append(anon, mem["RssAnon"]), append(rss, mem["VmRSS"])
		}
		slices.Sort(anon)
		slices.Sort(rss)
		b.ReportMetric(rss[1]/(1<<20), "replica-median-VmRSS-MiB")
		b.ReportMetric(anon[1]/(1<<20), "replica-median-RssAnon-MiB")
		b.ReportMetric(anon[2]/(1<<20), "replica-max-RssAnon-MiB")

		leader := slices.IndexFunc(replicas, func(r *testenv.Process) bool { return leads(b, r, "myapp") })
		survivors := slices.Delete(slices.Clone(replicas), leader, leader+1)
		b.ReportMetric(takeover(b, replicas[leader], survivors).Seconds(), "takeover-s")
	})
}

// takeover kills leader with SIGKILL and returns the time until one of survivors reconciled
// for myapp, read from their metrics every 50 ms.
func takeover(b *testing.B, leader *testenv.Process, survivors []*testenv.Process) time.Duration {
	b.Helper()
	ctx := context.Background()
	before := make([]float64, len(survivors))
	for i, m := range survivors {
		readings, err := m.ControllerMetrics(ctx)
		if err != nil {
			b.Fatal(err)
		}
		before[i] = readings["myapp"].Reconciles
	}
	if err := leader.Kill(); err != nil {
		b.Fatal(err)
	}
	killed := time.Now()
	for time.Since(killed) < 2*time.Minute {
		for i, m := range survivors {
			if readings, err := m.ControllerMetrics(ctx); err == nil && readings["myapp"].Reconciles > before[i] {
				return time.Since(killed)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatal("no survivor reconciled for myapp within 2 minutes of the kill")
	return 0
}

// leads reports whether m runs controller's workers.
func leads(b *testing.B, m *testenv.Process, controller string) bool {
	b.Helper()
	leading, err := m.MetricByLabel(context.Background(), "switchboard_controller_leader", "controller")
	if err != nil {
		b.Fatal(err)
	}
	return leading[controller] == 1
}

// waitStandby waits until m serves its metrics, as a standby: it leads nothing.
func waitStandby(b *testing.B, m *testenv.Process) {
	b.Helper()
	testenv.Eventually(b, time.Minute, func() error {
		leading, err := m.MetricByLabel(context.Background(), "switchboard_controller_leader", "controller")
		if err != nil {
			return err
		}
		if len(leading) == 0 {
			return fmt.Errorf("no switchboard_controller_leader yet")
		}
		return nil
	})
}

// startMeasuredManager runs the manager binary with args, its metrics and probes on free ports.
func startMeasuredManager(b *testing.B, bin string, args []string) *testenv.Process {
	b.Helper()
	metrics, probes := testenv.FreeAddress(b), testenv.FreeAddress(b)
	return testenv.RunProcess(b, testenv.Command{Binary: bin, MetricsAddress: metrics, ProbeAddress: probes,
		Args: append(slices.Clone(args), "--metrics-bind-address="+metrics, "--health-probe-bind-address="+probes)})
}

// report reports the VmRSS and RssAnon of m, named for its role.
func report(b *testing.B, m *testenv.Process, role string) {
	b.Helper()
	mem, err := m.Status("VmRSS", "RssAnon")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(mem["VmRSS"]/(1<<20), role+"-VmRSS-MiB")
	b.ReportMetric(mem["RssAnon"]/(1<<20), role+"-RssAnon-MiB")
}

// waitLeading waits until m leads controller.
func waitLeading(b *testing.B, m *testenv.Process, controller string) {
	b.Helper()
	testenv.Eventually(b, time.Minute, func() error {
		leading, err := m.MetricByLabel(context.Background(), "switchboard_controller_leader", "controller")
		if err != nil {
			return err
		}
		if leading[controller] != 1 {
			return fmt.Errorf("not leading %s", controller)
		}
		return nil
	})
}

// waitLedByOne waits until exactly one of replicas leads controller.
func waitLedByOne(b *testing.B, replicas []*testenv.Process, controller string) {
	b.Helper()
	testenv.Eventually(b, time.Minute, func() error {
		leaders := 0
		for _, r := range replicas {
			leading, err := r.MetricByLabel(context.Background(), "switchboard_controller_leader", "controller")
			if err != nil {
				return err
			}
			leaders += int(leading[controller])
		}
		if leaders != 1 {
			return fmt.Errorf("%d replicas lead %s", leaders, controller)
		}
		return nil
	})
}

// createMyAppsAndScalers creates n MyApps and a VerticalScaler naming each one's Deployment, with
// 8 workers.
func createMyAppsAndScalers(b *testing.B, c client.Client, ns string, n int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				name := fmt.Sprintf("app-%05d", i)
				// A worker that fails keeps taking names (and creates nothing more), so that the
				// loop handing them out never blocks.
				if len(errs) > 0 {
					continue
				}
				for _, obj := range []client.Object{
					&v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
						Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}},
					&v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
						Spec: v1alpha1.VerticalScalerSpec{DeploymentName: name, UpdateMode: v1alpha1.UpdateModeOff}},
				} {
					if err := c.Create(context.Background(), obj); err != nil {
						select {
						case errs <- err:
						default:
						}
						break
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// waitMyAppsConverged waits until every MyApp of ns has its generation observed: its Deployment
// and Service exist.
func waitMyAppsConverged(b *testing.B, ns string, n int) {
	b.Helper()
	testenv.Eventually(b, 10*time.Minute, func() error {
		return testenv.MyAppsConverged(context.Background(), env.Client, ns, n)
	})
}
