package sources

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// periodicReader serves ConfigMaps and Secrets from a fake client, and fails the first
// failures[kind] lists of a kind.
type periodicReader struct {
	client.Reader
	mu       sync.Mutex
	failures map[string]int
	lists    map[string]int
}

func (r *periodicReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	kind := fmt.Sprintf("%T", list)
	r.mu.Lock()
	r.lists[kind]++
	fail := r.failures[kind] > 0
	if fail {
		r.failures[kind]--
	}
	r.mu.Unlock()
	if fail {
		return errors.New("list failed")
	}
	return r.Reader.List(ctx, list, opts...)
}

func (r *periodicReader) listed(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lists[kind]
}

// newPeriodicReader holds the ConfigMaps ns/cm-0..cm-(configMaps-1) and the Secrets
// ns/secret-0..secret-(secrets-1).
func newPeriodicReader(configMaps, secrets int, failures map[string]int) *periodicReader {
	var objs []client.Object
	for i := range configMaps {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%d", i)}})
	}
	for i := range secrets {
		objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("secret-%d", i)}})
	}
	return &periodicReader{Reader: fake.NewClientBuilder().WithObjects(objs...).Build(),
		failures: failures, lists: map[string]int{}}
}

// periodicLists makes consumer "configs" list ConfigMaps and "secrets" list Secrets.
var periodicLists = map[string]func() client.ObjectList{
	"configs": func() client.ObjectList { return &corev1.ConfigMapList{} },
	"secrets": func() client.ObjectList { return &corev1.SecretList{} },
}

// runPeriodic runs p until the test ends.
func runPeriodic(t *testing.T, p PeriodicResync, producer *Producer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, producer) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
}

// receiveN receives n events from ch, or fails the test after a while.
func receiveN(t *testing.T, ch <-chan event.GenericEvent, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		select {
		case e := <-ch:
			got = append(got, e.Object.GetNamespace()+"/"+e.Object.GetName())
		case <-time.After(10 * time.Second):
			t.Fatalf("received %v, want %d events", got, n)
		}
	}
	return got
}

func names(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("ns/%s-%d", prefix, i))
	}
	return out
}

func TestPeriodicSendsEveryObjectToEachConsumer(t *testing.T) {
	r := newTestRegistry(t, 16)
	configs, secrets := r.Subscribe(Periodic, "configs"), r.Subscribe(Periodic, "secrets")
	// A consumer the periodic source has no list for is skipped, not an error.
	unlisted := r.Subscribe(Periodic, "unlisted")
	p := PeriodicResync{Reader: newPeriodicReader(3, 2, nil), Interval: time.Hour, Lists: periodicLists}
	p.tick(context.Background(), r.Producer(Periodic), logr.Discard())

	// One tick, one event per object.
	if diff := cmp.Diff(names("cm", 3), drainEvents(configs)); diff != "" {
		t.Errorf("configs received (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(names("secret", 2), drainEvents(secrets)); diff != "" {
		t.Errorf("secrets received (-want +got):\n%s", diff)
	}
	if extra := drainEvents(unlisted); len(extra) > 0 {
		t.Errorf("a consumer without a list received %v", extra)
	}
}

// TestPeriodicFirstTickAfterOneInterval: nothing at start, where the informers enqueue every
// object already.
func TestPeriodicFirstTickAfterOneInterval(t *testing.T) {
	r := newTestRegistry(t, 16)
	configs := r.Subscribe(Periodic, "configs")
	runPeriodic(t, PeriodicResync{Reader: newPeriodicReader(3, 0, nil), Interval: time.Hour, Lists: periodicLists}, r.Producer(Periodic))
	time.Sleep(200 * time.Millisecond)
	if got := drainEvents(configs); len(got) > 0 {
		t.Errorf("received %v at start, want nothing before the first interval", got)
	}
}

func TestPeriodicWaitsAndRetriesOnAFullBuffer(t *testing.T) {
	r := newTestRegistry(t, 1)
	configs := r.Subscribe(Periodic, "configs")
	p := PeriodicResync{Reader: newPeriodicReader(5, 0, nil), Interval: time.Hour, Lists: map[string]func() client.ObjectList{
		"configs": periodicLists["configs"]}}
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		// The test's context: a failed test does not leave the tick retrying forever.
		p.tick(t.Context(), r.Producer(Periodic), logr.Discard())
	}()

	// A slow consumer: the buffer of one is full most of the time.
	var got []string
	for range 5 {
		time.Sleep(3 * fullBufferBackoff)
		got = append(got, receiveN(t, configs, 1)...)
	}
	<-ticked
	if diff := cmp.Diff(names("cm", 5), got); diff != "" {
		t.Errorf("received (-want +got):\n%s", diff)
	}
	if dropped := testutil.ToFloat64(r.events.WithLabelValues("periodic", "configs", ResultDropped)); dropped == 0 {
		t.Error("no send met a full buffer: the test did not exercise the retry")
	}
	if sent := testutil.ToFloat64(r.events.WithLabelValues("periodic", "configs", ResultSent)); sent != 5 {
		t.Errorf("sent = %v, want 5", sent)
	}
}

func TestPeriodicKeepsGoingAfterAListError(t *testing.T) {
	r := newTestRegistry(t, 16)
	configs, secrets := r.Subscribe(Periodic, "configs"), r.Subscribe(Periodic, "secrets")
	reader := newPeriodicReader(2, 2, map[string]int{"*v1.ConfigMapList": 1})
	runPeriodic(t, PeriodicResync{Reader: reader, Interval: 100 * time.Millisecond, Lists: periodicLists}, r.Producer(Periodic))

	// The ConfigMap list fails on the first tick; the Secrets of that same tick still go out,
	// and the ConfigMaps go out on a later tick.
	if diff := cmp.Diff(names("secret", 2), receiveN(t, secrets, 2)); diff != "" {
		t.Errorf("secrets received (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(names("cm", 2), receiveN(t, configs, 2)); diff != "" {
		t.Errorf("configs received (-want +got):\n%s", diff)
	}
	if got := reader.listed("*v1.ConfigMapList"); got < 2 {
		t.Errorf("ConfigMaps listed %d times, want a failed list and a retry", got)
	}
}
