package loganalysis

import (
	"fmt"
	"strings"
	"time"
)

// filter selects the lines --controller, --since, --until and --level ask for.
type filter struct {
	// controllers, when not empty, are the controllers whose lines pass; lines without a
	// controller then do not pass.
	controllers map[string]bool
	// since and until bound ts (Unix nanoseconds), inclusive, when set.
	since, until       int64
	hasSince, hasUntil bool
	// minLevel is the lowest level that passes.
	minLevel int
}

// newFilter builds a filter from the flags' values; now resolves relative times.
func newFilter(controllers, since, until, level string, now time.Time) (filter, error) {
	f := filter{minLevel: -128}
	for _, c := range strings.Split(controllers, ",") {
		if c = strings.TrimSpace(c); c != "" {
			if f.controllers == nil {
				f.controllers = map[string]bool{}
			}
			f.controllers[c] = true
		}
	}
	var err error
	if since != "" {
		if f.since, err = parseTimeFlag("--since", since, now); err != nil {
			return filter{}, err
		}
		f.hasSince = true
	}
	if until != "" {
		if f.until, err = parseTimeFlag("--until", until, now); err != nil {
			return filter{}, err
		}
		f.hasUntil = true
	}
	if f.hasSince && f.hasUntil && f.until < f.since {
		return filter{}, fmt.Errorf("--until %s is before --since %s", until, since)
	}
	if level != "" {
		l, ok := parseLevel([]byte(level))
		if !ok {
			return filter{}, fmt.Errorf("--level %q: want debug, info, warn, error, dpanic, panic or fatal", level)
		}
		f.minLevel = l
	}
	return f, nil
}

// parseTimeFlag reads an RFC 3339 time, or a duration meaning that long before now.
func parseTimeFlag(flag, value string, now time.Time) (int64, error) {
	if t, err := time.Parse(time.RFC3339Nano, value); err == nil {
		return t.UnixNano(), nil
	}
	d, err := time.ParseDuration(value)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s %q: want an RFC 3339 time such as 2026-11-30T05:00:00Z, or a duration before now such as 90m", flag, value)
	}
	return now.Add(-d).UnixNano(), nil
}

// match says whether a line of controller, level and ts passes.
func (f *filter) match(controller []byte, level int, ts int64) bool {
	switch {
	case level < f.minLevel:
		return false
	case f.hasSince && ts < f.since:
		return false
	case f.hasUntil && ts > f.until:
		return false
	case f.controllers != nil && !f.controllers[string(controller)]:
		return false
	}
	return true
}
