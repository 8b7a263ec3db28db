package configmapwatcher

import (
	"sync"
	"time"
)

// rolloutWindow is the window --max-rollouts-per-minute counts rolls in. It is a second longer
// than a minute: a roll is counted when its write is sent, and the API server, and anyone who
// watches, see it a few milliseconds later, by a delay that varies; the margin keeps any minute
// they observe within the limit.
const rolloutWindow = time.Minute + time.Second

// rolloutLimiter bounds the rolls started in any window of rolloutWindow to max, over every
// controller of the group (one per workload kind). A roll over the limit is not dropped: the
// reconcile returns RequeueAfter the time until a roll leaves the window, writes nothing, and
// decides again then, from the data as it is by that time.
type rolloutLimiter struct {
	max int
	now func() time.Time

	mu sync.Mutex
	// started holds the times of the rolls in the current window, oldest first.
	started []time.Time
}

// newRolloutLimiter returns a limiter of max rolls per window; nil (no limit) for 0.
func newRolloutLimiter(perMinute int, now func() time.Time) *rolloutLimiter {
	if perMinute <= 0 {
		return nil
	}
	return &rolloutLimiter{max: perMinute, now: now}
}

// take counts a roll starting now and returns 0, or, when the window is full, counts nothing
// and returns how long to wait before asking again.
func (l *rolloutLimiter) take() time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for len(l.started) > 0 && now.Sub(l.started[0]) >= rolloutWindow {
		l.started = l.started[1:]
	}
	if len(l.started) >= l.max {
		return l.started[0].Add(rolloutWindow).Sub(now)
	}
	l.started = append(l.started, now)
	return 0
}
