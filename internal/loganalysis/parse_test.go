package loganalysis

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fields is Line as strings, for readable comparisons; absent keys are "<nil>".
type fields struct {
	Level, TS, Msg, Controller, Namespace, Name, ReconcileID, Error, Result, Duration string
	TSNumber                                                                          bool
}

func toFields(l *Line) fields {
	s := func(b []byte) string {
		if b == nil {
			return "<nil>"
		}
		return string(b)
	}
	return fields{s(l.Level), s(l.TS), s(l.Msg), s(l.Controller), s(l.Namespace), s(l.Name), s(l.ReconcileID),
		s(l.Error), s(l.Result), s(l.Duration), l.tsNumber}
}

// basic returns the fields of a line with only level, ts and msg.
func basic(msg string) fields {
	return fields{"info", "2026-11-30T05:02:44Z", msg, "<nil>", "<nil>", "<nil>", "<nil>", "<nil>", "<nil>", "<nil>", false}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    fields
		wantErr error
	}{{
		name: "controller-runtime reconciler error",
		line: `{"level":"error","ts":"2026-11-30T05:02:44Z","msg":"Reconciler error","controller":"myapp","controllerGroup":"app.example.com","controllerKind":"MyApp","MyApp":{"name":"web","namespace":"ns"},"namespace":"ns","name":"web","reconcileID":"a28f","error":"updating status: boom"}`,
		want: fields{"error", "2026-11-30T05:02:44Z", "Reconciler error", "myapp", "ns", "web", "a28f", "updating status: boom", "<nil>", "<nil>", false},
	}, {
		name: "reconcile end, line ending and spaces",
		line: " { \"level\" : \"debug\" , \"ts\":\"2026-11-30T05:02:44Z\",\"msg\":\"Reconcile finished\",\"durationMs\": 12.5 ,\"result\":\"success\" }\r\n",
		want: fields{"debug", "2026-11-30T05:02:44Z", "Reconcile finished", "<nil>", "<nil>", "<nil>", "<nil>", "<nil>", "success", "12.5", false},
	}, {
		name: "escapes are decoded",
		line: `{"level":"info","ts":"2026-11-30T05:02:44Z","msg":"q\"uote\\ \/ \n\t\u00e9 \ud83d\ude00 \ud83d"}`,
		want: basic("q\"uote\\ / \n\té 😀 \uFFFD"),
	}, {
		name: "an escaped key is matched by its value",
		line: `{"level":"info","ts":"2026-11-30T05:02:44Z","msg":"m","na\u006de":"web"}`,
		want: func() fields { f := basic("m"); f.Name = "web"; return f }(),
	}, {
		name: "skipped values may hold quotes, braces and brackets",
		line: `{"level":"info","ts":"2026-11-30T05:02:44Z","x":{"a":"}\"{","b":[1,{"c":"]"}]},"y":[],"z":-1.5e3,"t":true,"f":false,"n":null,"msg":"m"}`,
		want: basic("m"),
	}, {
		name: "a later duplicate key wins, as in encoding/json",
		line: `{"level":"info","ts":"2026-11-30T05:02:44Z","msg":"first","msg":"second"}`,
		want: basic("second"),
	}, {
		name: "a non-string value of a known key is kept raw",
		line: `{"level":"info","ts":1.7645e9,"msg":"m","name":null,"durationMs":3}`,
		want: fields{"info", "1.7645e9", "m", "<nil>", "<nil>", "null", "<nil>", "<nil>", "<nil>", "3", true},
	}, {
		name: "a string with an escaped backslash before its closing quote",
		line: `{"level":"info","ts":"2026-11-30T05:02:44Z","msg":"ends with \\"}`,
		want: basic(`ends with \`),
	},
		{name: "plain text", line: `I1130 05:02:44.123456 1 leaderelection.go:257] attempting`, wantErr: errNotJSON},
		{name: "empty object", line: `{}`, wantErr: errIncomplete},
		{name: "no msg", line: `{"level":"info","ts":"2026-11-30T05:02:44Z"}`, wantErr: errIncomplete},
		{name: "truncated", line: `{"level":"info","ts":"2026-11-30T05:02:44Z","msg":"cut`, wantErr: errNotJSON},
		{name: "truncated after a value", line: `{"level":"info"`, wantErr: errNotJSON},
		{name: "no colon", line: `{"level" "info"}`, wantErr: errNotJSON},
		{name: "key not a string", line: `{level:"info"}`, wantErr: errNotJSON},
		{name: "trailing garbage", line: `{"level":"info","ts":"t","msg":"m"} x`, wantErr: errNotJSON},
		{name: "bad escape", line: `{"level":"info","ts":"t","msg":"\x"}`, wantErr: errNotJSON},
		{name: "short unicode escape", line: `{"level":"info","ts":"t","msg":"\u12"}`, wantErr: errNotJSON},
		{name: "bad literal", line: `{"level":"info","ts":"t","msg":"m","x":tru}`, wantErr: errNotJSON},
		{name: "unclosed object value", line: `{"level":"info","ts":"t","msg":"m","x":{"a":1}`, wantErr: errNotJSON},
		{name: "missing value", line: `{"level":"info","msg":}`, wantErr: errNotJSON},
		{name: "array, not object", line: `["level","info"]`, wantErr: errNotJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Parser
			var l Line
			err := p.Parse([]byte(tt.line), &l)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Parse error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, toFields(&l)); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	line := []byte(`{"level":"debug","ts":"2026-11-30T05:02:44Z","msg":"Reconcile finished","controller":"myapp","MyApp":{"name":"web","namespace":"ns"},"namespace":"ns","name":"web","reconcileID":"a28f","durationMs":1.5,"result":"success","error":"with \"escapes\""}`)
	var p Parser
	var l Line
	allocs := testing.AllocsPerRun(100, func() {
		if err := p.Parse(line, &l); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Parse allocates %v times per line, want 0", allocs)
	}
}
