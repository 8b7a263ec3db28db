package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// controller-runtime's defaults, which the manager keeps: a leader that stops renewing loses the
// Lease leaseDuration after a candidate last saw it renewed, and a candidate tries every
// retryPeriod stretched by client-go's jitter (up to a factor 1+1.2). So a killed leader is
// replaced at most leaseDuration + 2.2 retryPeriods later, plus the time the requests take
// (requestSlack, for a loaded machine).
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
	requestSlack  = 2 * time.Second
	takeoverBound = leaseDuration + retryPeriod*22/10 + requestSlack
)

// acquired is what the manager logs once it holds the Lease.
const acquired = "Successfully acquired lease"

// TestLeaderElection runs two managers with --leader-elect: only the one holding the Lease
// starts its controllers; killed with SIGKILL (so it cannot hand the Lease over), the other
// takes over within the Lease duration and finishes the work. The new leader's first
// recommendation for a VerticalScaler is the old leader's last, read back from its checkpoint,
// which the garbage collector deletes with the VerticalScaler.
func TestLeaderElection(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	args := c.Deploy(t, "default")
	kubeconfig, _ := c.ServiceAccountKubeconfig(t)
	ns := testenv.Namespace(t, c.admin, "e2e-leader-")
	a := startManager(t, kubeconfig, args, checkpointArgs...)
	b := startManager(t, kubeconfig, args, checkpointArgs...)

	var leader, follower *testenv.Process
	eventually(t, 60*time.Second, func() error {
		aLeads, bLeads := strings.Contains(a.Output(), acquired), strings.Contains(b.Output(), acquired)
		switch {
		case aLeads && bLeads:
			return fmt.Errorf("both managers acquired the Lease")
		case aLeads:
			leader, follower = a, b
		case bLeads:
			leader, follower = b, a
		default:
			return fmt.Errorf("no manager acquired the Lease yet")
		}
		return nil
	})
	myAppRuns(t, c, ns, "first")
	if log := follower.Output(); strings.Contains(log, acquired) || strings.Contains(log, "Starting workers") {
		t.Fatalf("the follower started its controllers while the leader ran:\n%s", log)
	}
	// The leader's last recommendation, from a history its checkpoint holds whole.
	sized := newSizedWorkload(t, c, ns)
	sized.recommendation(t, time.Minute)
	time.Sleep(3 * time.Second)
	sized.stopUsage(t)
	sized.forget(t)
	before := sized.recommendation(t, 30*time.Second)

	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	sized.forget(t)
	createMyApp(t, c, ns, "second", 2)
	eventually(t, takeoverBound+30*time.Second, func() error {
		if !strings.Contains(follower.Output(), acquired) {
			return fmt.Errorf("the follower has not acquired the Lease")
		}
		return nil
	})
	// The poll adds up to 250ms to the measured takeover.
	takeover := time.Since(killed)
	t.Logf("the follower took over %s after the leader was killed", takeover.Round(100*time.Millisecond))
	if takeover > takeoverBound {
		t.Errorf("takeover took %s, more than the Lease duration and a jittered retry (%s)", takeover, takeoverBound)
	}
	myAppRuns(t, c, ns, "second")
	// The Pods report no usage any more: the new leader recommends from the checkpoint alone.
	sameRecommendation(t, before, sized.recommendation(t, 30*time.Second))
	sized.deletedWithItsVerticalScaler(t)
}

// myAppRuns creates the MyApp (2 replicas) if it does not exist and waits until it runs with every replica
// ready.
func myAppRuns(t *testing.T, c *testCluster, ns, name string) {
	t.Helper()
	ctx := context.Background()
	app := &v1alpha1.MyApp{}
	if err := c.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
		createMyApp(t, c, ns, name, 2)
	}
	eventually(t, 90*time.Second, func() error {
		if err := c.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
			return err
		}
		if app.Status.Phase != v1alpha1.MyAppRunning || app.Status.ReadyReplicas != app.Spec.Replicas {
			return fmt.Errorf("MyApp %s phase %q, %d of %d ready", name, app.Status.Phase, app.Status.ReadyReplicas, app.Spec.Replicas)
		}
		return nil
	})
}
