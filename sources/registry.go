// Package sources is the transport for triggers from outside the API server's watches: the
// registry of channel sources, fed to controllers through source.Channel and WatchesRawSource,
// and the shared producers (the periodic resync and the HTTP trigger). A controller's own
// producer (the verticalscaler's usage poller) lives with that controller and sends through the
// same registry. This package knows no API kind and no controller.
//
// Each (source, controller) pair gets one buffered channel. A controller subscribes to the
// sources it consumes while it is set up; a producer then sends through a Producer handle whose
// Send never blocks: when a controller's buffer is full the event is dropped and counted in
// switchboard_source_events_total{result="dropped"}. controller-runtime's channel source itself
// blocks when its own buffer is full, which is why the decision is taken here, on the producer's
// side.
//
// A dropped event is not lost for good: every producer here is level-triggered. The periodic
// source lists every object again on its next tick, and a controller's own producer is expected
// to send again on its next cycle while the news still holds. An HTTP trigger answers 429 so the
// caller retries.
//
// A source that no enabled controller consumes is never started, and no nil channel ever reaches
// controller-runtime (its channel source refuses one at start).
package sources

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Name names a source in the registry.
type Name string

// The shared sources. A controller's own producer names its source in its own package (the
// verticalscaler's usage poller is recommender.Source) and registers it through its table row.
const (
	// Periodic re-enqueues every object of a controller's primary kind at an interval.
	Periodic Name = "periodic"
	// HTTPTrigger enqueues the objects named in POST /trigger/{controller} requests.
	HTTPTrigger Name = "http"
)

// DefaultBufferSize is the capacity of each consumer's channel.
const DefaultBufferSize = 1024

// Event results, the values of the "result" label of switchboard_source_events_total.
const (
	ResultSent     = "sent"
	ResultDropped  = "dropped"
	ResultRejected = "rejected"
	// ResultStandby is an HTTP trigger request answered 503 by a replica that does not lead
	// the controller.
	ResultStandby = "standby"
)

// ErrBufferFull is returned by Producer.Send when the consumer's buffer is full and the event
// was dropped.
var ErrBufferFull = errors.New("buffer full")

// ErrNoConsumer is returned by Producer.Send for a controller that does not consume the source.
var ErrNoConsumer = errors.New("no such consumer")

// Registry hands out one buffered channel per (source, controller) pair.
type Registry struct {
	bufferSize int
	events     *prometheus.CounterVec

	mu       sync.RWMutex
	channels map[Name]map[string]chan event.GenericEvent
}

// NewRegistry returns an empty registry whose channels hold bufferSize events each, and
// registers its event counter with reg.
func NewRegistry(bufferSize int, reg prometheus.Registerer) (*Registry, error) {
	if bufferSize < 1 {
		return nil, fmt.Errorf("source buffer size must be at least 1, got %d", bufferSize)
	}
	events := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_source_events_total",
		Help: "Events offered by channel sources to controllers, by source, controller and result (sent, dropped because the buffer was full, rejected as a bad request, standby: refused by a replica that does not lead the controller).",
	}, []string{"source", "controller", "result"})
	if err := reg.Register(events); err != nil {
		// A second registry in one process (tests start several managers) shares the counter.
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return nil, fmt.Errorf("registering source metrics: %w", err)
		}
		events = already.ExistingCollector.(*prometheus.CounterVec)
	}
	return &Registry{
		bufferSize: bufferSize,
		events:     events,
		channels:   map[Name]map[string]chan event.GenericEvent{},
	}, nil
}

// Subscribe returns the channel through which controller consumes source, to be passed to
// source.Channel. Subscribing twice returns the same channel.
func (r *Registry) Subscribe(source Name, controller string) <-chan event.GenericEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	consumers := r.channels[source]
	if consumers == nil {
		consumers = map[string]chan event.GenericEvent{}
		r.channels[source] = consumers
	}
	ch, ok := consumers[controller]
	if !ok {
		ch = make(chan event.GenericEvent, r.bufferSize)
		consumers[controller] = ch
		// Served at zero from the start, so that a dashboard or an alert on drops reads 0,
		// not "no data", until the first one.
		for _, result := range []string{ResultSent, ResultDropped} {
			r.events.WithLabelValues(string(source), controller, result)
		}
	}
	return ch
}

// Consumers returns the sorted names of the controllers that consume source.
func (r *Registry) Consumers(source Name) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.channels[source]))
	for name := range r.channels[source] {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Producer returns the send-side handle of source.
func (r *Registry) Producer(source Name) *Producer {
	return &Producer{source: source, registry: r}
}

// Producer sends events of one source to its consumers. It is safe for concurrent use.
type Producer struct {
	source   Name
	registry *Registry
}

// Source returns the name of the source this producer sends for.
func (p *Producer) Source() Name { return p.source }

// Consumers returns the sorted names of the controllers that consume this source.
func (p *Producer) Consumers() []string { return p.registry.Consumers(p.source) }

// Send offers an event for obj to controller without ever blocking. It returns ErrBufferFull
// when the controller's buffer is full (the event is dropped and counted), and ErrNoConsumer when
// controller does not consume this source.
func (p *Producer) Send(controller string, obj client.Object) error {
	p.registry.mu.RLock()
	ch, ok := p.registry.channels[p.source][controller]
	p.registry.mu.RUnlock()
	if !ok {
		return fmt.Errorf("source %s to controller %q: %w", p.source, controller, ErrNoConsumer)
	}
	select {
	case ch <- event.GenericEvent{Object: obj}:
		p.count(controller, ResultSent)
		return nil
	default:
		p.count(controller, ResultDropped)
		return fmt.Errorf("source %s to controller %q: %w", p.source, controller, ErrBufferFull)
	}
}

// Reject counts a request that was refused before it became an event (for example a malformed
// HTTP trigger). controller is empty when the request named no known controller, so that user
// input never becomes a label value.
func (p *Producer) Reject(controller string) {
	p.count(controller, ResultRejected)
}

func (p *Producer) count(controller, result string) {
	p.registry.events.WithLabelValues(string(p.source), controller, result).Inc()
}
