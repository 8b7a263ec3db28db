package loganalysis

import "bytes"

// Placeholders that fold the variable parts of error messages.
var (
	foldQuoted    = []byte(`"*"`)
	foldNumber    = []byte("<n>")
	foldUUID      = []byte("<uuid>")
	foldHex       = []byte("<hex>")
	foldName      = []byte("<name>")
	foldNamespace = []byte("<namespace>")
)

// maxFolded bounds the length of a folded message, and so the memory of a group's key.
const maxFolded = 1024

// fold appends msg to dst with its variable parts replaced by placeholders, so that the same
// error about different objects falls into one group:
//   - a double-quoted string (Kubernetes API errors quote object names) becomes "*";
//   - the line's own object name and namespace, as whole words, become <name> and <namespace>;
//   - a word that starts with a digit (counts, durations, addresses, versions) becomes <n>;
//   - a UUID becomes <uuid>; a hex string of 8 or more characters with a digit becomes <hex>;
//   - a generated name (a word with a '-' or '.' separated part that is all digits, or hex of 5
//     or more characters with a digit, such as web-7d9f8b6c4-x2x9z) becomes <name>.
//
// Words such as v1alpha1 or x509 stay as they are. The result is cut at maxFolded bytes.
func fold(dst, msg, name, namespace []byte) []byte {
	start := len(dst)
	for i := 0; i < len(msg) && len(dst)-start < maxFolded; {
		c := msg[i]
		switch {
		case c == '"':
			q := closingQuote(msg, i)
			if q < 0 {
				dst = append(dst, msg[i:]...)
				i = len(msg)
				break
			}
			dst = append(dst, foldQuoted...)
			i = q + 1
		case isWordByte(c):
			j := i + 1
			for j < len(msg) && isWordByte(msg[j]) {
				j++
			}
			// A word does not take the full stop that ends a sentence.
			for j-1 > i && msg[j-1] == '.' {
				j--
			}
			dst = append(dst, foldWord(msg[i:j], name, namespace)...)
			i = j
		default:
			dst = append(dst, c)
			i++
		}
	}
	if len(dst)-start > maxFolded {
		dst = dst[:start+maxFolded]
	}
	return dst
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
}

// foldWord returns the placeholder for word, or word itself.
func foldWord(word, name, namespace []byte) []byte {
	switch {
	case len(name) > 0 && bytes.Equal(word, name):
		return foldName
	case len(namespace) > 0 && bytes.Equal(word, namespace):
		return foldNamespace
	case word[0] >= '0' && word[0] <= '9':
		if isUUID(word) {
			return foldUUID
		}
		if len(word) >= 8 && isHexWithDigit(word) {
			return foldHex
		}
		return foldNumber
	case isUUID(word):
		return foldUUID
	case len(word) >= 8 && isHexWithDigit(word):
		return foldHex
	case isGeneratedName(word):
		return foldName
	}
	return word
}

// isUUID matches 8-4-4-4-12 hex digits.
func isUUID(b []byte) bool {
	if len(b) != 36 {
		return false
	}
	for i, c := range b {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isHexWithDigit(b []byte) bool {
	digit := false
	for _, c := range b {
		if !isHex(c) {
			return false
		}
		digit = digit || c <= '9'
	}
	return digit
}

// isGeneratedName matches a name with a part after '-' or '.' that is all digits, or hex with a
// digit and at least 5 characters: the suffixes Kubernetes and people add to names.
func isGeneratedName(word []byte) bool {
	first := true
	for len(word) > 0 {
		k := bytes.IndexAny(word, "-.")
		part := word
		if k >= 0 {
			part, word = word[:k], word[k+1:]
		} else {
			word = nil
		}
		if !first && len(part) > 0 && (isDigits(part) || len(part) >= 5 && isHexWithDigit(part)) {
			return true
		}
		first = false
	}
	return false
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}
