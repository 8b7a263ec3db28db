package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Leaders waits until each named controller is led by exactly one of the replicas (its
// switchboard_controller_leader is 1 there, 0 elsewhere) and returns, per controller, the
// replica that leads it. It fails the test if a replica exits, or after two minutes: a leader
// starts its caches and waits for them before it campaigns, which on a loaded CI machine has
// taken most of a minute.
func Leaders(t testing.TB, replicas []*Process, controllers ...string) map[string]*Process {
	t.Helper()
	out := map[string]*Process{}
	Poll(t, 2*time.Minute, 250*time.Millisecond, func() error {
		clear(out)
		for i, m := range replicas {
			if exited, err := m.Exited(); exited {
				return fmt.Errorf("replica %d exited: %v", i, err)
			}
			leading, err := m.MetricByLabel(context.Background(), "switchboard_controller_leader", "controller")
			if err != nil {
				return fmt.Errorf("replica %d: %w", i, err)
			}
			for _, name := range controllers {
				if leading[name] == 1 {
					if out[name] != nil {
						return fmt.Errorf("two replicas lead %s (replica %d among them)", name, i)
					}
					out[name] = m
				}
			}
		}
		for _, name := range controllers {
			if out[name] == nil {
				return fmt.Errorf("no replica leads %s yet", name)
			}
		}
		return nil
	})
	return out
}
