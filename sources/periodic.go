package sources

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// PeriodicJitter spreads the periodic source's ticks by up to this fraction of the interval, so
// that managers started together do not resync together.
const PeriodicJitter = 0.1

// fullBufferBackoff is how long the periodic source waits before offering an event again to a
// controller whose buffer was full. The periodic source is the one producer that can afford to
// wait: it has no caller, and the next tick is far away.
const fullBufferBackoff = 20 * time.Millisecond

// PeriodicResync re-enqueues every object of each consuming controller's primary kind once per
// Interval (with jitter). It is the documented alternative to returning RequeueAfter from every
// reconcile: one loop for the whole controller instead of a timer per object, and it also covers
// events dropped by any other source.
type PeriodicResync struct {
	// Reader lists the primary objects; the manager's cache, so a tick costs no API call.
	Reader client.Reader
	// Interval is the time between two resyncs.
	Interval time.Duration
	// Lists gives, per consuming controller, an empty list of its primary kind.
	Lists map[string]func() client.ObjectList
}

// Run resyncs once per Interval (with jitter) until ctx ends. The first resync comes one
// interval after the start, not at it: a controller's informers enqueue every object they
// list when it starts, and an immediate resync would only reconcile them all a second time.
func (p PeriodicResync) Run(ctx context.Context, producer *Producer) error {
	log := logf.FromContext(ctx).WithValues("source", string(producer.Source()))
	timer := time.NewTimer(wait.Jitter(p.Interval, PeriodicJitter))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		p.tick(ctx, producer, log)
		timer.Reset(wait.Jitter(p.Interval, PeriodicJitter))
	}
}

// tick sends every object of each consumer's primary kind once. A failed list is logged and
// retried on the next tick.
func (p PeriodicResync) tick(ctx context.Context, producer *Producer, log logr.Logger) {
	for _, controller := range producer.Consumers() {
		newList, ok := p.Lists[controller]
		if !ok {
			continue
		}
		sent, err := p.resync(ctx, producer, controller, newList())
		if err != nil {
			log.Error(err, "Periodic resync failed", "controller", controller, "sent", sent)
			continue
		}
		log.V(1).Info("Periodic resync sent", "controller", controller, "sent", sent)
	}
}

// resync sends one event per listed object to controller and returns how many it sent.
func (p PeriodicResync) resync(ctx context.Context, producer *Producer, controller string, list client.ObjectList) (int, error) {
	if err := p.Reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	sent := 0
	err := meta.EachListItem(list, func(item runtime.Object) error {
		obj, err := meta.Accessor(item)
		if err != nil {
			return err
		}
		// Only the name and namespace travel: that is all the handler reads, and it keeps the
		// event from pinning a cached object.
		key := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
		for {
			err := producer.Send(controller, key)
			if !errors.Is(err, ErrBufferFull) {
				if err == nil {
					sent++
				}
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(fullBufferBackoff):
			}
		}
	})
	return sent, err
}
