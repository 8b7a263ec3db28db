package loganalysis

import (
	"testing"
	"time"
)

func TestParseTS(t *testing.T) {
	at := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixNano()
	}
	tests := []struct {
		in       string
		isNumber bool
		want     int64
		wantOK   bool
	}{
		{"2026-11-30T05:02:44Z", false, at("2026-11-30T05:02:44Z"), true},
		{"2026-11-30T05:02:44.123456789Z", false, at("2026-11-30T05:02:44.123456789Z"), true},
		{"2026-11-30T05:02:44.5+02:00", false, at("2026-11-30T03:02:44.5Z"), true},
		{"2026-11-30T05:02:44.000-0130", false, at("2026-11-30T06:32:44Z"), true}, // zap's iso8601
		{"2024-02-29T00:00:00Z", false, at("2024-02-29T00:00:00Z"), true},
		{"1764478964.5", true, at("2025-11-30T05:02:44.5Z"), true},        // epoch seconds
		{"1764478964500", true, at("2025-11-30T05:02:44.5Z"), true},       // epoch millis
		{"1764478964500000000", true, at("2025-11-30T05:02:44.5Z"), true}, // epoch nanos
		{"2026-02-31T00:00:00Z", false, 0, false},
		{"2026-11-30T25:00:00Z", false, 0, false},
		{"2026-11-30T05:02:44", false, 0, false},
		{"2026-11-30T05:02:44.Z", false, 0, false},
		{"yesterday", false, 0, false},
		{"-5", true, 0, false},
		{"1e400", true, 0, false},
	}
	for _, tt := range tests {
		got, ok := parseTS([]byte(tt.in), tt.isNumber)
		if ok != tt.wantOK || (ok && got != tt.want) {
			t.Errorf("parseTS(%q, %v) = %s, %v; want %s, %v", tt.in, tt.isNumber, formatTS(got), ok, formatTS(tt.want), tt.wantOK)
		}
	}
}
