package loganalysis

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var now = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args       []string
		wantStderr string
	}{
		{nil, "Usage:"},
		{[]string{"tail"}, `unknown command "tail"`},
		{[]string{"summary", "--output", "yaml"}, `--output "yaml": want table or json`},
		{[]string{"summary", "--top", "-1"}, "--top -1: want 0 to 1000"},
		{[]string{"summary", "--since", "last tuesday"}, `--since "last tuesday": want an RFC 3339 time`},
		{[]string{"summary", "--until", "-5m"}, `--until "-5m"`},
		{[]string{"summary", "--since", "2026-11-30T05:00:00Z", "--until", "2026-11-30T04:00:00Z"}, "is before --since"},
		{[]string{"summary", "--level", "loud"}, `--level "loud": want debug, info`},
		{[]string{"summary", "--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"trace"}, "want NAMESPACE/NAME or --reconcile-id ID"},
		{[]string{"trace", "a/b/c"}, `"a/b/c": want NAMESPACE/NAME`},
		{[]string{"trace", "ns/"}, `"ns/": want NAMESPACE/NAME`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader(""), &stdout, &stderr, now)
			if code != exitUsage || !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("exit status %d, stderr:\n%s\nwant %d and stderr containing %q", code, stderr.String(), exitUsage, tt.wantStderr)
			}
		})
	}
}

// runOK runs the command and fails the test unless it exits 0.
func runOK(t *testing.T, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(args, strings.NewReader(stdin), &out, &errOut, now); code != exitOK {
		t.Fatalf("%v: exit status %d, stderr:\n%s", args, code, errOut.String())
	}
	return out.String(), errOut.String()
}

func TestGzipInputGivesTheSameSummary(t *testing.T) {
	plain, err := os.ReadFile(captures(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gz := filepath.Join(dir, "manager.log.gz")
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gz, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fromPlain, _ := runOK(t, string(plain), "summary") // stdin
	fromGzip, _ := runOK(t, "", "summary", gz)
	fromGzipStdin, _ := runOK(t, buf.String(), "summary", "-")
	if diff := cmp.Diff(fromPlain, fromGzip); diff != "" {
		t.Errorf("gzip file vs plain stdin (-plain +gzip):\n%s", diff)
	}
	if diff := cmp.Diff(fromPlain, fromGzipStdin); diff != "" {
		t.Errorf("gzip stdin vs plain stdin (-plain +gzip):\n%s", diff)
	}
}

func TestUnreadableInputIsReportedAndTheRestSummarised(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.log")
	if err := os.WriteFile(good, []byte(`{"level":"info","ts":"2026-11-30T05:00:00Z","msg":"m","controller":"a"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.log.gz")
	if err := os.WriteFile(corrupt, []byte{0x1f, 0x8b, 0, 0, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.log")
	var stdout, stderr bytes.Buffer
	code := run([]string{"summary", missing, corrupt, good}, nil, &stdout, &stderr, now)
	if code != exitError {
		t.Errorf("exit status %d, want %d", code, exitError)
	}
	for _, want := range []string{missing + ": open", corrupt + ": reading gzip"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
	if !strings.Contains(stdout.String(), "Lines: 1 read, 1 used") {
		t.Errorf("the readable file was not summarised:\n%s", stdout.String())
	}
}

func TestLongAndBrokenLinesAreCountedNotFatal(t *testing.T) {
	good := `{"level":"info","ts":"2026-11-30T05:00:00Z","msg":"m","controller":"a"}`
	input := strings.Join([]string{
		good,
		`{"level":"info","ts":"2026-11-30T05:00:00Z","msg":"` + strings.Repeat("x", 2*maxLine) + `"}`,
		"panic: runtime error: index out of range",
		"",
		`{"level":"info","msg":"no time"}`,
		`{"level":"info","ts":"not a time","msg":"m"}`,
		`{"level":"loud","ts":"2026-11-30T05:00:00Z","msg":"m"}`,
		good, // after the long line, in the same read buffer
	}, "\r\n")
	out, _ := runOK(t, input, "summary", "--output", "json")
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	want := Counts{Read: 6, Used: 2, NotJSON: 1, Incomplete: 3, TooLong: 1}
	if diff := cmp.Diff(want, r.Lines); diff != "" {
		t.Errorf("line counts (-want +got):\n%s", diff)
	}
}

func TestFlagsAfterArguments(t *testing.T) {
	file := captures(t)[0]
	before, _ := runOK(t, "", "summary", "--output", "json", "--controller", "myapp", file)
	after, _ := runOK(t, "", "summary", file, "--output=json", "--controller=myapp")
	if before != after || !strings.HasPrefix(before, "{") {
		t.Errorf("flags after the file gave a different output:\n%s\nvs\n%s", before, after)
	}
}

const traceLog = `{"level":"info","ts":"2026-11-30T05:00:00Z","logger":"setup","msg":"Starting manager"}
{"level":"debug","ts":"2026-11-30T05:00:01Z","msg":"Updating status","controller":"myapp","controllerGroup":"app.example.com","controllerKind":"MyApp","MyApp":{"name":"web","namespace":"shop"},"namespace":"shop","name":"web","reconcileID":"r1","diff":"  Status{\n-  Phase: \"\",\n+  Phase: \"Pending\",\n  }\n"}
{"level":"info","ts":"2026-11-30T05:00:01Z","msg":"Created Deployment","controller":"myapp","controllerGroup":"app.example.com","controllerKind":"MyApp","MyApp":{"name":"api","namespace":"shop"},"namespace":"shop","name":"api","reconcileID":"r2","fieldManager":"myapp"}
not JSON
{"level":"error","ts":"2026-11-30T05:00:02Z","msg":"Reconciler error","controller":"myapp","controllerGroup":"app.example.com","controllerKind":"MyApp","MyApp":{"name":"web","namespace":"shop"},"namespace":"shop","name":"web","reconcileID":"r1","error":"updating status: boom"}
{"level":"debug","ts":"2026-11-30T05:00:02Z","msg":"Reconcile finished","controller":"myapp","namespace":"shop","name":"web","reconcileID":"r1","durationMs":1.5,"result":"error"}
{"level":"info","ts":"2026-11-30T05:00:03Z","msg":"Rolled Deployment","controller":"configmapwatcher","controllerKind":"Deployment","Deployment":{"name":"web","namespace":"shop"},"namespace":"shop","name":"web","reconcileID":"r3","hash":"abc"}
{"level":"info","ts":"2026-11-30T05:00:04Z","msg":"Cluster-scoped","name":"web"}
`

func TestTrace(t *testing.T) {
	tests := []struct {
		args                   []string
		wantStdout, wantStderr string
	}{{
		args: []string{"shop/web"},
		wantStdout: `2026-11-30T05:00:01Z DEBUG myapp shop/web r1 Updating status
    diff:
          Status{
        -  Phase: "",
        +  Phase: "Pending",
          }
2026-11-30T05:00:02Z ERROR myapp shop/web r1 Reconciler error
    error: updating status: boom
2026-11-30T05:00:02Z DEBUG myapp shop/web r1 Reconcile finished
    durationMs: 1.5
    result: error
2026-11-30T05:00:03Z INFO configmapwatcher shop/web r3 Rolled Deployment
    hash: abc
`,
		wantStderr: "4 lines matched of 8 read (1 not JSON, 0 without level/ts/msg, 0 longer than 1048576 bytes, 0 filtered out)\n",
	}, {
		args: []string{"--controller", "configmapwatcher", "shop/web"},
		wantStdout: `2026-11-30T05:00:03Z INFO configmapwatcher shop/web r3 Rolled Deployment
    hash: abc
`,
		wantStderr: "1 lines matched of 8 read (1 not JSON, 0 without level/ts/msg, 0 longer than 1048576 bytes, 6 filtered out)\n",
	}, {
		args: []string{"--reconcile-id", "r2"},
		wantStdout: `2026-11-30T05:00:01Z INFO myapp shop/api r2 Created Deployment
    fieldManager: myapp
`,
		wantStderr: "1 lines matched of 8 read (1 not JSON, 0 without level/ts/msg, 0 longer than 1048576 bytes, 0 filtered out)\n",
	}, {
		args: []string{"web", "--level=info"},
		wantStdout: `2026-11-30T05:00:04Z INFO - web - Cluster-scoped
`,
		wantStderr: "1 lines matched of 8 read (1 not JSON, 0 without level/ts/msg, 0 longer than 1048576 bytes, 2 filtered out)\n",
	}}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			stdout, stderr := runOK(t, traceLog, append([]string{"trace"}, tt.args...)...)
			if diff := cmp.Diff(tt.wantStdout, stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStderr, stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTraceFormatsEpochTimes(t *testing.T) {
	stdout, _ := runOK(t, `{"level":"info","ts":1764478964.5,"msg":"Created Deployment","namespace":"shop","name":"web"}`,
		"trace", "shop/web")
	if want := "2025-11-30T05:02:44.5Z INFO - shop/web - Created Deployment\n"; stdout != want {
		t.Errorf("trace printed %q, want %q", stdout, want)
	}
}
