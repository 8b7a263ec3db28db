package loganalysis

import "bytes"

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
