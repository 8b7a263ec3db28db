package loganalysis

import (
	"bufio"
	"bytes"
	"strings"
)

// target is what a trace follows: one object, or one reconcile.
type target struct {
	namespace, name []byte
	reconcileID     []byte
}

func (t target) match(l *Line) bool {
	if t.reconcileID != nil {
		return bytes.Equal(l.ReconcileID, t.reconcileID)
	}
	return l.Name != nil && bytes.Equal(l.Name, t.name) && bytes.Equal(l.Namespace, t.namespace)
}

// trace prints the lines about one target, in input order, one header line each
// ("TS LEVEL CONTROLLER NAMESPACE/NAME RECONCILEID MSG") followed by the line's other keys,
// indented; a multi-line string value is printed as an indented block.
type trace struct {
	stream
	target target
	out    *bufio.Writer
	fields fieldList
	// fieldParser walks the matched lines again for all their keys, keeping the stream's
	// parser's buffer, which holds the header's values, intact.
	fieldParser Parser
	matched     uint64
}

// headerKeys are shown in the header line, or repeat it (controller-runtime writes the object
// once more under its kind), and are not listed again below it.
var headerKeys = map[string]bool{"level": true, "ts": true, "msg": true, "controller": true, "namespace": true,
	"name": true, "reconcileID": true, "controllerGroup": true, "controllerKind": true}

func (t *trace) add(raw []byte) {
	level, ts, ok := t.next(raw)
	if !ok || !t.target.match(&t.line) {
		return
	}
	t.matched++
	l := &t.line
	when := string(l.TS)
	if l.tsNumber { // an epoch number is not readable
		when = formatTS(ts)
	}
	header := []string{when, strings.ToUpper(levelName(level)), dashBytes(l.Controller), object(l.Namespace, l.Name),
		dashBytes(l.ReconcileID), string(l.Msg)}
	t.out.WriteString(oneLine(strings.Join(header, " ")))
	t.out.WriteByte('\n')
	t.fields = t.fields[:0]
	_ = t.fieldParser.walk(raw, &t.fields) // the line was parsed once already: it cannot fail now
	kind := ""
	for _, f := range t.fields {
		if f.key == "controllerKind" {
			kind = f.value
		}
	}
	for _, f := range t.fields {
		if headerKeys[f.key] || (kind != "" && f.key == kind) {
			continue
		}
		if f.isString && strings.Contains(f.value, "\n") {
			t.out.WriteString("    " + f.key + ":\n")
			for _, v := range strings.Split(strings.TrimRight(f.value, "\n"), "\n") {
				t.out.WriteString("        " + v + "\n")
			}
			continue
		}
		t.out.WriteString("    " + f.key + ": " + f.value + "\n")
	}
}

func dashBytes(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return string(b)
}

func object(namespace, name []byte) string {
	switch {
	case len(name) == 0:
		return "-"
	case len(namespace) == 0:
		return string(name)
	}
	return string(namespace) + "/" + string(name)
}

// fieldList collects every top-level key of a line, in order.
type fieldList []field

type field struct {
	key, value string
	isString   bool
}

func (fl *fieldList) want([]byte) bool { return true }

func (fl *fieldList) visit(key, value []byte, isString bool) {
	*fl = append(*fl, field{key: string(key), value: string(value), isString: isString})
}
