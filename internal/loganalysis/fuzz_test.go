package loganalysis

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks that the line parser never panics, and that on any valid JSON object it
// finds the same values as encoding/json. Seeds: the lines below and
// testdata/fuzz/FuzzParse; run with `go test ./internal/loganalysis/ -run '^$' -fuzz FuzzParse`.
func FuzzParse(f *testing.F) {
	for _, line := range []string{
		`{"level":"error","ts":"2026-11-30T05:02:44Z","msg":"Reconciler error","controller":"myapp","controllerGroup":"app.example.com","controllerKind":"MyApp","MyApp":{"name":"web","namespace":"ns"},"namespace":"ns","name":"web","reconcileID":"a28f","error":"updating status: \"x\""}`,
		`{"level":"debug","ts":1764478964.5,"msg":"Reconcile finished","durationMs":1.5e0,"result":"success"}`,
		`{"msg":"\ud83d\ude00 \ud83d \\\" \u00e9","level":"Level(-2)","ts":"2026-11-30T05:02:44.1+01:00","x":[{"y":"]}"},null,true]}`,
		`{ "level" : "info" , "ts" : "t" , "msg" : "" }`,
		`{}`,
		`plain text`,
		`{"level":"info","ts":"t","msg":"cut`,
	} {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var p Parser
		var l Line
		err := p.Parse(line, &l)

		var m map[string]json.RawMessage
		if !utf8.Valid(line) || json.Unmarshal(line, &m) != nil || m == nil {
			return
		}
		if errors.Is(err, errNotJSON) {
			t.Fatalf("a valid JSON object was rejected: %q", line)
		}
		if err != nil { // incomplete: the line has no level, ts or msg, so no values to compare
			return
		}
		for key, got := range map[string][]byte{"level": l.Level, "ts": l.TS, "msg": l.Msg, "controller": l.Controller,
			"namespace": l.Namespace, "name": l.Name, "reconcileID": l.ReconcileID, "error": l.Error, "result": l.Result,
			"durationMs": l.Duration} {
			raw, ok := m[key]
			if !ok {
				if got != nil {
					t.Errorf("%s: got %q, but the line has no such key: %q", key, got, line)
				}
				continue
			}
			want := string(raw)
			var s string
			if json.Unmarshal(raw, &s) == nil {
				want = s
			}
			if string(got) != want {
				t.Errorf("%s: got %q, encoding/json %q, in %q", key, got, want, line)
			}
		}
	})
}
