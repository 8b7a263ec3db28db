package configmapwatcher

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-logr/logr"

	"github.com/example/switchboard/internal/podrefs"
)

// AlertSettings are Stakater Reloader's ALERT_* environment variables: a chat message for each
// source a roll was made for, as Reloader sends it (ALERT_ON_RELOAD=true).
type AlertSettings struct {
	// URL is ALERT_WEBHOOK_URL; empty when alerts are off.
	URL string
	// Sink is ALERT_SINK: how the message is posted.
	Sink string
	// Proxy is ALERT_WEBHOOK_PROXY, the proxy the posts go through; empty for the environment's.
	Proxy string
	// AdditionalInfo is ALERT_ADDITIONAL_INFO, put before each message (a cluster's name).
	AdditionalInfo string
}

// Reloader's alert sinks (ALERT_SINK).
const (
	// AlertSinkSlack posts Slack's attachment, as Reloader does.
	AlertSinkSlack = "slack"
	// AlertSinkTeams posts Microsoft Teams' {"text": ...}.
	AlertSinkTeams = "teams"
	// AlertSinkGoogleChat posts Google Chat's {"text": ...}.
	AlertSinkGoogleChat = "gchat"
	// AlertSinkRaw posts the message as plain text, without Slack's * marks: Reloader's
	// default.
	AlertSinkRaw = "raw"
)

// Reloader's alert variables.
const (
	alertOnReloadVariable       = "ALERT_ON_RELOAD"
	alertWebhookURLVariable     = "ALERT_WEBHOOK_URL"
	alertSinkVariable           = "ALERT_SINK"
	alertWebhookProxyVariable   = "ALERT_WEBHOOK_PROXY"
	alertAdditionalInfoVariable = "ALERT_ADDITIONAL_INFO"
)

// alertSettingsFromEnv reads Reloader's ALERT_* variables through lookupEnv. Where Reloader
// quietly sends nothing or falls back (ALERT_ON_RELOAD other than true or false, no
// ALERT_WEBHOOK_URL, an unknown ALERT_SINK), it returns an error naming the variable.
func alertSettingsFromEnv(lookupEnv func(string) (string, bool)) (AlertSettings, error) {
	get := func(name string) string {
		v, _ := lookupEnv(name)
		return strings.TrimSpace(v)
	}
	switch on := get(alertOnReloadVariable); on {
	case "true":
	case "", "false":
		return AlertSettings{}, nil
	default:
		return AlertSettings{}, fmt.Errorf("%s must be true or false, got %q (Reloader reads anything but true as false)", alertOnReloadVariable, on)
	}
	a := AlertSettings{URL: get(alertWebhookURLVariable), Sink: strings.ToLower(get(alertSinkVariable)),
		Proxy: get(alertWebhookProxyVariable), AdditionalInfo: get(alertAdditionalInfoVariable)}
	if a.URL == "" {
		return AlertSettings{}, fmt.Errorf("%s=true needs %s, the URL the alerts are posted to", alertOnReloadVariable, alertWebhookURLVariable)
	}
	if u, err := url.Parse(a.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The path and the user info of a chat webhook are its token: never printed.
		return AlertSettings{}, fmt.Errorf("%s must be an http or https URL, got %s", alertWebhookURLVariable, redactedURL(a.URL))
	}
	switch a.Sink {
	case "":
		a.Sink = AlertSinkRaw
	case AlertSinkSlack, AlertSinkTeams, AlertSinkGoogleChat, AlertSinkRaw:
	default:
		return AlertSettings{}, fmt.Errorf("%s must be %s, %s, %s or %s, got %q", alertSinkVariable, AlertSinkSlack, AlertSinkTeams, AlertSinkGoogleChat, AlertSinkRaw, a.Sink)
	}
	if a.Proxy != "" {
		if u, err := url.Parse(a.Proxy); err != nil || u.Host == "" {
			return AlertSettings{}, fmt.Errorf("%s must be a proxy URL (http://host:port), got %s", alertWebhookProxyVariable, redactedURL(a.Proxy))
		}
	}
	return a, nil
}

// newAlerter returns the notifier of Reloader's alerts, nil when they are off.
func newAlerter(a AlertSettings, log logr.Logger) *notifier {
	if a.URL == "" {
		return nil
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if a.Proxy != "" {
		proxy, _ := url.Parse(a.Proxy) // checked by alertSettingsFromEnv
		transport.Proxy = http.ProxyURL(proxy)
	}
	return &notifier{url: a.URL, client: &http.Client{Timeout: webhookTimeout, Transport: transport,
		// As Reloader's client: a redirect is taken for a wrong token, not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		posts: a.posts, queue: make(chan webhookPost, webhookQueue),
		log: log.WithValues("alerts", redactedURL(a.URL)), backoff: webhookBackoff}
}

// posts are Reloader's alerts for a roll: one message per source, in Reloader's words.
func (a AlertSettings) posts(note Notification) []webhookPost {
	var out []webhookPost
	for _, src := range note.Sources {
		msg := a.message(note, src)
		switch a.Sink {
		case AlertSinkSlack:
			out = append(out, postOf(note, mustJSON(map[string]any{"attachments": []map[string]string{
				{"color": "good", "author_name": "Reloader", "text": msg}}}), "application/json"))
		case AlertSinkTeams, AlertSinkGoogleChat:
			out = append(out, postOf(note, mustJSON(map[string]string{"text": msg}), "application/json"))
		default:
			out = append(out, postOf(note, []byte(strings.ReplaceAll(msg, "*", "")), "text/plain"))
		}
	}
	return out
}

// message is Reloader's alert text for one source of a roll.
func (a AlertSettings) message(note Notification, src NotifiedSource) string {
	typ := "CONFIGMAP"
	if src.Kind == string(podrefs.Secret) {
		typ = "SECRET"
	}
	msg := fmt.Sprintf("Reloader detected changes in *%s* of type *%s* in namespace *%s*. Hence reloaded *%s* of type *%s* in namespace *%s*",
		src.Name, typ, note.Namespace, note.Name, note.Kind, note.Namespace)
	if a.AdditionalInfo != "" {
		msg = a.AdditionalInfo + " : " + msg
	}
	return msg
}
