package sources

import (
	"context"
	"testing"
)

func TestPlannedStop(t *testing.T) {
	if !PlannedStop(context.Background()) {
		t.Error("a context nobody marked: not a planned stop, want one (the manager stops producers only at shutdown)")
	}
	shutdown, stop := context.WithCancel(context.Background())
	ctx := WithPlannedStop(context.Background(), func() bool { return shutdown.Err() != nil })
	if PlannedStop(ctx) {
		t.Error("planned before the shutdown")
	}
	stop()
	if !PlannedStop(ctx) {
		t.Error("not planned after the shutdown")
	}
}
