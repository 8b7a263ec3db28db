package sources

import "context"

// plannedStopKey keys the planned-stop function in a producer's context.
type plannedStopKey struct{}

// WithPlannedStop returns a child of ctx that carries planned: once ctx is done, planned says
// whether that is a planned stop (the process shuts down, or gives its leadership up) rather
// than a lost election, after which another replica may already lead. A producer with state to
// save (the verticalscaler's usage history) saves it on a planned stop only, so that it never
// writes beside the next leader.
func WithPlannedStop(ctx context.Context, planned func() bool) context.Context {
	return context.WithValue(ctx, plannedStopKey{}, planned)
}

// PlannedStop says whether the end of ctx is a planned stop. A context without
// WithPlannedStop is one the manager ends only when it shuts down: a planned stop.
func PlannedStop(ctx context.Context) bool {
	planned, ok := ctx.Value(plannedStopKey{}).(func() bool)
	return !ok || planned()
}
