package controllers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/source"
)

// watchStarts follows, per controller, whether the uncached watches of its latest build have
// started: a controller's workers start only once every watch has, so until then a replica
// that runs the controller is not ready for it. The cache's informers are followed apart
// (cachesSynced); a standby starts no watch of its own.
type watchStarts struct {
	mu           sync.Mutex
	byController map[string][]*startedSource
}

// track wraps the uncached watches of one build of the controller name, replacing those of an
// earlier build (a new term of its Lease).
func (w *watchStarts) track(name string, srcs []source.Source) []source.Source {
	out := make([]source.Source, len(srcs))
	tracked := make([]*startedSource, len(srcs))
	for i, src := range srcs {
		tracked[i] = &startedSource{Source: src}
		out[i] = tracked[i]
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byController == nil {
		w.byController = map[string][]*startedSource{}
	}
	w.byController[name] = tracked
	return out
}

// built says whether the controller name has been built here: with a Lease per group, whether
// this replica has led it.
func (w *watchStarts) built(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.byController[name]
	return ok
}

// started returns an error naming a watch of the controller name that has not started.
func (w *watchStarts) started(name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.byController[name] {
		if !s.synced.Load() {
			return fmt.Errorf("watch %s not started yet", s.Source)
		}
	}
	return nil
}

// startedSource is a source that records when it has synced.
type startedSource struct {
	source.Source
	synced atomic.Bool
}

// WaitForSync waits for the wrapped source, when it syncs at all, and records that it has.
func (s *startedSource) WaitForSync(ctx context.Context) error {
	if syncing, ok := s.Source.(source.SyncingSource); ok {
		if err := syncing.WaitForSync(ctx); err != nil {
			return err
		}
	}
	s.synced.Store(true)
	return nil
}

// String names the wrapped source.
func (s *startedSource) String() string { return fmt.Sprint(s.Source) }
