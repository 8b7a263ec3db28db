package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/shards"
)

// TestWeighNamespacesInTheManagersScope: the coordinator weighs only what the manager watches:
// the namespaces of --watch-namespaces, each listed alone, and the objects of
// --watch-label-selector; with neither, every MyApp, in pages.
func TestWeighNamespacesInTheManagersScope(t *testing.T) {
	var objs []runtime.Object
	add := func(ns string, n int, labels map[string]string) {
		for i := range n {
			objs = append(objs, &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%d-%v", i, labels["team"]), Labels: labels}})
		}
	}
	add("shop", 700, nil)
	add("shop", 2, map[string]string{"team": "blue"})
	add("blog", 3, map[string]string{"team": "blue"})
	add("wiki", 4, map[string]string{"team": "blue"})
	// The fake client cannot stream a list: it refuses, as an API server with WatchList off
	// does, and the weighing lists in pages (TestWeighingStreamsTheObjects streams).
	reader := interceptor.NewClient(fake.NewClientBuilder().WithScheme(NewScheme()).WithRuntimeObjects(objs...).Build(), interceptor.Funcs{
		Watch: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
			return nil, apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")
		}})
	myapp := []Controller{{Name: "myapp", For: &v1alpha1.MyApp{}}}
	for _, tc := range []struct {
		name  string
		flags Options
		want  []shards.Namespace
	}{
		{"everything", Options{}, []shards.Namespace{{Name: "blog", Weight: 3}, {Name: "shop", Weight: 702}, {Name: "wiki", Weight: 4}}},
		{"namespaces", Options{WatchNamespaces: "shop,wiki"}, []shards.Namespace{{Name: "shop", Weight: 702}, {Name: "wiki", Weight: 4}}},
		{"namespaces and labels", Options{WatchNamespaces: "shop,blog", WatchLabelSelector: "team=blue"}, []shards.Namespace{{Name: "blog", Weight: 3}, {Name: "shop", Weight: 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scope, err := tc.flags.weighingScope()
			if err != nil {
				t.Fatal(err)
			}
			got, err := weighNamespaces(t.Context(), reader, NewScheme(), myapp, scope)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpSortedNamespaces); diff != "" {
				t.Errorf("weights (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpSortedNamespaces compares weights whatever their order.
var cmpSortedNamespaces = cmp.Transformer("sorted", func(in []shards.Namespace) map[string]int {
	out := map[string]int{}
	for _, ns := range in {
		out[ns.Name] = ns.Weight
	}
	return out
})

// TestShardGroupFlagsValidated: Resolve refuses what --shard-group cannot go with, naming the
// flags.
func TestShardGroupFlagsValidated(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--shard-group=web"}, ""},
		{[]string{"--shard-group=web", "--shard-rebalance-interval=10s"}, ""},
		{[]string{"--shard-group=web", "--leader-elect"}, "--shard-group and --leader-elect"},
		{[]string{"--shard-group=web", "--shard-rebalance-interval=0"}, "--shard-rebalance-interval=0s: want a positive duration"},
		{[]string{"--shard-group=web", "--leader-elect-lease-duration=2s"}, "--shard-group needs --leader-elect-lease-duration (2s) > --leader-elect-renew-deadline (10s)"},
		// Without a shard group its interval is not used.
		{[]string{"--shard-rebalance-interval=0"}, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) { checkResolve(t, tc.args, tc.wantErr) })
	}
}
