package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// Leader election timing of the failover tests, shorter than the defaults (15 s, 10 s, 2 s) to
// keep them quick; the same for both scopes, so that the takeovers compare. The Lease stores
// whole seconds.
const (
	failoverLeaseDuration = 4 * time.Second
	failoverRenewDeadline = 3 * time.Second
	failoverRetryPeriod   = 500 * time.Millisecond
	// failoverTarget is the bound on a warm takeover: the lease duration and 2 s.
	failoverTarget = failoverLeaseDuration + 2*time.Second
)

// failoverFlags are the flags every manager of the failover tests gets on top of its
// Deployment's: the timing above, and metrics over plain HTTP for the test to read.
var failoverFlags = []string{
	"--leader-elect-lease-duration=" + failoverLeaseDuration.String(),
	"--leader-elect-renew-deadline=" + failoverRenewDeadline.String(),
	"--leader-elect-retry-period=" + failoverRetryPeriod.String(),
	"--metrics-secure=false",
}

// failoverMyApps is how many MyApps are created while the leader is killed.
const failoverMyApps = 60

// TestPerControllerFailover deploys config/overlays/ha (a Lease per controller) and runs three
// replicas as its ServiceAccount, each leading some controllers and warm for the others. While
// MyApps are being created, the replica that leads myapp is killed with SIGKILL: another takes
// myapp over within the lease duration and 2 s (measured from the kill to its first myapp
// reconcile), every MyApp converges, and each has exactly one Deployment and one Service, each
// written once.
func TestPerControllerFailover(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	args := c.Deploy(t, "overlays/ha")
	if !slices.Contains(args, "--leader-elect-scope=controller") {
		t.Fatalf("config/overlays/ha args %q: no --leader-elect-scope=controller", args)
	}
	kubeconfig, _ := c.ServiceAccountKubeconfig(t)
	ns := testenv.Namespace(t, c.admin, "e2e-failover-")
	var replicas []*testenv.Process
	for range 3 {
		replicas = append(replicas, startManager(t, kubeconfig, args, failoverFlags...))
	}
	// Every replica is ready, the standbys too: their caches have synced.
	for _, m := range replicas {
		eventually(t, 90*time.Second, readyCheck(m))
	}
	// The leader metric is per controller; the configmapwatcher's four rows share one Lease, so
	// its Deployments row stands for the group.
	groups := []string{"myapp", "verticalscaler", "configmapwatcher-deployments"}
	leads := testenv.Leaders(t, replicas, groups...)
	var spread []string
	for _, name := range groups {
		spread = append(spread, fmt.Sprintf("%s: replica %d", name, slices.Index(replicas, leads[name])))
	}
	t.Logf("leaders: %s; killing replica %d", strings.Join(spread, ", "), slices.Index(replicas, leads["myapp"]))

	takeover, watchChange := killDuringCreation(t, c, ns, replicas, leads["myapp"])
	t.Logf("per-controller Lease, warm standby: the first myapp reconcile on the new leader came %s after the kill (target %s); open watches changed by %v", takeover.Round(10*time.Millisecond), failoverTarget, watchChange)
	if takeover > failoverTarget {
		t.Errorf("takeover took %s, more than the lease duration and 2 s (%s)", takeover, failoverTarget)
	}
	// myapp caches MyApps, which a warm standby watches already; its Deployments and Services it
	// watches metadata-only and stores nothing of (metawatch), so the new leader opens those
	// watches when it starts, from a one-item list: there is nothing to warm.
	if n := watchChange["myapps"]; n >= 0 {
		t.Errorf("open watches on myapps changed by %v from the kill to the takeover; want fewer (the killed replica's gone, none opened)", n)
	}
}

// TestSingleLeaseFailover is TestPerControllerFailover with one Lease for the manager
// (config/default): the replica that takes over starts every controller and its informers from
// cold. It measures the same takeover, for the README to compare.
func TestSingleLeaseFailover(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	args := c.Deploy(t, "default")
	kubeconfig, _ := c.ServiceAccountKubeconfig(t)
	ns := testenv.Namespace(t, c.admin, "e2e-single-")
	var replicas []*testenv.Process
	for range 3 {
		replicas = append(replicas, startManager(t, kubeconfig, args, failoverFlags...))
	}
	// The standbys are not asked whether they are ready: controller-runtime's standbys would
	// start their informers then (the readiness check starts them, as a kubelet's probe would),
	// and this is the cold start.
	leads := testenv.Leaders(t, replicas, "myapp")
	takeover, watchChange := killDuringCreation(t, c, ns, replicas, leads["myapp"])
	t.Logf("single Lease, cold standby: the first myapp reconcile on the new leader came %s after the kill; open watches changed by %v", takeover.Round(10*time.Millisecond), watchChange)
	if watchChange["myapps"] < 0 {
		t.Errorf("the standby took over without opening a watch on MyApps: it was not cold, so this is no comparison")
	}
	if bound := failoverLeaseDuration + failoverRetryPeriod*22/10 + 10*time.Second; takeover > bound {
		t.Errorf("takeover took %s, more than %s", takeover, bound)
	}
}

// killDuringCreation creates failoverMyApps MyApps in ns, kills leader with SIGKILL a third of
// the way through, and returns the time from the kill to the first myapp reconcile on another
// replica, and by how much the watches open on each kind myapp watches changed in that time. It then waits until every MyApp has converged and checks that each has one Deployment
// and one Service, each written exactly once.
func killDuringCreation(t *testing.T, c *testCluster, ns string, replicas []*testenv.Process, leader *testenv.Process) (takeover time.Duration, watchChange map[string]float64) {
	t.Helper()
	ctx := context.Background()
	survivors := slices.DeleteFunc(slices.Clone(replicas), func(m *testenv.Process) bool { return m == leader })
	before := make([]float64, len(survivors))
	for i, m := range survivors {
		readings, err := m.ControllerMetrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before[i] = readings["myapp"].Reconciles
	}
	writesBefore, succeededBefore, err := testenv.APIWriteCounts(ctx, c.Config)
	if err != nil {
		t.Fatal(err)
	}

	// MyApps keep coming, one every 50 ms, from before the kill until after it.
	var wg sync.WaitGroup
	createErrs := make(chan error, failoverMyApps)
	created := make(chan int, failoverMyApps)
	wg.Go(func() {
		for i := range failoverMyApps {
			app := &v1alpha1.MyApp{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%03d", i)},
				Spec:       v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080},
			}
			if err := c.admin.Create(ctx, app); err != nil {
				createErrs <- err
				return
			}
			created <- i
			time.Sleep(50 * time.Millisecond)
		}
	})
	for third := false; !third; {
		select {
		case i := <-created:
			third = i >= failoverMyApps/3
		case err := <-createErrs:
			t.Fatalf("creating MyApps: %v", err)
		}
	}
	watchesBefore, err := testenv.APIOpenWatches(ctx, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()

	// The first reconcile of myapp on a survivor, read from its metrics every 50 ms.
	watchChange = map[string]float64{}
	deadline := killed.Add(2 * time.Minute)
	for takeover == 0 {
		for i, m := range survivors {
			readings, err := m.ControllerMetrics(ctx)
			if err == nil && readings["myapp"].Reconciles > before[i] {
				takeover = time.Since(killed)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no survivor reconciled myapp within 2 minutes of the kill")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The watches the new leader opened to take over: none when its caches were warm. The
	// killed replica's watches have closed by now (its sockets closed with it), so a warm
	// takeover leaves fewer watches open than before the kill.
	watchesAfter, err := testenv.APIOpenWatches(ctx, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, resource := range []string{"myapps", "deployments", "services"} {
		watchChange[resource] = watchesAfter[resource] - watchesBefore[resource]
	}
	wg.Wait()
	close(createErrs)
	for err := range createErrs {
		t.Fatalf("creating MyApps: %v", err)
	}

	eventually(t, 5*time.Minute, func() error {
		return testenv.MyAppsConverged(ctx, c.admin, ns, failoverMyApps)
	})
	checkOneOfEachPerMyApp(t, c, ns, failoverMyApps)

	// Each Deployment and Service was written once: neither lost (it exists) nor doubled (no
	// second replica applied it, and the new leader's cache already held what the killed one
	// wrote). A MyApp is written once, created by the test: the API server sets its finalizer
	// at creation (the myapp component's admission policy); where the API server serves no
	// MutatingAdmissionPolicy (Kubernetes before 1.36), twice, the controller adding it. A
	// request the killed replica had in flight may reach the API server and be counted with an
	// error code, whether or not it changed the object, and its retry by the new leader is
	// counted again: so the writes accepted must be at most the number wanted (none doubled),
	// and with those refused at least that number.
	writesAfter, succeededAfter, err := testenv.APIWriteCounts(ctx, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	myAppWrites := 1.0
	if !testenv.ServesAdmissionPolicies(t, c.Config) {
		myAppWrites = 2
	}
	var report []string
	for _, w := range []struct {
		resource string
		want     float64 // per MyApp; 0 when it varies
	}{{"deployments", 1}, {"services", 1}, {"myapps", myAppWrites}, {"myapps/status", 0}} {
		n := succeededAfter[w.resource] - succeededBefore[w.resource]
		failed := writesAfter[w.resource] - writesBefore[w.resource] - n
		report = append(report, fmt.Sprintf("%s %.2f (%v failed)", w.resource, n/failoverMyApps, failed))
		if w.want > 0 && (n > w.want*failoverMyApps || n+failed < w.want*failoverMyApps) {
			t.Errorf("%v accepted and %v refused writes of %s for %d MyApps, want %v each", n, failed, w.resource, failoverMyApps, w.want)
		}
	}
	t.Logf("API writes per MyApp: %s", strings.Join(report, ", "))
	return takeover, watchChange
}
