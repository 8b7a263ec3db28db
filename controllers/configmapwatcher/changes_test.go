package configmapwatcher

import (
	"context"
	"net/http"
	"slices"
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
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/example/switchboard/internal/podrefs"
)

// fakeAPI serves the shared watch's lists and watches of Secrets: each list answers the next
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
	api.client.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		select {
		case rv := <-api.lists:
			return true, &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: rv}}, nil
		case <-time.After(5 * time.Second):
			t.Error("unexpected list of Secrets")
			return true, nil, apierrors.NewServiceUnavailable("no list expected")
		}
	})
	api.client.PrependWatchReactor("secrets", func(action clienttesting.Action) (bool, watch.Interface, error) {
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

func secretMeta(name, rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

// nextRequests takes n requests off queue, or fails.
func nextRequests(t *testing.T, queue workqueue.TypedInterface[reconcile.Request], n int) []reconcile.Request {
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
	slices.SortFunc(out, func(a, b reconcile.Request) int { return compareStrings(a.Name, b.Name) })
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// testConsumer is a controller's registration whose workloads are named after the source with
// prefix, and whose resync counts.
func testConsumer(prefix string, resyncs *atomic.Int32, delay time.Duration) consumer {
	return consumer{
		name: prefix,
		workloadsFor: func(_ context.Context, namespace string, src podrefs.Source) []mappedWorkload {
			if namespace != "ns" || src.Kind != podrefs.Secret {
				return nil
			}
			return []mappedWorkload{{Request: request(prefix + src.Name)}}
		},
		optedIn: func(context.Context, string) ([]reconcile.Request, error) {
			resyncs.Add(1)
			return []reconcile.Request{request(prefix + "all")}, nil
		},
		delay: delay,
	}
}

func newQueue(t *testing.T) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(queue.ShutDown)
	return queue
}

func testChanges(api *fakeAPI) *changes {
	c := newChanges(podrefs.Secret, api.client, []string{"ns"}, metav1.ListOptions{}, logr.Discard())
	c.retry = wait.Backoff{Duration: time.Millisecond, Steps: 1}
	return c
}

func start(t *testing.T, ctx context.Context, c *changes, cons consumer, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) *changesSource {
	t.Helper()
	src := &changesSource{changes: c, consumer: cons, debouncers: &debouncers{}}
	if err := src.Start(ctx, queue); err != nil {
		t.Fatal(err)
	}
	return src
}

// TestChangesFanOut drives the shared watch through what the API server can do, with two
// controllers registered: one watch serves both; each event maps to each controller's
// workloads; a closed watch resumes from the last resourceVersion seen, bookmarks included,
// without a resync; an expired resourceVersion (410 Gone) starts over from a new list and makes
// each controller enqueue every opted-in workload.
func TestChangesFanOut(t *testing.T) {
	api := newFakeAPI(t)
	c := testChanges(api)
	var resyncs atomic.Int32
	deployments, statefulSets := newQueue(t), newQueue(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	api.lists <- "10"
	first := start(t, ctx, c, testConsumer("d-", &resyncs, 0), deployments)
	second := start(t, ctx, c, testConsumer("s-", &resyncs, 0), statefulSets)
	for _, src := range []*changesSource{first, second} {
		if err := src.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w := api.nextWatch(t, "10")
	w.Modify(secretMeta("a", "11"))
	w.Delete(secretMeta("b", "12"))
	if diff := cmp.Diff([]reconcile.Request{request("d-a"), request("d-b")}, nextRequests(t, deployments, 2)); diff != "" {
		t.Errorf("first controller's requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]reconcile.Request{request("s-a"), request("s-b")}, nextRequests(t, statefulSets, 2)); diff != "" {
		t.Errorf("second controller's requests (-want +got):\n%s", diff)
	}
	select {
	case extra := <-api.watches:
		t.Fatalf("a second watch started from %q: the controllers must share one", extra.resourceVersion)
	default:
	}

	w.Action(watch.Bookmark, secretMeta("", "15"))
	w.Stop()
	w = api.nextWatch(t, "15")
	if n := resyncs.Load(); n != 0 {
		t.Errorf("resyncs after a closed watch = %d, want 0: it resumes without losing events", n)
	}

	api.lists <- "20"
	w.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
	api.nextWatch(t, "20")
	if diff := cmp.Diff([]reconcile.Request{request("d-all")}, nextRequests(t, deployments, 1)); diff != "" {
		t.Errorf("first controller's requests after the resourceVersion expired (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]reconcile.Request{request("s-all")}, nextRequests(t, statefulSets, 1)); diff != "" {
		t.Errorf("second controller's requests after the resourceVersion expired (-want +got):\n%s", diff)
	}
	if n := resyncs.Load(); n != 2 {
		t.Errorf("resyncs after 410 Gone = %d, want one per controller", n)
	}
}

// TestChangesDebounce: a change queues its workloads once their sources have not changed for
// the delay, so changes whose gaps are shorter than the delay are read by one reconcile, even
// when all of them together last longer than the delay.
func TestChangesDebounce(t *testing.T) {
	api := newFakeAPI(t)
	c := testChanges(api)
	var resyncs atomic.Int32
	queue := priorityqueue.New[reconcile.Request]("debounce-test")
	t.Cleanup(queue.ShutDown)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api.lists <- "1"
	const delay = 300 * time.Millisecond
	src := start(t, ctx, c, consumer{
		name: "all-to-one",
		workloadsFor: func(context.Context, string, podrefs.Source) []mappedWorkload {
			return []mappedWorkload{{Request: request("web")}}
		},
		optedIn: testConsumer("", &resyncs, 0).optedIn,
		delay:   delay,
	}, queue)
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	w := api.nextWatch(t, "1")
	began := time.Now()
	for i, name := range []string{"app", "flags", "db"} {
		if i > 0 {
			time.Sleep(delay / 2)
		}
		w.Modify(secretMeta(name, string(rune('2'+i))))
	}
	lastChange := time.Now()
	if n := queue.Len(); n != 0 {
		t.Errorf("%d requests ready %s after the first change, while changes kept coming", n, time.Since(began))
	}
	nextRequests(t, queue, 1)
	if waited := time.Since(lastChange); waited < delay-20*time.Millisecond {
		t.Errorf("the request came %s after the last change, want the delay, %s", waited, delay)
	}
	time.Sleep(delay + 100*time.Millisecond)
	if n := queue.Len(); n != 0 {
		t.Errorf("%d more requests after the burst, want one reconcile for the three changes", n)
	}
}

// TestDebouncerWaitsAtMostTenDelays: a workload whose source changes without pause is still
// reconciled.
func TestDebouncerWaitsAtMostTenDelays(t *testing.T) {
	queue := newQueue(t)
	const delay = 30 * time.Millisecond
	d := newDebouncer(queue, delay)
	began := time.Now()
	for time.Since(began) < 2*maxDebounce*delay && queue.Len() == 0 {
		d.add(request("busy"))
		time.Sleep(delay / 3)
	}
	if queue.Len() == 0 {
		t.Fatalf("no request after %s of changes every %s", time.Since(began), delay/3)
	}
	if waited := time.Since(began); waited > maxDebounce*delay+200*time.Millisecond {
		t.Errorf("the request came after %s, want about %s", waited, maxDebounce*delay)
	}
}

// TestDispatchNotesUnrecordedChanges: a source's events are noted for the workloads that map to
// it and have no record yet, once per reconcile that takes them; a workload with a record, or a
// bookmark, notes nothing.
func TestDispatchNotesUnrecordedChanges(t *testing.T) {
	queue := newQueue(t)
	var unrecorded unrecordedChanges
	cons := &consumer{name: "c", queue: queue, unrecorded: &unrecorded,
		workloadsFor: func(context.Context, string, podrefs.Source) []mappedWorkload {
			return []mappedWorkload{{Request: request("new")}, {Request: request("old"), recorded: true}}
		}}
	c := &changes{consumers: map[*consumer]bool{cons: true}}
	for _, ev := range []struct {
		src  podrefs.Source
		kind watch.EventType
	}{
		{podrefs.Source{Kind: podrefs.ConfigMap, Name: "app"}, watch.Added},
		{podrefs.Source{Kind: podrefs.ConfigMap, Name: "app"}, watch.Modified},
		{podrefs.Source{Kind: podrefs.Secret, Name: "db"}, watch.Deleted},
		{podrefs.Source{Kind: podrefs.Secret, Name: "tls"}, watch.Bookmark},
	} {
		c.dispatch(context.Background(), ev.src, "ns", ev.kind)
	}
	want := map[string]sourceEvents{"ConfigMap/app": sourceCreated | sourceModified, "Secret/db": sourceDeleted}
	if diff := cmp.Diff(want, unrecorded.take("c", request("new"))); diff != "" {
		t.Errorf("noted for the workload without a record (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ name, workload string }{{"taken twice", "new"}, {"recorded", "old"}} {
		if got := unrecorded.take("c", request(tc.workload)); got != nil {
			t.Errorf("%s: noted %v, want nothing", tc.name, got)
		}
	}
	if n := queue.Len(); n != 2 {
		t.Errorf("%d requests queued, want the two workloads", n)
	}
	c.dispatch(context.Background(), podrefs.Source{Kind: podrefs.ConfigMap, Name: "app"}, "ns", watch.Modified)
	unrecorded.carry("c", request("new"))
	want = map[string]sourceEvents{"ConfigMap/app": sourceModified | sourceDuringFirstRecord}
	if diff := cmp.Diff(want, unrecorded.take("c", request("new"))); diff != "" {
		t.Errorf("carried past the first record (-want +got):\n%s", diff)
	}
}

// TestDebouncersWaiting: a controller's request waits while its quiet period lasts, whichever
// of the controller's watches (one debouncer each controller) started it, and no longer once
// it is queued; another controller's request does not.
func TestDebouncersWaiting(t *testing.T) {
	queue := newQueue(t)
	var ds debouncers
	const delay = 50 * time.Millisecond
	first := ds.get("c", queue, delay)
	if second := ds.get("c", queue, delay); first != second {
		t.Fatal("two debouncers for one controller")
	}
	// Built again (a new term): the new queue gets a debouncer of its own.
	if again := ds.get("c", newQueue(t), delay); again == first || again.queue == queue {
		t.Fatal("a controller built again kept the debouncer of its stopped queue")
	}
	first = ds.get("c", queue, delay)
	first.add(request("web"))
	if !ds.waiting("c", request("web")) || ds.waiting("c", request("other")) || ds.waiting("d", request("web")) {
		t.Error("waiting does not follow the pending request")
	}
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Second, true, func(context.Context) (bool, error) {
		return queue.Len() == 1 && !ds.waiting("c", request("web")), nil
	})
	if err != nil {
		t.Errorf("after the quiet period: queued %d, still waiting %v", queue.Len(), ds.waiting("c", request("web")))
	}
}

// TestChangesStopWithTheLastController: the shared watch runs while some controller is
// registered, and starts again, from a new list, for the next one.
func TestChangesStopWithTheLastController(t *testing.T) {
	api := newFakeAPI(t)
	c := testChanges(api)
	var resyncs atomic.Int32
	firstCtx, stopFirst := context.WithCancel(context.Background())
	secondCtx, stopSecond := context.WithCancel(context.Background())
	defer stopFirst()
	defer stopSecond()
	api.lists <- "1"
	start(t, firstCtx, c, testConsumer("d-", &resyncs, 0), newQueue(t))
	queue := newQueue(t)
	start(t, secondCtx, c, testConsumer("s-", &resyncs, 0), queue)
	w := api.nextWatch(t, "1")
	stopFirst()
	time.Sleep(50 * time.Millisecond)
	w.Modify(secretMeta("a", "2"))
	if diff := cmp.Diff([]reconcile.Request{request("s-a")}, nextRequests(t, queue, 1)); diff != "" {
		t.Errorf("requests after the other controller stopped (-want +got):\n%s", diff)
	}
	stopSecond()
	testWait(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.cancel == nil
	})
	if !w.IsStopped() {
		testWait(t, w.IsStopped)
	}
	api.lists <- "7"
	third, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := start(t, third, c, testConsumer("c-", &resyncs, 0), newQueue(t))
	if err := src.WaitForSync(third); err != nil {
		t.Fatal(err)
	}
	api.nextWatch(t, "7")
}

func testWait(t *testing.T, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestChangesWaitForTheirStartingPoint: a controller's workers start only once the watch knows
// where it starts, so WaitForSync blocks while the list fails.
func TestChangesWaitForTheirStartingPoint(t *testing.T) {
	api := newFakeAPI(t)
	failures := 0
	api.client.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures < 2 {
			failures++
			return true, nil, apierrors.NewGenericServerResponse(http.StatusServiceUnavailable, "list",
				schema.GroupResource{Resource: "secrets"}, "", "unavailable", 0, true)
		}
		return false, nil, nil
	})
	c := testChanges(api)
	c.retry = wait.Backoff{Duration: 50 * time.Millisecond, Steps: 1}
	var resyncs atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := start(t, ctx, c, testConsumer("d-", &resyncs, 0), newQueue(t))
	early, cancelEarly := context.WithTimeout(ctx, 60*time.Millisecond)
	defer cancelEarly()
	if err := src.WaitForSync(early); err == nil {
		t.Fatal("WaitForSync returned while every list failed")
	}
	api.lists <- "7"
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	api.nextWatch(t, "7")
}

// TestChangesStoppedBeforeTheirStartingPoint: a source stopped while every list fails reports
// the stop from WaitForSync, and the watch stops rather than leave a goroutine behind.
func TestChangesStoppedBeforeTheirStartingPoint(t *testing.T) {
	api := newFakeAPI(t)
	api.client.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("unavailable")
	})
	c := testChanges(api)
	c.retry = wait.Backoff{Duration: 10 * time.Millisecond, Steps: 1}
	var resyncs atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	src := start(t, ctx, c, testConsumer("d-", &resyncs, 0), newQueue(t))
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := src.WaitForSync(ctx); err == nil {
		t.Error("WaitForSync returned nil for a source stopped before it started watching")
	}
	testWait(t, func() bool {
		select {
		case <-src.synced:
			return true
		default:
			return false
		}
	})
}
