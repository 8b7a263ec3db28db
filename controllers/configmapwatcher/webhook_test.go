package configmapwatcher_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/example/switchboard/controllers/configmapwatcher"
	"github.com/example/switchboard/internal/testenv"
)

// webhookReceiver records the bodies posted to it.
type webhookReceiver struct {
	mu     sync.Mutex
	bodies []string
}

func startWebhook(t *testing.T) (*webhookReceiver, string) {
	t.Helper()
	r := &webhookReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		data, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, string(data))
		r.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// notifications returns the notifications about the workloads of ns.
func (r *webhookReceiver) notifications(t *testing.T, ns string) []configmapwatcher.Notification {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []configmapwatcher.Notification
	for _, body := range r.bodies {
		var n configmapwatcher.Notification
		if err := json.Unmarshal([]byte(body), &n); err != nil {
			t.Fatalf("body %s: %v", body, err)
		}
		if n.Namespace == ns {
			out = append(out, n)
		}
	}
	return out
}

// metricValue returns the value of the sample of family whose labels include labels, 0 when
// there is none, from this process's registry, which the in-process managers serve.
func metricValue(t *testing.T, family string, labels map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
					matched++
				}
			}
			if matched == len(labels) {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// TestWebhookAndMetrics: each roll is posted to --notify-url, naming the workload, the
// sources and the keys that changed, never a value; it is counted by kind, namespace and
// result, and under Reloader's metric names.
func TestWebhookAndMetrics(t *testing.T) {
	receiver, url := startWebhook(t)
	env.StartManager(t, "--controllers=configmapwatcher", "--notify-url="+url)
	k := kinds[0]
	ns := env.Namespace(t, "cmw-webhook-")
	create(t, secret(ns, "db", map[string]string{"password": "first-secret-value"}), k.workload(ns, "web", "true", secretEnvFrom("db")))
	before := k.waitRecorded(t, ns, "web")
	rolls := metricValue(t, "switchboard_configmapwatcher_rolls_total", map[string]string{"kind": "Deployment", "namespace": ns, "result": "success"})
	reloads := metricValue(t, "reloader_reload_executed_total", map[string]string{"success": "true"})
	byNamespace := metricValue(t, "reloader_reload_executed_total_by_namespace", map[string]string{"success": "true", "namespace": ns})
	actions := metricValue(t, "reloader_action_total", map[string]string{"workload_kind": "Deployment", "result": "success"})

	updateSecret(t, ns, "db", map[string]string{"password": "second-secret-value"})
	k.waitRolled(t, ns, before, "web")
	var got []configmapwatcher.Notification
	testenv.Eventually(t, timeout, func() error {
		if got = receiver.notifications(t, ns); len(got) == 0 {
			return fmt.Errorf("nothing posted yet")
		}
		return nil
	})
	want := []configmapwatcher.Notification{{Kind: "Deployment", Namespace: ns, Name: "web", Action: "rolled",
		Sources: []configmapwatcher.NotifiedSource{{Kind: "Secret", Name: "db", Change: "changed", Changed: []string{"password"}}}, Time: got[0].Time}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
	receiver.mu.Lock()
	for _, body := range receiver.bodies {
		if strings.Contains(body, "secret-value") {
			t.Errorf("a notification holds a Secret's value: %s", body)
		}
	}
	receiver.mu.Unlock()
	for _, m := range []struct {
		family string
		labels map[string]string
		before float64
	}{
		{"switchboard_configmapwatcher_rolls_total", map[string]string{"kind": "Deployment", "namespace": ns, "result": "success"}, rolls},
		{"reloader_reload_executed_total", map[string]string{"success": "true"}, reloads},
		{"reloader_reload_executed_total_by_namespace", map[string]string{"success": "true", "namespace": ns}, byNamespace},
		{"reloader_action_total", map[string]string{"workload_kind": "Deployment", "result": "success"}, actions},
	} {
		if got := metricValue(t, m.family, m.labels) - m.before; got < 1 {
			t.Errorf("%s%v moved by %v, want at least 1", m.family, m.labels, got)
		}
	}
}

// TestWebhookURLPostsInsteadOfRolling: with --webhook-url, as with Reloader's, a change is
// posted instead of rolled, once: the record moves on, the Pod template does not.
func TestWebhookURLPostsInsteadOfRolling(t *testing.T) {
	receiver, url := startWebhook(t)
	env.StartManager(t, "--controllers=configmapwatcher", "--webhook-url="+url)
	k := kinds[0]
	ns := env.Namespace(t, "cmw-webhookonly-")
	create(t, configMap(ns, "app", map[string]string{"k": "v1"}), k.workload(ns, "web", "true", envFrom("app")))
	before := k.waitRecorded(t, ns, "web")
	counter := k.countRolls(t, ns)
	updateConfigMap(t, ns, "app", map[string]string{"k": "v2"})
	testenv.Eventually(t, timeout, func() error {
		if n := receiver.notifications(t, ns); len(n) != 1 || n[0].Action != "none" {
			return fmt.Errorf("notifications %+v, want one with action none", n)
		}
		return nil
	})
	settle(t, reconcileTotal(t), 0)
	after := k.states(t, ns)["web"]
	if after.Record == before["web"].Record || after.Hash != "" {
		t.Errorf("after the change: record moved %v, config hash %q; want the record moved and no hash", after.Record != before["web"].Record, after.Hash)
	}
	if got := counter.take(t, k, ns); len(got) > 0 {
		t.Errorf("rolls with --webhook-url: %v", got)
	}
}

// TestMaxRolloutsPerMinute: with --max-rollouts-per-minute=2, a change used by four
// Deployments rolls two at once and puts the other two off (counted as rate-limited); they roll
// once a minute has passed (BenchmarkRateLimit measures that part).
func TestMaxRolloutsPerMinute(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher", "--max-rollouts-per-minute=2")
	k := kinds[0]
	ns := env.Namespace(t, "cmw-ratelimit-")
	create(t, configMap(ns, "app", map[string]string{"k": "v1"}))
	names := []string{"a", "b", "c", "d"}
	for _, name := range names {
		create(t, k.workload(ns, name, "true", envFrom("app")))
	}
	k.waitRecorded(t, ns, names...)
	settle(t, reconcileTotal(t), 0)
	counter := k.countRolls(t, ns)
	limited := metricValue(t, "switchboard_configmapwatcher_skipped_rolls_total", map[string]string{"kind": "Deployment", "reason": "rate-limited"})
	updateConfigMap(t, ns, "app", map[string]string{"k": "v2"})
	since := reconcileTotal(t)
	time.Sleep(3 * time.Second)
	settle(t, since, 4)
	rolled := counter.take(t, k, ns)
	if len(rolled) != 2 {
		t.Errorf("rolled %v within seconds, want 2 of the 4", rolled)
	}
	if got := metricValue(t, "switchboard_configmapwatcher_skipped_rolls_total", map[string]string{"kind": "Deployment", "reason": "rate-limited"}) - limited; got < 2 {
		t.Errorf("rate-limited counter moved by %v, want at least 2", got)
	}
}
