package controllers_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/example/switchboard/internal/testenv"
)

// failingDiscovery answers the first fail requests for the API server's discovery documents
// (/api and /apis) with a 503, as an API server that restarts or sheds load does, and counts
// those requests.
type failingDiscovery struct {
	next http.RoundTripper
	fail int

	mu    sync.Mutex
	asked int
}

func (d *failingDiscovery) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path != "/api" && r.URL.Path != "/apis" {
		return d.next.RoundTrip(r)
	}
	d.mu.Lock()
	d.asked++
	failing := d.asked <= d.fail
	d.mu.Unlock()
	if !failing {
		return d.next.RoundTrip(r)
	}
	body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by the test","reason":"ServiceUnavailable","code":503}`
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Request: r,
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}, nil
}

// TestStartRidesOutFailingDiscovery: the cache's informers and indexes find their kinds through
// the API server's discovery, read once at start; a 503 on that one read used to stop the
// manager before it served a probe. Now it is retried (transient.StartBackoff), and the manager
// starts.
func TestStartRidesOutFailingDiscovery(t *testing.T) {
	discovery := &failingDiscovery{fail: 2}
	m := env.StartReplica(t, testenv.Replica{WrapTransport: func(next http.RoundTripper) http.RoundTripper {
		discovery.next = next
		return discovery
	}}, "--controllers=myapp,verticalscaler", "--usage-source=off")
	if !m.GetCache().WaitForCacheSync(t.Context()) {
		t.Fatal("cache did not sync")
	}
	discovery.mu.Lock()
	defer discovery.mu.Unlock()
	if discovery.asked <= discovery.fail {
		t.Errorf("discovery asked %d times, %d of them failed: the start went on without it", discovery.asked, discovery.fail)
	}
}

// TestManagerStopsWhenAnIdleControllerMayRun: a manager that started without the VPA's CRD
// leaves the verticalpodautoscaler idle; once the CRD is installed, its next look stops it with
// an error that says so, for its restart to run the controller.
func TestManagerStopsWhenAnIdleControllerMayRun(t *testing.T) {
	own := testenv.StartForTest(t)
	m := own.StartReplica(t, testenv.Replica{}, "--controllers=verticalscaler", "--usage-source=off", "--idle-recheck-interval=200ms")
	if !m.GetCache().WaitForCacheSync(t.Context()) {
		t.Fatal("cache did not sync")
	}
	time.Sleep(time.Second)
	if err := m.Err(); err != nil {
		t.Fatalf("the manager stopped before the CRD was installed: %v", err)
	}
	own.InstallVPACRDs(t)
	want := "controller verticalpodautoscaler was idle at start (the API server does not serve autoscaling.k8s.io/v1 VerticalPodAutoscaler"
	deadline := time.Now().Add(30 * time.Second)
	for m.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if err := m.Err(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("the manager's error = %v, want one containing %q", err, want)
	}
}
