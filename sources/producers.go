package sources

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Run is a producer's loop: it sends through p until ctx ends.
type Run func(ctx context.Context, p *Producer) error

// AddProducer adds the producer of source to mgr as a runnable, but only when some controller
// consumes source; it reports whether it added it. Producers run only on the elected leader,
// where the controllers that drain their channels run.
func (r *Registry) AddProducer(mgr manager.Manager, source Name, run Run) (bool, error) {
	if len(r.Consumers(source)) == 0 {
		return false, nil
	}
	p := r.Producer(source)
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return run(ctx, p) }))
	if err != nil {
		return false, fmt.Errorf("adding producer of source %s: %w", source, err)
	}
	return true, nil
}
