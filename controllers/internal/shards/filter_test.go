package shards_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/go-logr/logr/testr"

	"github.com/example/switchboard/controllers/internal/metawatch"
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
			_, clientset, namespaces := fortyNamespaces(t, gateOn)
			ctx := t.Context()
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

// fortyNamespaces starts an API server with ShardedListAndWatch on or off, and creates 40
// namespaces ns-00 to ns-39 of weight 1, each with a ConfigMap settings.
func fortyNamespaces(t *testing.T, gateOn bool) (*testenv.Env, kubernetes.Interface, []shards.Namespace) {
	t.Helper()
	env := testenv.StartForTest(t, fmt.Sprintf("feature-gates=ShardedListAndWatch=%t", gateOn))
	clientset := kubernetes.NewForConfigOrDie(env.Config)
	var namespaces []shards.Namespace
	for i := range 40 {
		name := fmt.Sprintf("ns-%02d", i)
		namespaces = append(namespaces, shards.Namespace{Name: name, Weight: 1})
		createNamespaceWithConfigMap(t, clientset, name)
	}
	return env, clientset, namespaces
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

// TestMetadataClientNarrowsTheWatches: a metadata-only watch that stores nothing (metawatch)
// through the Filter's MetadataClient hears of the changes in its ranges' namespaces only; the
// API server echoes the selector of its lists where it filters; a change of ranges makes the
// watch start over, as having lost events, and hear the new ranges' changes.
func TestMetadataClientNarrowsTheWatches(t *testing.T) {
	for _, gateOn := range []bool{true, false} {
		t.Run(fmt.Sprintf("ShardedListAndWatch=%t", gateOn), func(t *testing.T) {
			env, clientset, namespaces := fortyNamespaces(t, gateOn)
			ctx := t.Context()
			assignment := shards.Assign(shards.Slots(namespaces, 16), []string{"a", "b"}, 0.05)
			var ignored atomic.Int32
			filter := shards.NewFilter(assignment["a"], true, func() { ignored.Add(1) })
			configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
			sent := &recordingMetadata{Interface: metadata.NewForConfigOrDie(env.Config)}
			c := filter.MetadataClient(sent, func(gvr schema.GroupVersionResource) bool { return gvr == configMaps })

			list, err := c.Resource(configMaps).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := len(inRanges(namespaces, assignment["a"]))
			if got := len(list.Items); got != want {
				t.Errorf("listed %d ConfigMaps, want the %d of the ranges", got, want)
			}
			// The selector went with the list, and the API server applied it where it filters.
			if s := sent.selector.Load(); s == nil || *s != assignment["a"].Selector().String() {
				t.Errorf("the list went with shard selector %v, want %q", s, assignment["a"].Selector())
			}
			if got := int(sent.items.Load()); (got == want) != gateOn {
				t.Errorf("the API server sent %d ConfigMaps for %d in the ranges with the gate %t", got, want, gateOn)
			}
			// A metadata-only list never says whether the server filtered: it is not taken for
			// the server ignoring the selector.
			if ignored.Load() != 0 {
				t.Errorf("a metadata-only list was taken for the API server ignoring the selector")
			}

			var (
				mu    sync.Mutex
				heard = map[string]bool{}
				lost  atomic.Int32
			)
			started := make(chan struct{})
			w := &metawatch.Watch{Client: c, Resource: configMaps, Retry: metawatch.DefaultRetry, Log: testr.New(t),
				OnEvent: func(_ context.Context, _ watch.EventType, obj *metav1.PartialObjectMetadata) {
					mu.Lock()
					heard[obj.Namespace] = true
					mu.Unlock()
				},
				OnLost: func(context.Context) error { lost.Add(1); return nil }}
			watchCtx, stopWatch := context.WithCancel(ctx)
			stopped := make(chan struct{})
			go func() { defer close(stopped); w.Run(watchCtx, func() { close(started) }) }()
			t.Cleanup(func() { stopWatch(); <-stopped })
			<-started

			// hears changes every ConfigMap, those out of ranges first, and waits until the
			// watch has heard those of ranges: by then it would have heard the others.
			hears := func(ranges shards.Ranges, round int) {
				t.Helper()
				mu.Lock()
				clear(heard)
				mu.Unlock()
				in := inRanges(namespaces, ranges)
				for _, ns := range namespaces {
					if !slices.Contains(in, ns.Name) {
						labelConfigMap(t, clientset, ns.Name, round)
					}
				}
				for _, ns := range in {
					labelConfigMap(t, clientset, ns, round)
				}
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					mu.Lock()
					got := slices.Sorted(maps.Keys(heard))
					mu.Unlock()
					if slices.Equal(got, in) {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("the watch heard of %v, want %v", got, in)
					}
				}
			}
			hears(assignment["a"], 1)
			filter.SetRanges(assignment["b"])
			for deadline := time.Now().Add(30 * time.Second); lost.Load() == 0; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the watch did not start over after the change of ranges")
				}
			}
			hears(assignment["b"], 2)
		})
	}
}

// inRanges returns the sorted names of the namespaces whose hash ranges holds.
func inRanges(namespaces []shards.Namespace, ranges shards.Ranges) []string {
	var out []string
	for _, ns := range namespaces {
		if ranges.Contains(shards.Hash(ns.Name)) {
			out = append(out, ns.Name)
		}
	}
	slices.Sort(out)
	return out
}

// labelConfigMap changes the ConfigMap settings of namespace.
func labelConfigMap(t *testing.T, c kubernetes.Interface, namespace string, round int) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{"round":"%d"}}}`, round)
	if _, err := c.CoreV1().ConfigMaps(namespace).Patch(t.Context(), "settings", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// recordingMetadata records the shard selector of the last list through it, and how many
// objects the API server sent for it.
type recordingMetadata struct {
	metadata.Interface
	selector atomic.Pointer[string]
	items    atomic.Int64
}

func (r *recordingMetadata) Resource(resource schema.GroupVersionResource) metadata.Getter {
	return &recordingGetter{Getter: r.Interface.Resource(resource), record: r}
}

type recordingGetter struct {
	metadata.Getter
	record *recordingMetadata
}

func (g *recordingGetter) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	g.record.selector.Store(&opts.ShardSelector)
	list, err := g.Getter.List(ctx, opts)
	if err == nil {
		g.record.items.Store(int64(len(list.Items)))
	}
	return list, err
}
