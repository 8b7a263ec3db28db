package reconcilelog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/example/switchboard/internal/loganalysis"
)

// fixed is a reconciler that returns what it is told to.
type fixed struct {
	result reconcile.Result
	err    error
}

func (f fixed) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	return f.result, f.err
}

func TestWrapLogsOneLinePerReconcile(t *testing.T) {
	boom := errors.New("updating status: boom")
	tests := []struct {
		name   string
		inner  fixed
		wantKV map[string]any
	}{
		{"success", fixed{}, map[string]any{"result": "success"}},
		{"requeue after", fixed{result: reconcile.Result{RequeueAfter: time.Minute}},
			map[string]any{"result": "requeue-after", "requeueAfter": "1m0s"}},
		{"requeue", fixed{result: reconcile.Result{Requeue: true}}, map[string]any{"result": "requeue"}}, //nolint:staticcheck // A reconciler of another project may still return it.
		{"error", fixed{err: boom}, map[string]any{"result": "error"}},
		{"error wins over requeue after", fixed{result: reconcile.Result{RequeueAfter: time.Minute}, err: boom},
			map[string]any{"result": "error"}},
		{"terminal error", fixed{err: reconcile.TerminalError(boom)}, map[string]any{"result": "terminal-error"}},
		{"wrapped terminal error", fixed{err: fmt.Errorf("validating spec: %w", reconcile.TerminalError(boom))},
			map[string]any{"result": "terminal-error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			ctx := log.IntoContext(context.Background(), zap.New(zap.WriteTo(&buf), zap.Level(zapcore.DebugLevel)).
				WithValues("controller", "myapp", "namespace", "ns", "name", "web", "reconcileID", "id-1"))
			r := Wrap[reconcile.Request](tt.inner).(*reconciler[reconcile.Request])
			clock := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
			r.now = func() time.Time {
				clock = clock.Add(1500 * time.Microsecond)
				return clock
			}

			result, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "web"}})

			if result != tt.inner.result || err != tt.inner.err { // the very same error must come back, not a wrapped one
				t.Errorf("Reconcile returned (%+v, %v), want the wrapped reconciler's (%+v, %v)", result, err, tt.inner.result, tt.inner.err)
			}
			lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
			if len(lines) != 1 {
				t.Fatalf("got %d log lines, want 1:\n%s", len(lines), buf.String())
			}
			var got map[string]any
			if err := json.Unmarshal(lines[0], &got); err != nil {
				t.Fatalf("log line is not JSON: %v\n%s", err, lines[0])
			}
			delete(got, "ts")
			want := map[string]any{"level": "debug", "msg": "Reconcile finished", "controller": "myapp",
				"namespace": "ns", "name": "web", "reconcileID": "id-1", "durationMs": 1.5}
			for k, v := range tt.wantKV {
				want[k] = v
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("log line (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWrapLogsNothingAtInfoLevel(t *testing.T) {
	var buf bytes.Buffer
	ctx := log.IntoContext(context.Background(), zap.New(zap.WriteTo(&buf), zap.Level(zapcore.InfoLevel)))
	boom := errors.New("boom")

	_, err := Wrap[reconcile.Request](fixed{err: boom}).Reconcile(ctx, reconcile.Request{})

	if !errors.Is(err, boom) {
		t.Errorf("Reconcile returned %v, want %v", err, boom)
	}
	if buf.Len() != 0 {
		t.Errorf("logged at info level:\n%s", buf.String())
	}
}

// TestAnalyzerReadsTheLines checks the contract with `manager logs`: the analyzer counts the
// wrapper's lines as reconciles, with their results and durations.
func TestAnalyzerReadsTheLines(t *testing.T) {
	var lines bytes.Buffer
	logger := zap.New(zap.WriteTo(&lines), zap.Level(zapcore.DebugLevel))
	for i, inner := range []fixed{{}, {result: reconcile.Result{RequeueAfter: time.Second}}, {err: errors.New("boom")},
		{err: reconcile.TerminalError(errors.New("bad spec"))}} {
		ctx := log.IntoContext(context.Background(), logger.WithValues("controller", "myapp", "namespace", "ns",
			"name", "web", "reconcileID", fmt.Sprint(i)))
		_, _ = Wrap[reconcile.Request](inner).Reconcile(ctx, reconcile.Request{})
	}
	var out, errOut bytes.Buffer
	if code := loganalysis.Main([]string{"summary", "--output", "json"}, &lines, &out, &errOut); code != 0 {
		t.Fatalf("manager logs summary: exit status %d: %s", code, errOut.String())
	}
	var report loganalysis.Report
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Controllers) != 1 || report.Controllers[0].Reconciles == nil {
		t.Fatalf("the analyzer found no reconciles in:\n%s", lines.String())
	}
	want := map[string]uint64{ResultSuccess: 1, ResultRequeueAfter: 1, ResultError: 1, ResultTerminalError: 1}
	if diff := cmp.Diff(want, report.Controllers[0].Results); diff != "" {
		t.Errorf("results the analyzer counted (-want +got):\n%s", diff)
	}
}
