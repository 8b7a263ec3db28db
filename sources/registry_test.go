package sources

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

func newTestRegistry(t *testing.T, buffer int) *Registry {
	t.Helper()
	r, err := NewRegistry(buffer, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func obj(name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

func TestFullBufferDropsCountsAndNeverBlocks(t *testing.T) {
	r := newTestRegistry(t, 2)
	ch := r.Subscribe(Periodic, "myapp")
	p := r.Producer(Periodic)

	done := make(chan []error)
	go func() {
		var errs []error
		for _, name := range []string{"a", "b", "c", "d"} {
			errs = append(errs, p.Send("myapp", obj(name)))
		}
		done <- errs
	}()
	var errs []error
	select {
	case errs = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Send blocked on a full buffer")
	}
	for i, err := range errs {
		wantFull := i >= 2
		if errors.Is(err, ErrBufferFull) != wantFull {
			t.Errorf("send %d: error %v, want buffer full %v", i, err, wantFull)
		}
	}
	if got := testutil.ToFloat64(r.events.WithLabelValues("periodic", "myapp", ResultSent)); got != 2 {
		t.Errorf("sent = %v, want 2", got)
	}
	if got := testutil.ToFloat64(r.events.WithLabelValues("periodic", "myapp", ResultDropped)); got != 2 {
		t.Errorf("dropped = %v, want 2", got)
	}
	// What was sent arrives in order; what was dropped does not.
	for _, want := range []string{"a", "b"} {
		if got := (<-ch).Object.GetName(); got != want {
			t.Errorf("received %q, want %q", got, want)
		}
	}
	select {
	case e := <-ch:
		t.Errorf("received dropped event %q", e.Object.GetName())
	default:
	}
}

func TestSendToUnknownConsumer(t *testing.T) {
	r := newTestRegistry(t, 1)
	r.Subscribe(Periodic, "myapp")
	if err := r.Producer(Periodic).Send("verticalscaler", obj("a")); !errors.Is(err, ErrNoConsumer) {
		t.Errorf("error = %v, want ErrNoConsumer", err)
	}
}

func TestSubscribeIsIdempotentAndPerController(t *testing.T) {
	r := newTestRegistry(t, 1)
	a1 := r.Subscribe(Periodic, "a")
	a2 := r.Subscribe(Periodic, "a")
	b := r.Subscribe(Periodic, "b")
	if a1 != a2 {
		t.Error("subscribing twice gave two channels")
	}
	if a1 == b {
		t.Error("two controllers share a channel")
	}
	if diff := cmp.Diff([]string{"a", "b"}, r.Consumers(Periodic)); diff != "" {
		t.Error(diff)
	}
}

func TestNewRegistryRejectsZeroBuffer(t *testing.T) {
	if _, err := NewRegistry(0, prometheus.NewRegistry()); err == nil {
		t.Error("buffer size 0 accepted")
	}
}

func TestTwoRegistriesShareTheCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewRegistry(1, reg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRegistry(1, reg); err != nil {
		t.Errorf("second registry on one prometheus registry: %v", err)
	}
}

// fakeManager records the runnables added to it.
type fakeManager struct {
	manager.Manager
	added int
}

func (f *fakeManager) Add(manager.Runnable) error { f.added++; return nil }

func TestProducerWithoutConsumerIsNotStarted(t *testing.T) {
	r := newTestRegistry(t, 1)
	mgr := &fakeManager{}
	run := func(context.Context, *Producer) error { return nil }

	started, err := r.AddProducer(mgr, Periodic, run)
	if err != nil || started || mgr.added != 0 {
		t.Errorf("no consumer: started %v, added %d, err %v; want not started", started, mgr.added, err)
	}
	r.Subscribe(Periodic, "myapp")
	started, err = r.AddProducer(mgr, Periodic, run)
	if err != nil || !started || mgr.added != 1 {
		t.Errorf("one consumer: started %v, added %d, err %v; want started once", started, mgr.added, err)
	}
}
