package loganalysis

import (
	"math"
	"strconv"
	"time"
)

// parseTS reads the time of a line as Unix nanoseconds. Strings are RFC 3339 (zap's rfc3339,
// rfc3339nano and iso8601 encodings); numbers are Unix time in seconds, milliseconds or
// nanoseconds (zap's epoch, millis and nanos encodings), told apart by their size.
func parseTS(b []byte, isNumber bool) (int64, bool) {
	if isNumber {
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, false
		}
		switch {
		case f < 1e11: // seconds until the year 5138
			return int64(f * 1e9), true
		case f < 1e14: // milliseconds
			return int64(f * 1e6), true
		case f < 9e18:
			return int64(f), true
		}
		return 0, false
	}
	if ns, ok := parseRFC3339(b); ok {
		return ns, true
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return 0, false
	}
	return t.UnixNano(), true
}

// parseRFC3339 is a fast path for "2006-01-02T15:04:05[.frac](Z|±07:00|±0700)", the forms zap
// writes; anything else falls back to time.Parse.
func parseRFC3339(b []byte) (int64, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	hour, ok4 := digits(b[11:13])
	minute, ok5 := digits(b[14:16])
	sec, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return 0, false
	}
	i := 19
	nanos := 0
	if b[i] == '.' {
		i++
		scale := 100000000
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			nanos += int(b[i]-'0') * scale
			scale /= 10
			i++
		}
		if i == start || i-start > 9 {
			return 0, false
		}
	}
	offset := 0
	switch rest := b[i:]; {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case (len(rest) == 6 && rest[3] == ':') || len(rest) == 5:
		if rest[0] != '+' && rest[0] != '-' {
			return 0, false
		}
		h, okh := digits(rest[1:3])
		m, okm := digits(rest[len(rest)-2:])
		if !okh || !okm || h > 23 || m > 59 {
			return 0, false
		}
		offset = (h*60 + m) * 60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return 0, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nanos, time.UTC)
	if t.Day() != day { // 31 February and the like
		return 0, false
	}
	return t.UnixNano() - int64(offset)*1e9, true
}

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// formatTS writes Unix nanoseconds as RFC 3339 in UTC, with fractions only when there are any.
func formatTS(ns int64) string {
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}
