package configmapwatcher

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
	post := n.posts(note)[0]
	n.post(context.Background(), post)
	if got := calls.Load(); got != webhookAttempts {
		t.Errorf("%d attempts, want %d", got, webhookAttempts)
	}
	if got := testutil.ToFloat64(webhookTotal.WithLabelValues("dropped")) - dropped; got != 1 {
		t.Errorf("dropped counter moved by %v, want 1", got)
	}
	fail.Store(false)
	n.post(context.Background(), post)
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
	post := webhookPosts(WebhookFormatJSON)(note)[0]
	body, contentType := post.body, post.contentType
	want := `{"kind":"Deployment","namespace":"shop","name":"web","action":"rolled","sources":[` +
		`{"kind":"ConfigMap","name":"app","change":"changed","changed":["LOG_LEVEL"],"added":["NEW"]},` +
		`{"kind":"Secret","name":"db","change":"deleted"}],"time":"2026-12-02T10:00:00Z"}`
	if string(body) != want || contentType != "application/json" {
		t.Errorf("JSON body %s (%s), want %s", body, contentType, want)
	}
	body = webhookPosts(WebhookFormatSlack)(note)[0].body
	if want := `{"text":"Rolled Deployment shop/web: ConfigMap app: LOG_LEVEL changed, NEW added; Secret db: deleted"}`; string(body) != want {
		t.Errorf("Slack body %s, want %s", body, want)
	}
	if got := redactedURL("https://hooks.slack.com/services/T000/B000/secret"); got != "https://hooks.slack.com/..." {
		t.Errorf("redactedURL = %s", got)
	}
}

// TestAlertSettingsFromEnv: Reloader's ALERT_* variables, and a clear error where Reloader
// quietly sends nothing or falls back.
func TestAlertSettingsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    AlertSettings
		wantErr string
	}{
		{name: "off by default", env: map[string]string{"ALERT_WEBHOOK_URL": "https://hooks.example/x"}},
		{name: "off", env: map[string]string{"ALERT_ON_RELOAD": "false", "ALERT_SINK": "nonsense"}},
		{name: "raw by default", env: map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": " https://hooks.example/x\n"},
			want: AlertSettings{URL: "https://hooks.example/x", Sink: AlertSinkRaw}},
		{name: "every variable", env: map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "https://hooks.slack.com/services/T/B/secret",
			"ALERT_SINK": "Slack", "ALERT_WEBHOOK_PROXY": "http://proxy:3128", "ALERT_ADDITIONAL_INFO": "prod-eu"},
			want: AlertSettings{URL: "https://hooks.slack.com/services/T/B/secret", Sink: AlertSinkSlack, Proxy: "http://proxy:3128", AdditionalInfo: "prod-eu"}},
		{name: "not a boolean", env: map[string]string{"ALERT_ON_RELOAD": "yes"}, wantErr: "ALERT_ON_RELOAD must be true or false"},
		{name: "no URL", env: map[string]string{"ALERT_ON_RELOAD": "true"}, wantErr: "needs ALERT_WEBHOOK_URL"},
		{name: "not a URL, token not printed", env: map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "hooks.example/secret"}, wantErr: "got a value without a scheme://"},
		{name: "unknown sink", env: map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "https://hooks.example/x", "ALERT_SINK": "discord"}, wantErr: `ALERT_SINK must be slack, teams, gchat or raw, got "discord"`},
		{name: "bad proxy", env: map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "https://hooks.example/x", "ALERT_WEBHOOK_PROXY": "proxy"}, wantErr: "ALERT_WEBHOOK_PROXY must be a proxy URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := alertSettingsFromEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "secret") {
					t.Fatalf("error %v, want one saying %q, without the URL's token", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAlertBodies: one alert per source, in Reloader's words and each sink's body, after
// ALERT_ADDITIONAL_INFO; posted to the URL through the proxy.
func TestAlertBodies(t *testing.T) {
	note := notificationOf("Deployment", "shop", "web", "rolled", []sourceChange{
		{Source: "ConfigMap/app", Change: changeChanged, Changed: []string{"LOG_LEVEL"}},
		{Source: "Secret/db", Change: changeChanged},
	}, time.Unix(0, 0))
	const app = "Reloader detected changes in *app* of type *CONFIGMAP* in namespace *shop*. Hence reloaded *web* of type *Deployment* in namespace *shop*"
	const db = "Reloader detected changes in *db* of type *SECRET* in namespace *shop*. Hence reloaded *web* of type *Deployment* in namespace *shop*"
	for _, tc := range []struct {
		sink, info, contentType string
		want                    []string
	}{
		{AlertSinkSlack, "", "application/json", []string{
			`{"attachments":[{"author_name":"Reloader","color":"good","text":"` + app + `"}]}`,
			`{"attachments":[{"author_name":"Reloader","color":"good","text":"` + db + `"}]}`}},
		{AlertSinkTeams, "", "application/json", []string{`{"text":"` + app + `"}`, `{"text":"` + db + `"}`}},
		{AlertSinkGoogleChat, "prod", "application/json", []string{`{"text":"prod : ` + app + `"}`, `{"text":"prod : ` + db + `"}`}},
		{AlertSinkRaw, "", "text/plain", []string{strings.ReplaceAll(app, "*", ""), strings.ReplaceAll(db, "*", "")}},
	} {
		t.Run(tc.sink, func(t *testing.T) {
			var got []string
			for _, p := range (AlertSettings{URL: "https://hooks.example/x", Sink: tc.sink, AdditionalInfo: tc.info}).posts(note) {
				if p.contentType != tc.contentType {
					t.Errorf("content type %s, want %s", p.contentType, tc.contentType)
				}
				got = append(got, string(p.body))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if r.URL.Host == "hooks.example" && r.Method == http.MethodPost {
			proxied.Add(1)
		}
	}))
	defer proxy.Close()
	a := newAlerter(AlertSettings{URL: "http://hooks.example/x", Sink: AlertSinkRaw, Proxy: proxy.URL}, logr.Discard())
	a.post(context.Background(), a.posts(note)[0])
	if proxied.Load() != 1 {
		t.Errorf("%d posts through the proxy, want 1", proxied.Load())
	}
}
