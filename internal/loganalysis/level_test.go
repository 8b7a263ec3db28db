package loganalysis

import "testing"

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in     string
		want   int
		wantOK bool
	}{
		{"debug", -1, true}, {"info", 0, true}, {"warn", 1, true}, {"error", 2, true}, {"dpanic", 3, true},
		{"panic", 4, true}, {"fatal", 5, true}, {"INFO", 0, true}, {"Level(-2)", -2, true}, {"level(-5)", -5, true},
		{"", 0, false}, {"verbose", 0, false}, {"Level(x)", 0, false}, {"Level(-999)", 0, false}, {"Level()", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseLevel([]byte(tt.in))
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseLevel(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}
