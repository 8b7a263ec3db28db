package loganalysis

import (
	"bytes"
	"errors"
)

// Counts says what became of the lines read.
type Counts struct {
	// Read is every line read, empty lines aside.
	Read uint64 `json:"read"`
	// Used passed the filters and were analysed.
	Used uint64 `json:"used"`
	// NotJSON are lines that are not a JSON object (a panic's stack trace, klog output).
	NotJSON uint64 `json:"notJSON"`
	// Incomplete are JSON objects without a level, ts or msg that the analyzer can read.
	Incomplete uint64 `json:"incomplete"`
	// TooLong are lines longer than 1 MiB, skipped unread.
	TooLong uint64 `json:"tooLong"`
	// FilteredOut are lines the filters left out.
	FilteredOut uint64 `json:"filteredOut"`
}

// stream parses lines and applies the filter; summary and trace consume what passes.
type stream struct {
	parser Parser
	line   Line
	filter filter
	counts Counts
	// lastTS and lastTSRaw cache the last time parsed: consecutive lines often share it.
	lastTSRaw []byte
	lastTS    int64
}

// next parses raw and says whether it passes the filter, with its level and time.
func (s *stream) next(raw []byte) (level int, ts int64, ok bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return 0, 0, false
	}
	s.counts.Read++
	if err := s.parser.Parse(raw, &s.line); err != nil {
		if errors.Is(err, errIncomplete) {
			s.counts.Incomplete++
		} else {
			s.counts.NotJSON++
		}
		return 0, 0, false
	}
	level, okLevel := parseLevel(s.line.Level)
	ts, okTS := s.ts()
	if !okLevel || !okTS {
		s.counts.Incomplete++
		return 0, 0, false
	}
	if !s.filter.match(s.line.Controller, level, ts) {
		s.counts.FilteredOut++
		return 0, 0, false
	}
	s.counts.Used++
	return level, ts, true
}

func (s *stream) ts() (int64, bool) {
	if !s.line.tsNumber && s.lastTSRaw != nil && bytes.Equal(s.line.TS, s.lastTSRaw) {
		return s.lastTS, true
	}
	ts, ok := parseTS(s.line.TS, s.line.tsNumber)
	if ok && !s.line.tsNumber {
		s.lastTSRaw = append(s.lastTSRaw[:0], s.line.TS...)
		s.lastTS = ts
	}
	return ts, ok
}
