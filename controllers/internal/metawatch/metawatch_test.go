package metawatch

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestSourceMapsEventsAndMakesUpForLostOnes drives a Source through what the API server can do:
// its list and watch carry the label selector; each event reaches Map, and the requests Map
// returns reach the queue; a closed watch resumes from the last resourceVersion seen, bookmarks
// included; an expired resourceVersion (410 Gone) starts over from a new list and enqueues what
// Resync returns.
func TestSourceMapsEventsAndMakesUpForLostOnes(t *testing.T) {
	client := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	lists := make(chan string, 4)
	type started struct {
		rv, selector string
		watcher      *watch.FakeWatcher
	}
	watches := make(chan started, 4)
	var listSelectors []string
	client.PrependReactor("list", "services", func(action clienttesting.Action) (bool, runtime.Object, error) {
		listSelectors = append(listSelectors, action.(clienttesting.ListAction).GetListRestrictions().Labels.String())
		return true, &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: <-lists}}, nil
	})
	client.PrependWatchReactor("services", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFakeWithChanSize(4, false)
		restrictions := action.(clienttesting.WatchAction).GetWatchRestrictions()
		watches <- started{restrictions.ResourceVersion, restrictions.Labels.String(), w}
		return true, w, nil
	})
	nextWatch := func(rv string) *watch.FakeWatcher {
		t.Helper()
		select {
		case w := <-watches:
			if w.rv != rv || w.selector != "shard=a" {
				t.Fatalf("watch from resourceVersion %q with selector %q, want %q and shard=a", w.rv, w.selector, rv)
			}
			return w.watcher
		case <-time.After(5 * time.Second):
			t.Fatalf("no watch from resourceVersion %q", rv)
			return nil
		}
	}
	request := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	var mapped []string
	src := &Source{Client: client, Resource: metav1.SchemeGroupVersion.WithResource("services"), Namespaces: []string{"ns"},
		LabelSelector: "shard=a", Log: logr.Discard(),
		Map: func(_ context.Context, eventType watch.EventType, obj *metav1.PartialObjectMetadata) []reconcile.Request {
			mapped = append(mapped, string(eventType)+" "+obj.Name)
			if eventType == watch.Added {
				return nil
			}
			return []reconcile.Request{request("owner-of-" + obj.Name)}
		},
		Resync: func(_ context.Context, namespace string) ([]reconcile.Request, error) {
			return []reconcile.Request{request("all-of-" + namespace)}, nil
		}}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := src.Start(ctx, queue); err != nil {
		t.Fatal(err)
	}
	lists <- "10"
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	object := func(name, rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	take := func() string {
		t.Helper()
		done := make(chan reconcile.Request, 1)
		go func() {
			req, _ := queue.Get()
			queue.Done(req)
			done <- req
		}()
		select {
		case req := <-done:
			return req.Name
		case <-time.After(5 * time.Second):
			t.Fatal("nothing queued")
			return ""
		}
	}

	w := nextWatch("10")
	w.Add(object("made", "11"))
	w.Modify(object("edited", "12"))
	if got := take(); got != "owner-of-edited" {
		t.Errorf("queued %q, want owner-of-edited (a creation maps to nothing here)", got)
	}
	w.Action(watch.Bookmark, object("", "15"))
	w.Stop()
	w = nextWatch("15")
	w.Delete(object("deleted", "16"))
	if got := take(); got != "owner-of-deleted" {
		t.Errorf("queued %q, want owner-of-deleted", got)
	}
	w.Error(&apierrors.NewResourceExpired("too old").ErrStatus)
	lists <- "20"
	if got := take(); got != "all-of-ns" {
		t.Errorf("queued %q after lost events, want all-of-ns", got)
	}
	nextWatch("20")
	if diff := cmp.Diff([]string{"ADDED made", "MODIFIED edited", "DELETED deleted"}, mapped); diff != "" {
		t.Errorf("events mapped (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"shard=a", "shard=a"}, listSelectors); diff != "" {
		t.Errorf("list selectors (-want +got):\n%s", diff)
	}
}

// TestSourceWaitsForItsStartingPoint: WaitForSync blocks while the list fails, and reports a stop
// before the source had its starting point.
func TestSourceWaitsForItsStartingPoint(t *testing.T) {
	client := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	client.PrependReactor("list", "services", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewGenericServerResponse(http.StatusServiceUnavailable, "list", metav1.SchemeGroupVersion.WithResource("services").GroupResource(), "", "unavailable", 0, true)
	})
	src := &Source{Client: client, Resource: metav1.SchemeGroupVersion.WithResource("services"), Log: logr.Discard(),
		Map:    func(context.Context, watch.EventType, *metav1.PartialObjectMetadata) []reconcile.Request { return nil },
		Resync: func(context.Context, string) ([]reconcile.Request, error) { return nil, nil }}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	if err := src.Start(ctx, queue); err != nil {
		t.Fatal(err)
	}
	early, cancelEarly := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelEarly()
	if err := src.WaitForSync(early); err == nil {
		t.Fatal("WaitForSync returned while every list failed")
	}
	cancel()
	if err := src.WaitForSync(ctx); err == nil {
		t.Error("WaitForSync returned nil for a source stopped before it started watching")
	}
}
