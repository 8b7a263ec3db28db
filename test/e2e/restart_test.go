package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// TestAPIServerRestart kills the API server with SIGKILL while 50 MyApps converge and starts
// it again on the same port, with the same certificates and etcd. The manager rides it out:
// it does not exit, its watches reconnect, and what changes after the restart (10 new MyApps, a new image on an
// old one) is carried out too: every MyApp converges, with exactly one Deployment and one
// Service each, and MyApps reach Running with every replica ready, which needs
// kube-controller-manager, kube-scheduler and kwok to have reconnected as well.
func TestAPIServerRestart(t *testing.T) {
	t.Parallel()
	const before, after = 50, 10
	ctx := context.Background()
	c := newCluster(t)
	args := c.Deploy(t, "default")
	kubeconfig, _ := c.ServiceAccountKubeconfig(t)
	ns := testenv.Namespace(t, c.admin, "e2e-restart-")
	// Without leader election: a leader that cannot renew its Lease within the renew deadline
	// (10 s) exits by design, to be restarted by its Deployment, and a busy machine can take
	// that long to bring the API server back. This test is about reconnecting;
	// TestLeaderElection covers the Lease.
	m := startManager(t, kubeconfig, args, "--leader-elect=false")
	for i := range before {
		createMyApp(t, c, ns, fmt.Sprintf("app-%03d", i), 1)
	}
	// Restart in the middle of the work.
	waitDeployments(t, c, ns, before/5)
	converged, _ := convergedMyApps(ctx, c, ns)
	began := time.Now()
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	restart := time.Since(began)
	t.Logf("kube-apiserver killed and ready again in %s; %d of %d MyApps had converged", restart.Round(100*time.Millisecond), converged, before)
	// An exit is for good: fail at once rather than wait for MyApps that cannot converge.
	running := func() {
		t.Helper()
		if exited, err := m.Exited(); exited {
			t.Fatalf("the manager exited (%v) instead of reconnecting; the API server was away for %s:\n%s",
				err, restart.Round(100*time.Millisecond), m.Output())
		}
	}

	for i := range after {
		createMyApp(t, c, ns, fmt.Sprintf("late-%02d", i), 2)
	}
	changed := &v1alpha1.MyApp{}
	if err := c.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-000"}, changed); err != nil {
		t.Fatal(err)
	}
	// A merge patch, not an update: the manager writes the status meanwhile.
	patch := client.MergeFrom(changed.DeepCopy())
	changed.Spec.Image = "nginx:1.28"
	if err := c.admin.Patch(ctx, changed, patch); err != nil {
		t.Fatal(err)
	}

	eventually(t, 3*time.Minute, func() error {
		running()
		done, err := convergedMyApps(ctx, c, ns)
		if err != nil {
			return err
		}
		if done != before+after {
			return fmt.Errorf("%d of %d MyApps converged", done, before+after)
		}
		return nil
	})
	t.Logf("every MyApp converged %s after the restart", time.Since(began).Round(100*time.Millisecond))
	checkOneOfEachPerMyApp(t, c, ns, before+after)
	// One created after the restart runs, and the new image rolls out: new Pods scheduled
	// and made ready, the old ones removed.
	myAppRuns(t, c, ns, "late-00")
	eventually(t, 90*time.Second, func() error {
		d := &appsv1.Deployment{}
		if err := c.admin.Get(ctx, client.ObjectKeyFromObject(changed), d); err != nil {
			return err
		}
		if st := d.Status; st.ObservedGeneration != d.Generation || st.Replicas != 1 || st.UpdatedReplicas != 1 || st.ReadyReplicas != 1 {
			return fmt.Errorf("Deployment %s: %d replicas, %d updated, %d ready; want 1 of each", d.Name, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas)
		}
		return nil
	})
	myAppRuns(t, c, ns, changed.Name)

	running()
	eventually(t, 30*time.Second, readyCheck(m))
}

// convergedMyApps counts the MyApps of ns whose current spec the manager has carried out: the
// status observed their generation, and their Deployment runs their image.
func convergedMyApps(ctx context.Context, c *testCluster, ns string) (int, error) {
	var apps v1alpha1.MyAppList
	var deployments appsv1.DeploymentList
	if err := c.admin.List(ctx, &apps, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	if err := c.admin.List(ctx, &deployments, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	images := map[string]string{}
	for _, d := range deployments.Items {
		if containers := d.Spec.Template.Spec.Containers; len(containers) > 0 {
			images[d.Name] = containers[0].Image
		}
	}
	done := 0
	for _, app := range apps.Items {
		if app.Status.ObservedGeneration == app.Generation && images[app.Name] == app.Spec.Image {
			done++
		}
	}
	return done, nil
}
