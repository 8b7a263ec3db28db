package shards_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/example/switchboard/controllers/internal/shards"
	"github.com/example/switchboard/internal/testenv"
)

// countingListerWatcher counts the objects the API server sends, before any filter.
type countingListerWatcher struct {
	next            cache.ListerWatcherWithContext
	listed, watched atomic.Int64
}

func (c *countingListerWatcher) List(o metav1.ListOptions) (runtime.Object, error) {
	return c.ListWithContext(context.Background(), o)
}

func (c *countingListerWatcher) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), o)
}

func (c *countingListerWatcher) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	list, err := c.next.ListWithContext(ctx, o)
	if l, ok := list.(*corev1.ConfigMapList); ok {
		c.listed.Add(int64(len(l.Items)))
	}
	return list, err
}

func (c *countingListerWatcher) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := c.next.WatchWithContext(ctx, o)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if e.Type != watch.Bookmark && e.Type != watch.Error {
			c.watched.Add(1)
		}
		return e, true
	}), nil
}

// TestFilterNarrowsTheCache: an informer behind a Filter caches exactly the ConfigMaps of its
// ranges' namespaces, follows a change of ranges by relisting, and learns of namespaces created
// later; with the API server's ShardedListAndWatch on, the API server sends only those, and
// with it off, every one, which the Filter drops and reports.
func TestFilterNarrowsTheCache(t *testing.T) {
	for _, gateOn := range []bool{true, false} {
		t.Run(fmt.Sprintf("ShardedListAndWatch=%t", gateOn), func(t *testing.T) {
			env := testenv.StartForTest(t, fmt.Sprintf("feature-gates=ShardedListAndWatch=%t", gateOn))
			clientset := kubernetes.NewForConfigOrDie(env.Config)
			ctx := t.Context()
			var namespaces []shards.Namespace
			for i := range 40 {
				name := fmt.Sprintf("ns-%02d", i)
				namespaces = append(namespaces, shards.Namespace{Name: name, Weight: 1})
				createNamespaceWithConfigMap(t, clientset, name)
			}
			serverFilters, err := shards.ServerFilters(ctx, clientset, "default")
			if err != nil {
				t.Fatal(err)
			}
			if serverFilters != gateOn {
				t.Fatalf("ServerFilters = %t with the gate %t", serverFilters, gateOn)
			}
			assignment := shards.Assign(shards.Slots(namespaces, 16), []string{"a", "b"}, 0.05)
			var ignored atomic.Int32
			// Believed to filter either way, so that the gate off is found by the lists.
			filter := shards.NewFilter(assignment["a"], true, func() { ignored.Add(1) })
			counting := &countingListerWatcher{next: cache.ToListerWatcherWithContext(&cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					return clientset.CoreV1().ConfigMaps("").List(ctx, o)
				},
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					return clientset.CoreV1().ConfigMaps("").Watch(ctx, o)
				},
			})}
			informer := cache.NewSharedIndexInformer(filter.ListerWatcher(counting), &corev1.ConfigMap{}, 0, cache.Indexers{})
			go informer.RunWithContext(ctx)
			if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
				t.Fatal("the informer did not sync")
			}
			want := func(member string) []string {
				var out []string
				for _, ns := range namespaces {
					if assignment[member].Contains(shards.Hash(ns.Name)) {
						out = append(out, ns.Name+"/settings")
					}
				}
				return out
			}
			waitForKeys(t, informer, want("a"))
			sent := counting.listed.Load() + counting.watched.Load()
			t.Logf("the API server sent %d ConfigMaps for the %d of the ranges, of 40", sent, len(want("a")))
			if gateOn && sent > int64(len(want("a")))+2 {
				t.Errorf("the API server sent %d ConfigMaps for %d in the ranges: it did not filter", sent, len(want("a")))
			}
			if !gateOn && sent < 40 {
				t.Errorf("the API server sent %d ConfigMaps with the gate off, want all 40", sent)
			}

			filter.SetRanges(assignment["b"])
			waitForKeys(t, informer, want("b"))

			// A namespace created later that falls in b's ranges is cached; one that does not is not.
			var inB, notInB string
			for i := 40; inB == "" || notInB == ""; i++ {
				name := fmt.Sprintf("later-%d", i)
				if assignment["b"].Contains(shards.Hash(name)) {
					if inB == "" {
						inB = name
					}
				} else if notInB == "" {
					notInB = name
				}
			}
			createNamespaceWithConfigMap(t, clientset, inB)
			createNamespaceWithConfigMap(t, clientset, notInB)
			waitForKeys(t, informer, append(want("b"), inB+"/settings"))

			// The gate off is found by a list (an informer may list through a watch, which cannot
			// tell): the Filter reports it once.
			if _, err := cache.ToListerWatcherWithContext(filter.ListerWatcher(counting)).ListWithContext(ctx, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := ignored.Load(); (got == 1) == gateOn || got > 1 {
				t.Errorf("the Filter reported the API server ignoring the selector %d times with the gate %t", got, gateOn)
			}
			if filter.ServerFilters() != gateOn {
				t.Errorf("ServerFilters() = %t with the gate %t", filter.ServerFilters(), gateOn)
			}
		})
	}
}

func createNamespaceWithConfigMap(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	ctx := t.Context()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitForKeys waits until the informer's cache holds exactly the ConfigMaps want.
func waitForKeys(t *testing.T, informer cache.SharedIndexInformer, want []string) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = got[:0]
		for _, key := range informer.GetStore().ListKeys() {
			if ns, name, _ := cache.SplitMetaNamespaceKey(key); name == "settings" {
				got = append(got, ns+"/"+name)
			}
		}
		slices.Sort(got)
		if slices.Equal(got, slices.Sorted(slices.Values(want))) {
			return
		}
	}
	t.Fatalf("the cache holds %v, want %v", got, want)
}
