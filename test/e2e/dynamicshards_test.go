package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// TestDynamicShardsTakeOverAKilledReplica deploys config/overlays/dynamic-shards and runs its
// three replicas as its ServiceAccount, so that they may do with Leases what its Role lets
// them. The local cluster serves ShardedListAndWatch, and each replica finds that the API
// server filters its watches. The replicas start before any MyApp exists, so the first plan has
// nothing to weigh and gives one replica everything; once MyApps came, a rebalance splits the
// six namespaces, and every replica reconciles some. Then one is killed with SIGKILL and more
// MyApps come in every namespace: the other two take its namespaces, every MyApp converges with
// one Deployment and one Service, and each of those is written once, by one replica.
func TestDynamicShardsTakeOverAKilledReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCluster(t)
	args := c.Deploy(t, "overlays/dynamic-shards")
	kubeconfig, _ := c.ServiceAccountKubeconfig(t)
	var namespaces []string
	for range 6 {
		namespaces = append(namespaces, testenv.Namespace(t, c.admin, "e2e-shards-"))
	}
	var replicas []*testenv.Process
	for range 3 {
		replicas = append(replicas, startManager(t, kubeconfig, args, append(failoverFlags, "--shard-rebalance-interval=2s")...))
	}
	for _, m := range replicas {
		eventually(t, 90*time.Second, readyCheck(m))
		metrics, err := m.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if metrics["switchboard_shard_server_filtering"] != 1 {
			t.Errorf("switchboard_shard_server_filtering = %v on an API server with ShardedListAndWatch", metrics["switchboard_shard_server_filtering"])
		}
	}
	writesBefore, succeededBefore, err := testenv.APIWriteCounts(ctx, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	const perNamespace = 5
	create := func(from int) {
		t.Helper()
		for _, ns := range namespaces {
			for i := from; i < from+perNamespace; i++ {
				app := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%02d", i)},
					Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}
				if err := c.admin.Create(ctx, app); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	converged := func(n int) func() error {
		return func() error {
			for _, ns := range namespaces {
				if err := testenv.MyAppsConverged(ctx, c.admin, ns, n); err != nil {
					return fmt.Errorf("%s: %w", ns, err)
				}
			}
			return nil
		}
	}
	create(0)
	eventually(t, 2*time.Minute, converged(perNamespace))
	// A replica that gains namespaces reconciles their MyApps, as its cache lists them.
	eventually(t, time.Minute, func() error {
		var reconciles []float64
		for _, m := range replicas {
			readings, err := m.ControllerMetrics(ctx)
			if err != nil {
				return err
			}
			reconciles = append(reconciles, readings["myapp"].Reconciles)
		}
		if slices.Contains(reconciles, 0) {
			return fmt.Errorf("myapp reconciles per replica %v: the namespaces are not split", reconciles)
		}
		t.Logf("myapp reconciles per replica: %v", reconciles)
		return nil
	})

	if err := replicas[0].Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	create(perNamespace)
	eventually(t, 2*time.Minute, converged(2*perNamespace))
	t.Logf("every MyApp converged %s after the kill (lease duration %s)", time.Since(killed).Round(100*time.Millisecond), failoverLeaseDuration)
	for _, ns := range namespaces {
		checkOneOfEachPerMyApp(t, c, ns, 2*perNamespace)
	}

	// Each Deployment and Service written once: by one replica, and not again by the ones that
	// took over. A request the killed replica had in flight may be counted refused.
	writesAfter, succeededAfter, err := testenv.APIWriteCounts(ctx, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	want := float64(2 * perNamespace * len(namespaces))
	for _, resource := range []string{"deployments", "services"} {
		n := succeededAfter[resource] - succeededBefore[resource]
		failed := writesAfter[resource] - writesBefore[resource] - n
		if n > want || n+failed < want {
			t.Errorf("%v accepted and %v refused writes of %s for %v MyApps, want one each", n, failed, resource, want)
		}
	}
}
