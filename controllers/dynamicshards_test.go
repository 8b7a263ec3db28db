package controllers_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// TestShardGroupSplitsTheNamespaces: three replicas of one shard group each cache a part of
// the MyApps, together all of them, and reconcile every one; when one stops, the other two take
// its namespaces, and a namespace created later is reconciled too. The same whether the API
// server filters by shard or ignores the selectors (then each replica filters what it gets).
func TestShardGroupSplitsTheNamespaces(t *testing.T) {
	t.Parallel()
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

// TestShardGroupRollsEachWorkloadOnce: the configmapwatcher as a shard group of two, on an API
// server that filters by shard (its ConfigMap watches too: they are uncached, metadata-only).
// A change of each namespace's ConfigMap rolls its Deployment once, by whichever replica holds
// the namespace; when one replica stops, the other takes its namespaces, and its watches start
// over without rolling anything; the next change rolls each Deployment once again.
func TestShardGroupRollsEachWorkloadOnce(t *testing.T) {
	t.Parallel()
	own := testenv.StartForTest(t, "feature-gates=ShardedListAndWatch=true")
	ctx := t.Context()
	var namespaces []string
	for i := range 12 {
		ns := fmt.Sprintf("web-%02d", i)
		namespaces = append(namespaces, ns)
		for _, obj := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"mode": "v1"}},
			testenv.ReloadedDeployment(ns, "app", "settings"),
		} {
			if err := own.Client.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	// generations returns each namespace's Deployment's generation, once each has a record.
	generations := func() (map[string]int64, error) {
		out := map[string]int64{}
		for _, ns := range namespaces {
			d := &appsv1.Deployment{}
			if err := own.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, d); err != nil {
				return nil, err
			}
			if d.Annotations[v1alpha1.ConfigStateAnnotation] == "" {
				return nil, fmt.Errorf("Deployment %s/app has no record yet", ns)
			}
			out[ns] = d.Generation
		}
		return out, nil
	}
	// rolledOnce changes every ConfigMap to mode and checks that each Deployment rolls once
	// from before.
	rolledOnce := func(before map[string]int64, mode string) map[string]int64 {
		t.Helper()
		for _, ns := range namespaces {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
			patch := fmt.Sprintf(`{"data":{"mode":%q}}`, mode)
			if err := own.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
				t.Fatal(err)
			}
		}
		var after map[string]int64
		testenv.Eventually(t, 30*time.Second, func() error {
			var err error
			if after, err = generations(); err != nil {
				return err
			}
			for _, ns := range namespaces {
				if after[ns] == before[ns] {
					return fmt.Errorf("Deployment %s/app has not rolled to %s", ns, mode)
				}
			}
			return nil
		})
		// Time for a second roll to show.
		time.Sleep(3 * time.Second)
		after, err := generations()
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range namespaces {
			if after[ns] != before[ns]+1 {
				t.Errorf("Deployment %s/app went from generation %d to %d on the change to %s, want one roll", ns, before[ns], after[ns], mode)
			}
		}
		return after
	}

	args := []string{"--controllers=configmapwatcher", "--shard-group=cmw", "--leader-election-namespace=default",
		"--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms"}
	r1 := own.StartReplica(t, testenv.Replica{Identity: "r1"}, args...)
	r2 := own.StartReplica(t, testenv.Replica{Identity: "r2"}, args...)
	var baseline map[string]int64
	testenv.Eventually(t, 60*time.Second, func() error {
		var err error
		baseline, err = generations()
		return err
	})
	// Both hold some of the namespaces before the first change.
	testenv.Eventually(t, 30*time.Second, func() error {
		for _, r := range []*testenv.Manager{r1, r2} {
			list := &appsv1.DeploymentList{}
			if err := r.GetClient().List(ctx, list); err != nil || len(list.Items) == 0 {
				return fmt.Errorf("a replica caches %d Deployments (%v)", len(list.Items), err)
			}
		}
		return nil
	})
	after := rolledOnce(baseline, "v2")

	r2.Stop()
	testenv.Eventually(t, 30*time.Second, func() error {
		list := &appsv1.DeploymentList{}
		if err := r1.GetClient().List(ctx, list); err != nil || len(list.Items) != len(namespaces) {
			return fmt.Errorf("r1 caches %d of %d Deployments (%v)", len(list.Items), len(namespaces), err)
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	if now, err := generations(); err != nil || !maps.Equal(now, after) {
		t.Errorf("generations %v after r1 took r2's namespaces, want %v unchanged (%v)", now, after, err)
	}
	rolledOnce(after, "v3")
}
