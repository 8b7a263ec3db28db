package testenv

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// script is a MetricsSource that returns its readings in turn, the last one forever.
func script(steps ...map[string]Reading) (MetricsSource, *int) {
	calls := 0
	return func(context.Context) (map[string]Reading, error) {
		step := steps[min(calls, len(steps)-1)]
		calls++
		if step == nil {
			return nil, fmt.Errorf("scrape failed")
		}
		return step, nil
	}, &calls
}

func TestQuietWait(t *testing.T) {
	busy := map[string]Reading{"a": {Reconciles: 3, Depth: 1}}
	working := map[string]Reading{"a": {Reconciles: 4, Active: 1}}
	idle4 := map[string]Reading{"a": {Reconciles: 4}}
	idle5 := map[string]Reading{"a": {Reconciles: 5}}
	other := map[string]Reading{"b": {Reconciles: 9}}
	for _, tc := range []struct {
		name      string
		q         Quiet
		steps     []map[string]Reading
		want      float64
		wantCalls int
		wantErr   string
	}{
		{name: "first quiet reading, For zero", q: Quiet{Controllers: []string{"a"}},
			steps: []map[string]Reading{idle4}, want: 4, wantCalls: 1},
		{name: "Idle waits out a queued request and a busy worker", q: Quiet{Controllers: []string{"a"}, Idle: true},
			steps: []map[string]Reading{busy, working, idle4}, want: 4, wantCalls: 3},
		{name: "AtLeast counts from Since", q: Quiet{Controllers: []string{"a"}, Since: 2, AtLeast: 3},
			steps: []map[string]Reading{idle4, idle5}, want: 5, wantCalls: 2},
		{name: "For restarts when the count moves", q: Quiet{Controllers: []string{"a"}, For: 2 * time.Millisecond},
			steps: []map[string]Reading{idle4, idle5, idle5}, want: 5, wantCalls: 3},
		{name: "a failed reading is not quiet", q: Quiet{Controllers: []string{"a"}, For: time.Millisecond},
			steps: []map[string]Reading{idle4, nil, idle4, idle4}, want: 4, wantCalls: 4},
		{name: "a controller without metrics has not started", q: Quiet{Controllers: []string{"a"}, Timeout: 5 * time.Millisecond},
			steps: []map[string]Reading{other}, wantErr: "a has no metrics"},
		{name: "timeout says what was missing", q: Quiet{Controllers: []string{"a"}, AtLeast: 5, Timeout: 5 * time.Millisecond},
			steps: []map[string]Reading{idle4}, wantErr: "4 reconciles since 0, want at least 5"},
		{name: "no controllers", q: Quiet{}, steps: []map[string]Reading{idle4}, wantErr: "no controllers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, calls := script(tc.steps...)
			q := tc.q
			// Readings one millisecond apart; For counts from the first, so it needs one more.
			q.Interval = time.Millisecond
			if q.For > 0 {
				q.Interval = q.For
			}
			got, err := q.Wait(context.Background(), from)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || *calls != tc.wantCalls {
				t.Errorf("returned %v after %d readings, want %v after %d", got, *calls, tc.want, tc.wantCalls)
			}
		})
	}
}

func TestMetricsEndpointReadsEachController(t *testing.T) {
	const exposition = `# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="myapp",result="success"} 7
controller_runtime_reconcile_total{controller="myapp",result="error"} 2
controller_runtime_reconcile_total{controller="configmapwatcher",result="success"} 1
# TYPE workqueue_depth gauge
workqueue_depth{controller="myapp",name="myapp",priority=""} 1
workqueue_depth{controller="myapp",name="myapp",priority="-100"} 2
# TYPE controller_runtime_active_workers gauge
controller_runtime_active_workers{controller="configmapwatcher"} 1
# TYPE go_goroutines gauge
go_goroutines 40
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, exposition)
	}))
	defer srv.Close()
	got, err := MetricsEndpoint(srv.URL)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Reading{"myapp": {Reconciles: 9, Depth: 3}, "configmapwatcher": {Reconciles: 1, Active: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readings (-want +got):\n%s", diff)
	}
}
