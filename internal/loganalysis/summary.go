package loganalysis

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// Bounds of what summary holds in memory, whatever the size of its input.
const (
	// maxControllers is how many controllers are counted apart; the lines of any further ones
	// are counted under otherControllers.
	maxControllers = 256
	// otherControllers names the controllers beyond maxControllers.
	otherControllers = "(other)"
	// maxResults is how many distinct result values a controller counts apart; further ones
	// count under otherResult.
	maxResults = 16
	// otherResult names the result values beyond maxResults.
	otherResult = "(other)"
	// errorGroups and objectCounters are the capacities of the Space-Saving counters of error
	// messages and of objects: groups that make up more than 1/capacity of the error lines are
	// sure to be found.
	errorGroups    = 1000
	objectCounters = 1000
	// maxExample bounds the raw error message kept as an example of each group.
	maxExample = 512
	// DefaultTop is how many error groups and objects a summary lists by default.
	DefaultTop = 10
)

// summary aggregates lines into per-controller figures and top lists, in bounded memory.
type summary struct {
	stream
	levels      [256]uint64 // by level + 128
	first, last int64
	controllers map[string]*controllerStats
	order       []string
	errorLines  uint64
	// dropped counts the lines the manager's sampling dropped, as its MsgLinesDropped lines say.
	dropped uint64
	errors  *topN
	objects *topN
	key     []byte // scratch for the keys of errors and objects
}

type controllerStats struct {
	lines       uint64
	first, last int64
	reconciles  uint64
	// results holds counters, so that counting a result already seen does not allocate.
	results   map[string]*uint64
	errors    uint64
	terminal  uint64
	durations sketch
	// dropped counts the controller's lines the manager's sampling dropped.
	dropped uint64
}

func newSummary(f filter) *summary {
	return &summary{
		stream:      stream{filter: f},
		controllers: map[string]*controllerStats{},
		errors:      newTopN(errorGroups),
		objects:     newTopN(objectCounters),
	}
}

// add analyses one line.
func (s *summary) add(raw []byte) {
	level, ts, ok := s.next(raw)
	if !ok {
		return
	}
	l := &s.line
	s.levels[level+128]++
	if s.counts.Used == 1 || ts < s.first {
		s.first = ts
	}
	if s.counts.Used == 1 || ts > s.last {
		s.last = ts
	}
	if string(l.Msg) == MsgLinesDropped {
		if n, err := strconv.ParseUint(string(l.Dropped), 10, 64); err == nil {
			s.dropped += n
			if len(l.Controller) > 0 {
				s.controller(l.Controller).dropped += n
			}
		}
	}
	if len(l.Controller) > 0 {
		s.addController(s.controller(l.Controller), ts)
	}
	if level >= levelError {
		s.addError()
	}
}

func (s *summary) controller(name []byte) *controllerStats {
	if c, ok := s.controllers[string(name)]; ok {
		return c
	}
	key := string(name)
	if len(s.controllers) >= maxControllers {
		key = otherControllers
		if c, ok := s.controllers[key]; ok {
			return c
		}
	}
	c := &controllerStats{}
	s.controllers[key] = c
	s.order = append(s.order, key)
	return c
}

func (s *summary) addController(c *controllerStats, ts int64) {
	l := &s.line
	c.lines++
	if c.lines == 1 || ts < c.first {
		c.first = ts
	}
	if c.lines == 1 || ts > c.last {
		c.last = ts
	}
	switch string(l.Msg) {
	case MsgReconcileEnd:
		ms, ok := parseMs(l.Duration)
		if !ok {
			return
		}
		c.reconciles++
		c.durations.add(ms)
		c.result(l.Result)
	case MsgReconcilerError:
		c.errors++
		if bytes.Contains(l.Error, []byte(terminalMarker)) {
			c.terminal++
		}
		s.key = append(append(append(append(s.key[:0], l.Controller...), 0), l.Namespace...), '/')
		s.key = append(s.key, l.Name...)
		s.objects.add(s.key, nil)
	}
}

// parseMs reads a duration in milliseconds: a non-negative JSON number. Plain decimals, what
// the reconcile-end line writes, are read without allocating.
func parseMs(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return parseMsSlow(b)
	}
	var n, scale uint64 = 0, 1
	dot := false
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			n = n*10 + uint64(c-'0')
			if dot {
				scale *= 10
			}
		case c == '.' && !dot:
			dot = true
		default:
			return parseMsSlow(b)
		}
	}
	return float64(n) / float64(scale), true
}

func parseMsSlow(b []byte) (float64, bool) {
	ms, err := strconv.ParseFloat(string(b), 64)
	if err != nil || ms < 0 || math.IsNaN(ms) || math.IsInf(ms, 0) {
		return 0, false
	}
	return ms, true
}

// result counts one reconcile-end line with result.
func (c *controllerStats) result(result []byte) {
	if n, ok := c.results[string(result)]; ok {
		*n++
		return
	}
	if c.results == nil {
		c.results = map[string]*uint64{}
	}
	key := string(result)
	if len(c.results) >= maxResults {
		key = otherResult
	}
	if n, ok := c.results[key]; ok {
		*n++
		return
	}
	c.results[key] = new(uint64(1))
}

// addError counts an error-level line in its group: controller-runtime's "Reconciler error" by
// its error, any other by its message and error.
func (s *summary) addError() {
	l := &s.line
	s.errorLines++
	s.key = append(append(s.key[:0], l.Controller...), 0)
	text := l.Error
	if string(l.Msg) != MsgReconcilerError {
		s.key = fold(s.key, l.Msg, l.Name, l.Namespace)
		if len(l.Error) > 0 {
			s.key = append(s.key, ": "...)
		}
		if text == nil {
			text = l.Msg
		}
	}
	s.key = fold(s.key, l.Error, l.Name, l.Namespace)
	s.errors.add(s.key, text)
}

// truncate cuts b at n bytes, backing off to a UTF-8 boundary, and marks the cut.
func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + "…"
}
