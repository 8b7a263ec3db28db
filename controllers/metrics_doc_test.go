package controllers_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// metricsPage is the operations page that lists every metric the manager serves.
var metricsPage = filepath.Join("..", "docs", "operations", "metrics.md")

// documentedPrefixes are the metric families the page lists one by one; the Go runtime's and
// the process's (go_*, process_*) it describes as groups.
var documentedPrefixes = []string{"switchboard_", "controller_runtime_", "workqueue_", "rest_client_", "leader_election_", "certwatcher_"}

// TestMetricsDocumented runs the manager as it ships, with every controller, a Lease per
// controller and the HTTP trigger, makes it reconcile and take a trigger, and scrapes it: every
// metric docs/operations/metrics.md names must be served, and every family of ours (and of
// controller-runtime and client-go) that is served must be on the page.
func TestMetricsDocumented(t *testing.T) {
	documented := documentedMetrics(t)
	served := servedMetrics(t, documented)

	var undocumented []string
	for _, name := range served {
		if hasAnyPrefix(name, documentedPrefixes) && !slices.Contains(documented, name) {
			undocumented = append(undocumented, name)
		}
	}
	if len(undocumented) > 0 {
		t.Errorf("the manager serves metrics %s does not list: %s", metricsPage, strings.Join(undocumented, ", "))
	}
}

// metricRow is a row of the page's metric tables: its first cell is the name in backquotes.
var metricRow = regexp.MustCompile("^\\| `([a-z_:][a-z0-9_:]*)` \\|")

// documentedMetrics returns the metric names of the page's tables.
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(metricsPage)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if m := metricRow.FindStringSubmatch(s.Text()); m != nil {
			if slices.Contains(names, m[1]) {
				t.Errorf("%s lists %s twice", metricsPage, m[1])
			}
			names = append(names, m[1])
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("%s has no metric table rows", metricsPage)
	}
	return names
}

// servedMetrics runs the manager, waits until it serves every family of documented, and
// returns the families it serves then, sorted; it fails naming those still not served after a
// minute. It waits for them all because a roll counts in several families one after the
// other: a scrape between two of them must not fail the test.
func servedMetrics(t *testing.T, documented []string) []string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config, ""); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t, "metrics-doc-")
	// One of Reloader's environment variables the configmapwatcher does not read, to be
	// reported (the process inherits the test's environment).
	t.Setenv("RELOADER_NAMESPACE", "reloader")
	metrics, probes, trigger := testenv.FreeAddress(t), testenv.FreeAddress(t), testenv.FreeAddress(t)
	p := testenv.RunProcess(t, testenv.Command{Binary: testenv.BuildBinary(t, "."), MetricsAddress: metrics, ProbeAddress: probes, Args: []string{
		"--kubeconfig=" + kubeconfig, "--metrics-bind-address=" + metrics, "--metrics-secure=false", "--health-probe-bind-address=" + probes,
		"--leader-elect", "--leader-elect-scope=controller", "--leader-election-namespace=" + ns,
		"--trigger-bind-address=" + trigger, "--trigger-token-file=" + token, "--usage-source=pod-annotations", "--usage-interval=1s",
	}})
	testenv.Eventually(t, 2*time.Minute, func() error { return p.Ready(ctx) })
	// Work for every controller, so that the families created on first use are served.
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}, Data: map[string]string{"k": "v"}}
	app := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", EnvFrom: []v1alpha1.ConfigMapEnvSource{{ConfigMapName: cfg.Name}}}}
	scaler := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web"}}
	if err := env.Client.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, scaler); err != nil {
		t.Fatal(err)
	}
	// A Pod of the MyApp's Deployment reporting usage: the verticalscaler recommends, and serves
	// the recommendation.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0",
		Labels:      map[string]string{"app.kubernetes.io/name": "myapp", "app.kubernetes.io/instance": app.Name},
		Annotations: map[string]string{v1alpha1.UsageAnnotationPrefix + "app": "cpu=100m,memory=64Mi"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	postTrigger(t, trigger, "s3cret", "myapp", ns, app.Name)
	// A roll of the MyApp's Deployment, once the configmapwatcher has recorded it.
	testenv.Eventually(t, time.Minute, func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app.Name}, d); err != nil {
			return err
		}
		if d.Annotations[v1alpha1.ConfigStateAnnotation] == "" {
			return fmt.Errorf("Deployment not recorded yet")
		}
		return nil
	})
	cfg.Data = map[string]string{"k": "v2"}
	if err := env.Client.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	var names []string
	testenv.Eventually(t, time.Minute, func() error {
		families, err := scrapeFamilies(ctx, metrics)
		if err != nil {
			return err
		}
		names = families
		var missing []string
		for _, name := range documented {
			if !slices.Contains(names, name) {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%s names metrics the manager does not serve: %s", metricsPage, strings.Join(missing, ", "))
		}
		return nil
	})
	return names
}

// scrapeFamilies reads the names of the metric families served at addr.
func scrapeFamilies(ctx context.Context, addr string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	var names []string
	for name := range families {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// postTrigger asks the manager's HTTP trigger to reconcile one object of controller.
func postTrigger(t *testing.T, addr, token, controller, namespace, name string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	body := fmt.Sprintf(`{"namespace": %q, "name": %q}`, namespace, name)
	testenv.Eventually(t, 30*time.Second, func() error {
		req, err := http.NewRequest(http.MethodPost, "https://"+addr+"/trigger/"+controller, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("POST /trigger/%s: %s", controller, resp.Status)
		}
		return nil
	})
}

func hasAnyPrefix(s string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}
