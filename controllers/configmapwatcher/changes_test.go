package configmapwatcher

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// fakeAPI serves the ConfigMap source's lists and watches: each list answers the next
// resourceVersion of lists, and each watch is a fake watcher the test drives, announced on
// watches with the resourceVersion it started from.
type fakeAPI struct {
	client  *metadatafake.FakeMetadataClient
	lists   chan string
	watches chan startedWatch
}

type startedWatch struct {
	resourceVersion string
	watcher         *watch.FakeWatcher
}

func newFakeAPI(t *testing.T) *fakeAPI {
	api := &fakeAPI{
		client:  metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()),
		lists:   make(chan string, 4),
		watches: make(chan startedWatch, 4),
	}
	api.client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		select {
		case rv := <-api.lists:
			return true, &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: rv}}, nil
		case <-time.After(5 * time.Second):
			t.Error("unexpected list of ConfigMaps")
			return true, nil, apierrors.NewServiceUnavailable("no list expected")
		}
	})
	api.client.PrependWatchReactor("configmaps", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFakeWithChanSize(4, false)
		api.watches <- startedWatch{action.(clienttesting.WatchAction).GetWatchRestrictions().ResourceVersion, w}
		return true, w, nil
	})
	return api
}

// nextWatch returns the next watch the source starts, and fails unless it starts from rv.
func (api *fakeAPI) nextWatch(t *testing.T, rv string) *watch.FakeWatcher {
	t.Helper()
	select {
	case w := <-api.watches:
		if w.resourceVersion != rv {
			t.Fatalf("watch started from resourceVersion %q, want %q", w.resourceVersion, rv)
		}
		return w.watcher
	case <-time.After(5 * time.Second):
		t.Fatalf("no watch started from resourceVersion %q", rv)
		return nil
	}
}

func configMapMeta(name, rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

// nextRequests takes n requests off queue, or fails.
func nextRequests(t *testing.T, queue workqueue.TypedRateLimitingInterface[reconcile.Request], n int) []reconcile.Request {
	t.Helper()
	got := make(chan reconcile.Request)
	var out []reconcile.Request
	for range n {
		go func() {
			req, _ := queue.Get()
			queue.Done(req)
			got <- req
		}()
		select {
		case req := <-got:
			out = append(out, req)
		case <-time.After(5 * time.Second):
			t.Fatalf("got requests %v, want %d", out, n)
		}
	}
	return out
}

// TestConfigMapChanges drives the uncached ConfigMap watch through what the API server can do:
// events map to the Deployments of the ConfigMap; a closed watch resumes from the last
// resourceVersion seen, bookmarks included, without a resync; an expired resourceVersion
// (410 Gone) starts over from a new list and enqueues every opted-in Deployment.
func TestConfigMapChanges(t *testing.T) {
	api := newFakeAPI(t)
	var resyncs atomic.Int32
	changes := &configMapChanges{
		client:     api.client,
		namespaces: []string{"ns"},
		deploymentsFor: func(_ context.Context, cm client.Object) []reconcile.Request {
			return []reconcile.Request{request("uses-" + cm.GetName())}
		},
		optedIn: func(context.Context, string) ([]reconcile.Request, error) {
			resyncs.Add(1)
			return []reconcile.Request{request("uses-a"), request("uses-b")}, nil
		},
		retry: wait.Backoff{Duration: time.Millisecond, Steps: 1},
		log:   logr.Discard(),
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	api.lists <- "10"
	if err := changes.Start(ctx, queue); err != nil {
		t.Fatal(err)
	}
	if err := changes.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	w := api.nextWatch(t, "10")
	w.Modify(configMapMeta("a", "11"))
	w.Delete(configMapMeta("b", "12"))
	if diff := cmp.Diff([]reconcile.Request{request("uses-a"), request("uses-b")}, nextRequests(t, queue, 2)); diff != "" {
		t.Errorf("requests for a change and a deletion (-want +got):\n%s", diff)
	}

	w.Action(watch.Bookmark, configMapMeta("", "15"))
	w.Stop()
	w = api.nextWatch(t, "15")
	if n := resyncs.Load(); n != 0 {
		t.Errorf("resyncs after a closed watch = %d, want 0: it resumes without losing events", n)
	}

	api.lists <- "20"
	w.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
	api.nextWatch(t, "20")
	if diff := cmp.Diff([]reconcile.Request{request("uses-a"), request("uses-b")}, nextRequests(t, queue, 2)); diff != "" {
		t.Errorf("requests after the resourceVersion expired (-want +got):\n%s", diff)
	}
	if n := resyncs.Load(); n != 1 {
		t.Errorf("resyncs after 410 Gone = %d, want 1", n)
	}
}

// TestConfigMapChangesWaitsForItsStartingPoint: the controller's workers start only once the
// watch knows where it starts, so WaitForSync blocks while the list fails.
func TestConfigMapChangesWaitsForItsStartingPoint(t *testing.T) {
	api := newFakeAPI(t)
	failures := 0
	api.client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures < 2 {
			failures++
			return true, nil, apierrors.NewGenericServerResponse(http.StatusServiceUnavailable, "list",
				schema.GroupResource{Resource: "configmaps"}, "", "unavailable", 0, true)
		}
		return false, nil, nil
	})
	changes := newConfigMapChanges(nil, api.client, nil, logr.Discard())
	changes.retry = wait.Backoff{Duration: 50 * time.Millisecond, Steps: 1}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := changes.Start(ctx, queue); err != nil {
		t.Fatal(err)
	}
	early, cancelEarly := context.WithTimeout(ctx, 60*time.Millisecond)
	defer cancelEarly()
	if err := changes.WaitForSync(early); err == nil {
		t.Fatal("WaitForSync returned while every list failed")
	}
	api.lists <- "7"
	if err := changes.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	api.nextWatch(t, "7")
}

// TestConfigMapChangesStoppedBeforeItsStartingPoint: a source stopped while every list fails
// reports the stop from WaitForSync, and its watch goroutine ends rather than leaving a waiter
// behind.
func TestConfigMapChangesStoppedBeforeItsStartingPoint(t *testing.T) {
	api := newFakeAPI(t)
	api.client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("unavailable")
	})
	changes := newConfigMapChanges(nil, api.client, nil, logr.Discard())
	changes.retry = wait.Backoff{Duration: 10 * time.Millisecond, Steps: 1}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	if err := changes.Start(ctx, queue); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := changes.WaitForSync(ctx); err == nil {
		t.Error("WaitForSync returned nil for a source stopped before it started watching")
	}
	select {
	case <-changes.allStarted():
	case <-time.After(5 * time.Second):
		t.Error("the stopped watch never marked itself done")
	}
}
