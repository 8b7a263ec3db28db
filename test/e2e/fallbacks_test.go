package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"

	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/matrix"
)

// TestFallbacksOfTheCluster starts the manager with every controller on this minor's cluster
// and checks that it says, once each, what it does without each optional API the API server
// does not serve, and nothing of one it serves: a line of its log and
// switchboard_api_fallback{controller,feature} 1 for each fallback, 0 for the rest. What the API
// server serves is read here from its discovery, not from the manager. With
// SWITCHBOARD_E2E_MATRIX_OUT (make test-e2e-matrix) it writes what it found there, for the
// table of minors on the install page.
func TestFallbacksOfTheCluster(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	served := servedFeatures(t, c)
	args := c.Deploy(t, "default")
	kubeconfig, _ := c.ServiceAccountKubeconfig(t)
	// Plain HTTP metrics, for the test to scrape; the rest as shipped.
	m := startManager(t, kubeconfig, args, "--metrics-secure=false")
	ctx := context.Background()
	eventually(t, time.Minute, func() error { return m.Ready(ctx) })

	var want []string
	if served.MutatingAdmissionPolicy == "" {
		want = append(want, "myapp MutatingAdmissionPolicy", "verticalscaler MutatingAdmissionPolicy")
	}
	if !served.PodResize {
		want = append(want, "verticalscaler PodResize")
	}
	fallbacks := fallbacksLogged(t, m.Output())
	var got []string
	for _, f := range fallbacks {
		got = append(got, f.Controller+" "+f.Feature)
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the manager's fallbacks on %s (MutatingAdmissionPolicy %q, pods/resize %v) (-want +got):\n%s", served.Kubernetes, served.MutatingAdmissionPolicy, served.PodResize, diff)
	}
	gauge, err := m.MetricByLabel(ctx, "switchboard_api_fallback", "feature")
	if err != nil {
		t.Fatal(err)
	}
	wantGauge := map[string]float64{"MutatingAdmissionPolicy": 0, "PodResize": 0}
	for _, w := range want {
		wantGauge[strings.Fields(w)[1]]++
	}
	if diff := cmp.Diff(wantGauge, gauge); diff != "" {
		t.Errorf("switchboard_api_fallback summed by feature (-want +got):\n%s", diff)
	}

	if dir := os.Getenv("SWITCHBOARD_E2E_MATRIX_OUT"); dir != "" && !t.Failed() {
		served.Fallbacks = fallbacks
		if err := matrix.WriteMinor(dir, served); err != nil {
			t.Fatal(err)
		}
	}
}

// servedFeatures reads from the cluster's discovery its version and which optional APIs it
// serves.
func servedFeatures(t *testing.T, c *testCluster) matrix.Minor {
	t.Helper()
	d, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	info, err := d.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	out := matrix.Minor{Kubernetes: info.GitVersion, Date: time.Now().UTC().Format(time.DateOnly)}
	for _, version := range []string{"v1", "v1beta1"} {
		if servesResource(t, d, "admissionregistration.k8s.io/"+version, "mutatingadmissionpolicies") {
			out.MutatingAdmissionPolicy = version
			break
		}
	}
	out.PodResize = servesResource(t, d, "v1", "pods/resize")
	return out
}

func servesResource(t *testing.T, d discovery.DiscoveryInterface, groupVersion, resource string) bool {
	t.Helper()
	list, err := d.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("discovery of %s: %v", groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true
		}
	}
	return false
}

// fallbacksLogged reads the manager's fallback lines from its JSON log, in the log's order.
func fallbacksLogged(t *testing.T, output string) []matrix.Fallback {
	t.Helper()
	var out []matrix.Fallback
	scanner := bufio.NewScanner(strings.NewReader(output))
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.Contains(line, controllers.FallbackLogMessage) {
			continue
		}
		var entry struct {
			Msg string `json:"msg"`
			matrix.Fallback
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("a fallback line that is no JSON: %v\n%s", err, line)
		}
		if entry.Msg == controllers.FallbackLogMessage {
			out = append(out, entry.Fallback)
		}
	}
	return out
}
