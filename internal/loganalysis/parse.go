package loganalysis

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Keys and messages the analyzer reads. controller-runtime puts controller, namespace, name and
// reconcileID on every line of a reconcile; the reconcile-end line of
// controllers/internal/reconcilelog adds durationMs and result.
const (
	// MsgReconcilerError is the message controller-runtime logs once per error a reconciler
	// returns, with the error under "error".
	MsgReconcilerError = "Reconciler error"
	// MsgReconcileEnd is the message of the debug reconcile-end line.
	MsgReconcileEnd = "Reconcile finished"
	// terminalMarker is how reconcile.TerminalError's text starts; it may be wrapped.
	terminalMarker = "terminal error: "
)

// Line holds the keys of one log line the analyzer uses. Each field is the value's text
// (unescaped when the value is a JSON string), nil when the key is absent; the slices point into
// the line or into the Parser's buffer and are valid until the next Parse.
type Line struct {
	Level, TS, Msg                       []byte
	Controller, Namespace, Name          []byte
	ReconcileID, Error, Result, Duration []byte
	// tsNumber is set when ts is a JSON number (zap's epoch encodings).
	tsNumber bool
}

// Errors Parse returns. A line that is not a JSON object is errNotJSON; a JSON object without a
// level, a ts or a msg is errIncomplete.
var (
	errNotJSON    = errors.New("not a JSON object")
	errIncomplete = errors.New("no level, ts or msg key")
)

// Parser reads the keys of Line from one JSON log line at a time, without building a map and
// without allocating once its buffer has grown to the longest line. It is a scanner, not a
// validator: it checks the structure (strings, nesting, separators) but not, for example, the
// digits of numbers in values it skips.
type Parser struct {
	// buf holds unescaped string values. It is grown before a line is parsed so that appending
	// never reallocates: the slices handed out stay valid.
	buf []byte
}

// Parse fills l from line (with or without its line ending). It returns errNotJSON or
// errIncomplete for a line the analyzer cannot use.
func (p *Parser) Parse(line []byte, l *Line) error {
	*l = Line{}
	if err := p.walk(line, l); err != nil {
		return err
	}
	if l.Level == nil || l.TS == nil || l.Msg == nil {
		return errIncomplete
	}
	return nil
}

// visit stores value under key when key is one the analyzer uses.
func (l *Line) visit(key, value []byte, isString bool) {
	switch string(key) {
	case "level":
		l.Level = value
	case "ts":
		l.TS, l.tsNumber = value, !isString
	case "msg":
		l.Msg = value
	case "controller":
		l.Controller = value
	case "namespace":
		l.Namespace = value
	case "name":
		l.Name = value
	case "reconcileID":
		l.ReconcileID = value
	case "error":
		l.Error = value
	case "result":
		l.Result = value
	case "durationMs":
		l.Duration = value
	}
}

// want says whether visit keeps key; the values of other keys are skipped, not decoded.
func (l *Line) want(key []byte) bool {
	switch string(key) {
	case "level", "ts", "msg", "controller", "namespace", "name", "reconcileID", "error", "result", "durationMs":
		return true
	}
	return false
}

// visitor receives the top-level keys of a JSON object from Parser.walk.
type visitor interface {
	// want says whether the value of key is to be decoded and passed to visit.
	want(key []byte) bool
	// visit receives a key and its value: the unescaped text of a string, the raw JSON of
	// anything else.
	visit(key, value []byte, isString bool)
}

// walk passes each top-level key of the JSON object in line, and its value, to v.
func (p *Parser) walk(line []byte, v visitor) error {
	b := bytes.TrimSpace(line)
	if len(b) < 2 || b[0] != '{' {
		return errNotJSON
	}
	if cap(p.buf) < len(b) {
		p.buf = make([]byte, 0, 2*len(b))
	}
	p.buf = p.buf[:0]
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == '}' {
		return end(b, i+1)
	}
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return errNotJSON
		}
		key, next, err := p.str(b, i)
		if err != nil {
			return err
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return errNotJSON
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return errNotJSON
		}
		switch {
		case !v.want(key):
			if i, err = skipValue(b, i); err != nil {
				return err
			}
		case b[i] == '"':
			var value []byte
			if value, i, err = p.str(b, i); err != nil {
				return err
			}
			v.visit(key, value, true)
		default:
			start := i
			if i, err = skipValue(b, i); err != nil {
				return err
			}
			v.visit(key, b[start:i], false)
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return errNotJSON
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return end(b, i+1)
		default:
			return errNotJSON
		}
	}
}

// end accepts the object when nothing but spaces follows it.
func end(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return errNotJSON
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// closingQuote returns the index of the quote that ends the string whose opening quote is at
// b[i], or -1. A quote preceded by an odd number of backslashes is escaped.
func closingQuote(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		n := 0
		for q-1-n > i && b[q-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q
		}
		j = q + 1
	}
}

// str decodes the string whose opening quote is at b[i]. It returns its text (a sub-slice of b
// when there is nothing to unescape) and the index after the closing quote.
func (p *Parser) str(b []byte, i int) ([]byte, int, error) {
	q := closingQuote(b, i)
	if q < 0 {
		return nil, 0, errNotJSON
	}
	raw := b[i+1 : q]
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw, q + 1, nil
	}
	start := len(p.buf)
	buf, err := unescape(p.buf, raw)
	if err != nil {
		return nil, 0, err
	}
	p.buf = buf
	return buf[start:len(buf):len(buf)], q + 1, nil
}

// unescape appends the JSON string body raw, unescaped, to dst. The result is never longer
// than raw, which is what lets Parser size its buffer in advance.
func unescape(dst, raw []byte) ([]byte, error) {
	for len(raw) > 0 {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			return append(dst, raw...), nil
		}
		dst = append(dst, raw[:k]...)
		raw = raw[k:]
		if len(raw) < 2 {
			return nil, errNotJSON
		}
		switch c := raw[1]; c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw[2:])
			if !ok {
				return nil, errNotJSON
			}
			n := 6
			if utf16.IsSurrogate(r) {
				// A pair takes 12 bytes of escapes and 4 of UTF-8; a lone half becomes U+FFFD (3
				// bytes), as encoding/json does.
				if len(raw) >= 12 && raw[6] == '\\' && raw[7] == 'u' {
					if r2, ok := hex4(raw[8:]); ok {
						if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
							r, n = pair, 12
						}
					}
				}
				if n == 6 {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			raw = raw[n:]
			continue
		default:
			return nil, errNotJSON
		}
		raw = raw[2:]
	}
	return dst, nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// skipValue returns the index after the JSON value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	switch b[i] {
	case '"':
		q := closingQuote(b, i)
		if q < 0 {
			return 0, errNotJSON
		}
		return q + 1, nil
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				q := closingQuote(b, i)
				if q < 0 {
					return 0, errNotJSON
				}
				i = q
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errNotJSON
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 't', 'f', 'n':
		start := i
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
			i++
		}
		return i, isLiteral(b[start:i])
	}
	return 0, errNotJSON
}

// isLiteral accepts a number, true, false or null.
func isLiteral(b []byte) error {
	switch string(b) {
	case "true", "false", "null":
		return nil
	}
	if b[0] == 't' || b[0] == 'f' || b[0] == 'n' {
		return errNotJSON
	}
	return nil
}

// Levels of zap. logr's V(n) is zap level -n, so V(1) is debug and V(2) is encoded "Level(-2)".
const (
	levelDebug = -1
	levelInfo  = 0
	levelError = 2
)

// levelNames are zap's level names, lowercase.
var levelNames = map[string]int{"debug": -1, "info": 0, "warn": 1, "error": 2, "dpanic": 3, "panic": 4, "fatal": 5}

// parseLevel reads a level as zap's JSON encoders write it: a name in any case, or
// "Level(-N)" for logr verbosity N above 1.
func parseLevel(b []byte) (int, bool) {
	switch string(b) { // the common cases, without allocating
	case "info":
		return levelInfo, true
	case "debug":
		return levelDebug, true
	case "error":
		return levelError, true
	}
	if l, ok := levelNames[string(bytes.ToLower(b))]; ok {
		return l, true
	}
	if len(b) > len("level()") && bytes.EqualFold(b[:6], []byte("level(")) && b[len(b)-1] == ')' {
		n, err := strconv.Atoi(string(b[6 : len(b)-1]))
		if err == nil && n >= -128 && n <= 127 {
			return n, true
		}
	}
	return 0, false
}

// levelName is the canonical name of a level.
func levelName(l int) string {
	for name, v := range levelNames {
		if v == l {
			return name
		}
	}
	return "level(" + strconv.Itoa(l) + ")"
}

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
