package loganalysis

import "errors"

// Keys and messages the analyzer reads. controller-runtime puts controller, namespace, name and
// reconcileID on every line of a reconcile; the reconcile-end line of
// controllers/internal/reconcilelog adds durationMs and result.
const (
	// MsgReconcilerError is the message controller-runtime logs once per error a reconciler
	// returns, with the error under "error".
	MsgReconcilerError = "Reconciler error"
	// MsgReconcileEnd is the message of the debug reconcile-end line.
	MsgReconcileEnd = "Reconcile finished"
	// MsgLinesDropped is the message of the line the manager's logger (internal/logging) writes
	// every few seconds with how many lines of a controller its sampling dropped meanwhile,
	// under "dropped".
	MsgLinesDropped = "Log lines dropped by sampling"
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
	// Dropped is the count of a MsgLinesDropped line.
	Dropped []byte
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
	case "dropped":
		l.Dropped = value
	}
}

// want says whether visit keeps key; the values of other keys are skipped, not decoded.
func (l *Line) want(key []byte) bool {
	switch string(key) {
	case "level", "ts", "msg", "controller", "namespace", "name", "reconcileID", "error", "result", "durationMs", "dropped":
		return true
	}
	return false
}
