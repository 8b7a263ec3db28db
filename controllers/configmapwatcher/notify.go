package configmapwatcher

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/example/switchboard/controllers/internal/metawatch"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// WebhookSettings say where rolls are posted: --webhook-url (Only: instead of rolling) or
// --notify-url, and --webhook-format.
type WebhookSettings struct {
	URL    string
	Format string
	Only   bool
}

// Notification is the JSON body --webhook-url and --notify-url receive for each roll: which workload, and which
// sources and keys changed. It never holds a value of a ConfigMap or a Secret, nor a digest.
type Notification struct {
	// Kind, Namespace and Name are the workload's.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Action is what was done: "rolled" (the Pod template changed), "restarted" (a Rollout's
	// spec.restartAt), "recreated" (a Job), "job-created" (a CronJob's Job run at once, besides
	// its template), or "none" with --webhook-url (posted instead of rolled).
	Action string `json:"action"`
	// Sources are the sources that changed.
	Sources []NotifiedSource `json:"sources"`
	// Time is when the roll was written, RFC 3339.
	Time string `json:"time"`
}

// NotifiedSource is one source of a Notification.
type NotifiedSource struct {
	// Kind is ConfigMap or Secret.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Change is "changed", "created" or "deleted".
	Change string `json:"change"`
	// Changed, Added and Removed name the keys, for "changed"; all empty when the source has
	// too many keys to record one by one.
	Changed []string `json:"changed,omitempty"`
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// notificationOf turns a decision's changes into a Notification.
func notificationOf(kind, namespace, name, action string, changes []sourceChange, at time.Time) Notification {
	n := Notification{Kind: kind, Namespace: namespace, Name: name, Action: action, Time: at.UTC().Format(time.RFC3339), Sources: []NotifiedSource{}}
	for _, c := range changes {
		sourceKind, sourceName, _ := strings.Cut(c.Source, "/")
		n.Sources = append(n.Sources, NotifiedSource{Kind: sourceKind, Name: sourceName, Change: c.Change,
			Changed: c.Changed, Added: c.Added, Removed: c.Removed})
	}
	return n
}

// text says a Notification in a sentence, for chat webhooks.
func (n Notification) text() string {
	var changes []string
	for _, s := range n.Sources {
		change := sourceChange{Source: s.Kind + "/" + s.Name, Change: s.Change, Changed: s.Changed, Added: s.Added, Removed: s.Removed}
		changes = append(changes, change.String())
	}
	verb := map[string]string{"rolled": "Rolled", "restarted": "Restarted", "recreated": "Re-created",
		"job-created": "Ran a Job of", "none": "Not rolled (--webhook-url):"}[n.Action]
	return fmt.Sprintf("%s %s %s/%s: %s", verb, n.Kind, n.Namespace, n.Name, strings.Join(changes, "; "))
}

// Webhook retries and bounds.
const (
	// webhookQueue is how many notifications wait at most; beyond, new ones are dropped and
	// counted, so that a slow or dead endpoint never holds a roll up nor grows the memory.
	webhookQueue = 1000
	// webhookAttempts is how many times one notification is tried.
	webhookAttempts = 4
	// webhookTimeout bounds one attempt.
	webhookTimeout = 5 * time.Second
	// webhookBackoff is the wait before the second attempt, doubled before each next.
	webhookBackoff = time.Second
)

// notifier posts notifications to the webhook from one goroutine, in order, each with bounded
// retries: a post that still fails after webhookAttempts, or that finds the queue full, is
// dropped, logged and counted (switchboard_configmapwatcher_webhook_posts_total). The same
// notifier posts Reloader's alerts (ALERT_*), with their own bodies.
type notifier struct {
	url    string
	client *http.Client
	// posts turns a roll's notification into what is posted for it.
	posts   func(Notification) []webhookPost
	queue   chan webhookPost
	log     logr.Logger
	backoff time.Duration
	// running: a Start posts; each controller of the group adds the notifier to the manager,
	// and the others wait.
	running atomic.Bool
}

// webhookPost is one body to post, with the workload it is about, for logs.
type webhookPost struct {
	body        []byte
	contentType string
	kind        string
	namespace   string
	name        string
}

// newNotifier returns the notifier of settings, nil when no URL is set.
func newNotifier(settings WebhookSettings, log logr.Logger) *notifier {
	if settings.URL == "" {
		return nil
	}
	return &notifier{url: settings.URL, client: &http.Client{Timeout: webhookTimeout}, posts: webhookPosts(settings.Format),
		queue: make(chan webhookPost, webhookQueue), log: log.WithValues("webhook", redactedURL(settings.URL)), backoff: webhookBackoff}
}

// webhookPosts encodes a notification in format: the Notification as JSON, or Slack's
// {"text": ...}.
func webhookPosts(format string) func(Notification) []webhookPost {
	return func(note Notification) []webhookPost {
		var v any = note
		if format == WebhookFormatSlack {
			v = map[string]string{"text": note.text()}
		}
		return []webhookPost{postOf(note, mustJSON(v), "application/json")}
	}
}

// postOf is body about note's workload.
func postOf(note Notification, body []byte, contentType string) webhookPost {
	return webhookPost{body: body, contentType: contentType, kind: note.Kind, namespace: note.Namespace, name: note.Name}
}

// mustJSON encodes v, made of strings, string slices and maps of them, which always encode.
func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding a notification: %v", err))
	}
	return data
}

// redactedURL keeps of a URL its scheme and host: chat webhooks carry their secret in the path
// or the user info.
func redactedURL(raw string) string {
	scheme, rest, found := strings.Cut(raw, "://")
	if !found {
		return "a value without a scheme://"
	}
	host, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:] // user:password@
	}
	return scheme + "://" + host + "/..."
}

// notify queues what note posts, or drops and counts it when the queue is full. It never blocks.
func (n *notifier) notify(note Notification) {
	if n == nil {
		return
	}
	for _, p := range n.posts(note) {
		select {
		case n.queue <- p:
		default:
			webhookTotal.WithLabelValues("dropped").Inc()
			n.log.Info("Webhook notification dropped: the queue is full", "kind", p.kind, "namespace", p.namespace, "name", p.name)
		}
	}
}

// Start posts queued notifications until ctx ends. It runs on the replica that rolls: the
// leader. Every controller of the group adds the notifier to the manager (each term of leading
// the group builds them again), so one Start posts and the others wait for the end.
func (n *notifier) Start(ctx context.Context) error {
	if !n.running.CompareAndSwap(false, true) {
		<-ctx.Done()
		return nil
	}
	defer n.running.Store(false)
	for {
		select {
		case <-ctx.Done():
			return nil
		case p := <-n.queue:
			n.post(ctx, p)
		}
	}
}

// post sends one body, retrying a failed attempt (no answer, or a status other than 2xx) up to
// webhookAttempts times with a doubling wait.
func (n *notifier) post(ctx context.Context, p webhookPost) {
	wait := n.backoff
	var err error
	for attempt := 1; attempt <= webhookAttempts; attempt++ {
		if err = n.attempt(ctx, p.body, p.contentType); err == nil {
			webhookTotal.WithLabelValues("sent").Inc()
			return
		}
		if attempt < webhookAttempts {
			metawatch.Sleep(ctx, wait)
			wait *= 2
		}
		if ctx.Err() != nil {
			break
		}
	}
	webhookTotal.WithLabelValues("dropped").Inc()
	n.log.Error(err, "Webhook notification dropped after retries", "kind", p.kind, "namespace", p.namespace, "name", p.name, "attempts", webhookAttempts)
}

// attempt posts body once.
func (n *notifier) attempt(ctx context.Context, body []byte, contentType string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the webhook answered %s", resp.Status)
	}
	return nil
}
