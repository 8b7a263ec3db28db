package configmapwatcher

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestNotifierRetriesThenDrops: a failing endpoint is tried webhookAttempts times, then the
// notification is dropped and counted; the next one, answered, is sent. Notifications beyond
// the queue are dropped at once and counted, and notify never blocks.
func TestNotifierRetriesThenDrops(t *testing.T) {
	var calls atomic.Int32
	var mu sync.Mutex
	var bodies []string
	fail := atomic.Bool{}
	fail.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		data, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(data))
		mu.Unlock()
		if fail.Load() {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	n := newNotifier(WebhookSettings{URL: srv.URL, Format: WebhookFormatJSON}, logr.Discard())
	n.backoff = time.Millisecond
	sent, dropped := testutil.ToFloat64(webhookTotal.WithLabelValues("sent")), testutil.ToFloat64(webhookTotal.WithLabelValues("dropped"))
	note := notificationOf("Deployment", "ns", "web", "rolled", []sourceChange{{Source: "Secret/db", Change: changeChanged, Changed: []string{"password"}}}, time.Unix(0, 0))
	n.post(context.Background(), note)
	if got := calls.Load(); got != webhookAttempts {
		t.Errorf("%d attempts, want %d", got, webhookAttempts)
	}
	if got := testutil.ToFloat64(webhookTotal.WithLabelValues("dropped")) - dropped; got != 1 {
		t.Errorf("dropped counter moved by %v, want 1", got)
	}
	fail.Store(false)
	n.post(context.Background(), note)
	if got := testutil.ToFloat64(webhookTotal.WithLabelValues("sent")) - sent; got != 1 {
		t.Errorf("sent counter moved by %v, want 1", got)
	}
	var got Notification
	if err := json.Unmarshal([]byte(bodies[len(bodies)-1]), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(note, got); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}

	// Nobody posts: the queue fills, and what does not fit is dropped at once.
	dropped = testutil.ToFloat64(webhookTotal.WithLabelValues("dropped"))
	done := make(chan struct{})
	go func() {
		for range webhookQueue + 5 {
			n.notify(note)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("notify blocked on a full queue")
	}
	if got := testutil.ToFloat64(webhookTotal.WithLabelValues("dropped")) - dropped; got != 5 {
		t.Errorf("dropped counter moved by %v for a full queue, want 5", got)
	}
}

// TestNotificationBodies: the JSON body names the workload, the sources and the keys; the
// Slack body says the same in a sentence.
func TestNotificationBodies(t *testing.T) {
	note := notificationOf("Deployment", "shop", "web", "rolled", []sourceChange{
		{Source: "ConfigMap/app", Change: changeChanged, Changed: []string{"LOG_LEVEL"}, Added: []string{"NEW"}},
		{Source: "Secret/db", Change: changeDeleted},
	}, time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	n := &notifier{settings: WebhookSettings{Format: WebhookFormatJSON}}
	body, contentType := n.body(note)
	want := `{"kind":"Deployment","namespace":"shop","name":"web","action":"rolled","sources":[` +
		`{"kind":"ConfigMap","name":"app","change":"changed","changed":["LOG_LEVEL"],"added":["NEW"]},` +
		`{"kind":"Secret","name":"db","change":"deleted"}],"time":"2026-12-02T10:00:00Z"}`
	if string(body) != want || contentType != "application/json" {
		t.Errorf("JSON body %s (%s), want %s", body, contentType, want)
	}
	n.settings.Format = WebhookFormatSlack
	body, _ = n.body(note)
	if want := `{"text":"Rolled Deployment shop/web: ConfigMap app: LOG_LEVEL changed, NEW added; Secret db: deleted"}`; string(body) != want {
		t.Errorf("Slack body %s, want %s", body, want)
	}
	if got := redactedURL("https://hooks.slack.com/services/T000/B000/secret"); got != "https://hooks.slack.com/..." {
		t.Errorf("redactedURL = %s", got)
	}
}
