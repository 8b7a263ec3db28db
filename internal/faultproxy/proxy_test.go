package faultproxy

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/client-go/rest"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		method, url, contentType string
		want                     Request
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/app", "", Request{Verb: "get", Resource: "configmaps", Namespace: "ns", Name: "app"}},
		{"GET", "/api/v1/namespaces/ns/configmaps?limit=500", "", Request{Verb: "list", Resource: "configmaps", Namespace: "ns"}},
		{"GET", "/apis/apps/v1/deployments?watch=true&resourceVersion=7", "", Request{Verb: "watch", Group: "apps", Resource: "deployments"}},
		{"GET", "/api/v1/watch/namespaces/ns/pods", "", Request{Verb: "watch", Resource: "pods", Namespace: "ns"}},
		{"POST", "/apis/events.k8s.io/v1/namespaces/ns/events", "application/json", Request{Verb: "create", Group: "events.k8s.io", Resource: "events", Namespace: "ns"}},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/sys/leases/switchboard-myapp", "application/json",
			Request{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: "sys", Name: "switchboard-myapp"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/web?fieldManager=myapp&force=true", "application/apply-patch+yaml",
			Request{Verb: "apply", Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web", FieldManager: "myapp"}},
		{"PATCH", "/apis/app.example.com/v1alpha1/namespaces/ns/myapps/web/status", "application/merge-patch+json",
			Request{Verb: "patch", Group: "app.example.com", Resource: "myapps", Subresource: "status", Namespace: "ns", Name: "web"}},
		{"DELETE", "/api/v1/namespaces/ns/pods/p", "", Request{Verb: "delete", Resource: "pods", Namespace: "ns", Name: "p"}},
		{"DELETE", "/api/v1/namespaces/ns/pods", "", Request{Verb: "deletecollection", Resource: "pods", Namespace: "ns"}},
		{"GET", "/api/v1/namespaces/ns", "", Request{Verb: "get", Resource: "namespaces", Name: "ns"}},
		{"PUT", "/api/v1/namespaces/ns/finalize", "application/json", Request{Verb: "update", Resource: "namespaces", Name: "ns", Subresource: "finalize"}},
		{"GET", "/apis", "", Request{Verb: "get"}},
		{"GET", "/version", "", Request{Verb: "get"}},
	} {
		r := httptest.NewRequest(tc.method, tc.url, nil)
		r.Header.Set("Content-Type", tc.contentType)
		if diff := cmp.Diff(tc.want, ParseRequest(r)); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tc.method, tc.url, diff)
		}
	}
}

func startFakeAPIServer(t *testing.T) *FakeAPIServer {
	t.Helper()
	f := StartFakeAPIServer()
	t.Cleanup(f.Close)
	return f
}

// startProxy starts a proxy to f and returns it with an HTTP client that talks to it as a
// manager would: HTTP/2, the proxy's CA, no credentials.
func startProxy(t *testing.T, f *FakeAPIServer) (*Proxy, *http.Client) {
	t.Helper()
	p, err := Start(Options{Name: "replica-0", Seed: 1, Upstream: f.Config()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	transport, err := rest.TransportFor(p.ClientConfig(p.Address()))
	if err != nil {
		t.Fatal(err)
	}
	return p, &http.Client{Transport: transport}
}

func do(t *testing.T, c *http.Client, p *Proxy, method, path, contentType, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, "https://"+p.Address()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer what-the-client-had")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(data)
}

func TestProxyForwardsAsItsUpstreamUserAndRecordsWrites(t *testing.T) {
	f := startFakeAPIServer(t)
	p, c := startProxy(t, f)
	if resp, _ := do(t, c, p, "GET", "/api/v1/namespaces/ns/configmaps/app", "", ""); resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("GET through the proxy: %s over HTTP/%d, want 200 over HTTP/2", resp.Status, resp.ProtoMajor)
	}
	before := time.Now()
	resp, body := do(t, c, p, "PUT", "/apis/coordination.k8s.io/v1/namespaces/sys/leases/switchboard-myapp", "application/json",
		`{"spec":{"holderIdentity":"pod-a_1234"}}`)
	if resp.StatusCode != 200 || !strings.Contains(body, "pod-a_1234") {
		t.Fatalf("Lease update: %s %s", resp.Status, body)
	}
	do(t, c, p, "PATCH", "/apis/apps/v1/namespaces/ns/deployments/web?fieldManager=myapp&force=true", "application/apply-patch+yaml", `{}`)
	if f.Unauthorized.Load() != 0 {
		t.Errorf("%d requests reached the API server without the upstream user's token", f.Unauthorized.Load())
	}
	writes := p.Writes()
	want := []Write{
		{Client: "replica-0", Code: 200, ResourceVersion: "42", Holder: "pod-a_1234", Request: Request{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: "sys", Name: "switchboard-myapp"}},
		{Client: "replica-0", Code: 200, ResourceVersion: "7", Request: Request{Verb: "apply", Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web", FieldManager: "myapp"}},
	}
	if diff := cmp.Diff(want, writes, cmpopts.IgnoreFields(Write{}, "Sent", "Answered")); diff != "" {
		t.Errorf("writes recorded (-want +got):\n%s", diff)
	}
	for _, w := range writes {
		if w.Sent.Before(before) || w.Answered.Before(w.Sent) {
			t.Errorf("%s: sent %v, answered %v, after %v", w.Object(), w.Sent, w.Answered, before)
		}
	}
	if s := p.Stats(); s.Requests != 3 || s.Writes != 2 || s.Injected() != 0 {
		t.Errorf("stats %+v, want 3 requests, 2 writes, nothing injected", s)
	}
}

func TestProxyAnswersTheSharesAsked(t *testing.T) {
	f := startFakeAPIServer(t)
	p, c := startProxy(t, f)
	if err := p.SetFaults(Faults{TooManyRequests: 0.2, RetryAfter: 2 * time.Second, InternalError: 0.1, Unavailable: 0.1}); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	codes := map[int]int{}
	for range n {
		resp, body := do(t, c, p, "GET", "/api/v1/namespaces/ns/configmaps/app", "", "")
		codes[resp.StatusCode]++
		if resp.StatusCode == 429 && (resp.Header.Get("Retry-After") != "2" || !strings.Contains(body, `"reason":"TooManyRequests"`)) {
			t.Fatalf("a 429 with Retry-After %q and body %s, want 2 and the reason TooManyRequests", resp.Header.Get("Retry-After"), body)
		}
		if resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "" {
			t.Fatalf("a 503 with a Retry-After %q: client-go would retry it itself", resp.Header.Get("Retry-After"))
		}
	}
	for code, share := range map[int]float64{429: 0.2, 500: 0.1, 503: 0.1, 200: 0.6} {
		if got := float64(codes[code]) / n; got < share-0.03 || got > share+0.03 {
			t.Errorf("%d answered %d times of %d (%.3f), want a share of %.2f", code, codes[code], n, got, share)
		}
	}
	if got := f.Requests.Load(); got != int64(codes[200]) {
		t.Errorf("the API server got %d requests, want the %d the proxy forwarded", got, codes[200])
	}
	s := p.Stats()
	if s.TooManyRequests != int64(codes[429]) || s.InternalErrors != int64(codes[500]) || s.Unavailable != int64(codes[503]) {
		t.Errorf("stats %+v, want the answers %v", s, codes)
	}
}

// fixed is a distribution that always draws the same duration.
type fixed time.Duration

func (d fixed) Sample(*rand.Rand) time.Duration { return time.Duration(d) }

func TestProxyDropsARequestWhoseClientGaveUpDuringItsLatency(t *testing.T) {
	f := startFakeAPIServer(t)
	p, c := startProxy(t, f)
	if err := p.SetFaults(Faults{Latency: fixed(5 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "PUT", "https://"+p.Address()+"/apis/coordination.k8s.io/v1/namespaces/sys/leases/l", strings.NewReader("{}"))
	if _, err := c.Do(req); err == nil {
		t.Fatal("the request came back before its latency")
	}
	time.Sleep(200 * time.Millisecond)
	if got := f.Requests.Load(); got != 0 {
		t.Errorf("the API server got %d requests; the client gave up before the latency ended", got)
	}
	if s := p.Stats(); s.Abandoned != 1 || len(p.Writes()) != 0 {
		t.Errorf("stats %+v and writes %v, want one abandoned request and no write", s, p.Writes())
	}
}

func TestProxyCutsWatches(t *testing.T) {
	f := startFakeAPIServer(t)
	p, c := startProxy(t, f)
	if err := p.SetFaults(Faults{WatchCut: 400 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	req, _ := http.NewRequest("GET", "https://"+p.Address()+"/api/v1/namespaces/ns/configmaps?watch=true", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if p.Stats().OpenWatches != 1 {
		t.Errorf("open watches %d, want 1", p.Stats().OpenWatches)
	}
	lines, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lasted := time.Since(began)
	if lasted < 200*time.Millisecond || lasted > 2*time.Second {
		t.Errorf("the watch lasted %s, want between 200ms and 400ms (and some slack)", lasted)
	}
	if !strings.Contains(string(lines), "BOOKMARK") {
		t.Errorf("the watch streamed %q, want the API server's events", lines)
	}
	testPoll(t, func() bool { return f.WatchesEnded.Load() == 1 && p.Stats().OpenWatches == 0 })
	if s := p.Stats(); s.Watches != 1 || s.WatchesCut != 1 {
		t.Errorf("stats %+v, want one watch, cut", s)
	}
}

func testPoll(t *testing.T, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !done(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not done after 5s")
		}
	}
}

func TestLogNormal(t *testing.T) {
	d := LogNormal{Median: 20 * time.Millisecond, P99: 500 * time.Millisecond}
	r := rand.New(rand.NewPCG(1, 2))
	samples := make([]time.Duration, 20000)
	for i := range samples {
		samples[i] = d.Sample(r)
	}
	slices.Sort(samples)
	median, p99 := samples[len(samples)/2], samples[len(samples)*99/100]
	if median < 19*time.Millisecond || median > 21*time.Millisecond || p99 < 450*time.Millisecond || p99 > 550*time.Millisecond {
		t.Errorf("median %s and p99 %s of 20000 samples, want about %s and %s", median, p99, d.Median, d.P99)
	}
	if top := samples[len(samples)-1]; top > 5*time.Second {
		t.Errorf("a sample of %s, above the default cut at ten times the p99", top)
	}
}

func TestFaultsValidate(t *testing.T) {
	for _, f := range []Faults{{TooManyRequests: -0.1}, {InternalError: 1.5}, {TooManyRequests: 0.6, Unavailable: 0.6}, {WatchCut: -time.Second}} {
		if f.Validate() == nil {
			t.Errorf("%+v is valid, want an error", f)
		}
	}
	if err := (Faults{TooManyRequests: 0.5, InternalError: 0.25, Unavailable: 0.25}).Validate(); err != nil {
		t.Errorf("shares adding up to 1: %v", err)
	}
}
