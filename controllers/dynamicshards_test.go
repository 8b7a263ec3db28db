package controllers_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// TestShardGroupSplitsTheNamespaces: three replicas of one shard group each cache a part of
// the MyApps, together all of them, and reconcile every one; when one stops, the other two take
// its namespaces, and a namespace created later is reconciled too. The same whether the API
// server filters by shard or ignores the selectors (then each replica filters what it gets).
func TestShardGroupSplitsTheNamespaces(t *testing.T) {
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprintf("ShardedListAndWatch=%t", gate), func(t *testing.T) { shardGroupSplitsTheNamespaces(t, gate) })
	}
}

func shardGroupSplitsTheNamespaces(t *testing.T, gate bool) {
	own := testenv.StartForTest(t, fmt.Sprintf("feature-gates=ShardedListAndWatch=%t", gate))
	ctx := t.Context()
	var want []string
	create := func(ns string) {
		t.Helper()
		if err := own.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		app := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}
		if err := own.Client.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		want = append(want, ns)
	}
	for i := range 30 {
		create(fmt.Sprintf("shop-%02d", i))
	}
	args := []string{"--controllers=myapp", "--shard-group=test", "--leader-election-namespace=default",
		"--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms"}
	replicas := map[string]*testenv.Manager{}
	for _, id := range []string{"r1", "r2", "r3"} {
		replicas[id] = own.StartReplica(t, testenv.Replica{Identity: id}, args...)
	}
	// cached is the namespaces of the MyApps each replica's cache holds.
	cached := func(ids ...string) map[string][]string {
		out := map[string][]string{}
		for _, id := range ids {
			list := &v1alpha1.MyAppList{}
			if err := replicas[id].GetClient().List(ctx, list); err != nil {
				continue
			}
			for _, app := range list.Items {
				out[id] = append(out[id], app.Namespace)
			}
		}
		return out
	}
	split := func(ids ...string) func() bool {
		return func() bool {
			var all []string
			for _, id := range ids {
				part := cached(id)[id]
				if len(part) == 0 {
					return false
				}
				all = append(all, part...)
			}
			slices.Sort(all)
			return slices.Equal(all, slices.Sorted(slices.Values(want)))
		}
	}
	reconciled := func() bool {
		for _, ns := range want {
			if err := own.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &appsv1.Deployment{}); err != nil {
				return false
			}
		}
		return true
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if cond() {
				return
			}
		}
		t.Fatalf("%s: not within 60s; caches %v", what, cached("r1", "r2", "r3"))
	}
	until("the three caches split the MyApps", split("r1", "r2", "r3"))
	t.Logf("MyApps cached per replica: %v", cached("r1", "r2", "r3"))
	until("every MyApp reconciled", reconciled)

	replicas["r2"].Stop()
	until("r1 and r3 split the MyApps after r2 stopped", split("r1", "r3"))
	create("shop-later")
	until("the MyApp of a namespace created later is reconciled", reconciled)
}
