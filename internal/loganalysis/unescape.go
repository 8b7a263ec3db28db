package loganalysis

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

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
