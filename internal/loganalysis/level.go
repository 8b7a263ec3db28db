package loganalysis

import (
	"bytes"
	"strconv"
)

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
