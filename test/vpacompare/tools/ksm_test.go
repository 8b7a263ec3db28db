package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vpatypes "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1"

	"github.com/example/switchboard/internal/testenv"
)

// kubeStateMetricsModule is kube-state-metrics' Go module, which hack/tools/kube-state-metrics
// builds the binary from and whose docs hold the configuration the test runs it with.
const kubeStateMetricsModule = "k8s.io/kube-state-metrics/v2"

// kubeStateMetricsTool is the Go module that pins and builds kube-state-metrics.
var kubeStateMetricsTool = filepath.Join("..", "..", "..", "hack", "tools", "kube-state-metrics")

// kubeStateMetricsVersion reads the version of kube-state-metrics that kubeStateMetricsTool
// requires.
func kubeStateMetricsVersion() (string, error) {
	f, err := os.Open(filepath.Join(kubeStateMetricsTool, "go.mod"))
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		// "k8s.io/kube-state-metrics/v2 v2.20.0 // indirect", in a require block.
		if fields := strings.Fields(scanner.Text()); len(fields) >= 2 && fields[0] == kubeStateMetricsModule {
			return fields[1], nil
		}
	}
	if err := scanner.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s requires no %s", kubeStateMetricsTool, kubeStateMetricsModule)
}

// documentedVPAConfig returns the custom resource state configuration that kube-state-metrics'
// docs give to serve every VerticalPodAutoscaler metric it served before v2.9.0: the first YAML
// block under "All VerticalPodAutoscaler Metrics" in its docs at version, read from the Go module
// cache, so that the test runs what users copy.
func documentedVPAConfig(version string) (string, error) {
	dir, err := testenv.ModuleDir(kubeStateMetricsModule, version)
	if err != nil {
		return "", err
	}
	doc, err := os.ReadFile(filepath.Join(dir, "docs", "metrics", "extend", "customresourcestate-metrics.md"))
	if err != nil {
		return "", err
	}
	_, section, found := strings.Cut(string(doc), "#### All VerticalPodAutoscaler Metrics")
	if !found {
		return "", errors.New("kube-state-metrics' docs have no section All VerticalPodAutoscaler Metrics")
	}
	_, block, found := strings.Cut(section, "```yaml\n")
	if !found {
		return "", errors.New("the section All VerticalPodAutoscaler Metrics has no YAML block")
	}
	config, _, found := strings.Cut(block, "```")
	if !found {
		return "", errors.New("the YAML block of All VerticalPodAutoscaler Metrics does not end")
	}
	return config, nil
}

// TestKubeStateMetricsServesTheRecommendation: kube-state-metrics, run with the custom resource
// state configuration its docs give for VerticalPodAutoscalers, serves the recommendation
// Switchboard writes: the container's target, bounds and uncapped target, CPU in cores and
// memory in bytes, labelled with the VPA and its target.
func TestKubeStateMetricsServesTheRecommendation(t *testing.T) {
	version, err := kubeStateMetricsVersion()
	if err != nil {
		t.Fatal(err)
	}
	config, err := documentedVPAConfig(version)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	binary, configFile, kubeconfig := filepath.Join(dir, "kube-state-metrics"), filepath.Join(dir, "vpa.yaml"), filepath.Join(dir, "kubeconfig")
	build := exec.Command("go", "build", "-o", binary, kubeStateMetricsModule)
	build.Dir = kubeStateMetricsTool
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kube-state-metrics: %v\n%s", err, out)
	}
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config, ""); err != nil {
		t.Fatal(err)
	}
	vpa, vpas := recommendedVPA(t)

	metricsAddress, err := testenv.LoopbackAddress()
	if err != nil {
		t.Fatal(err)
	}
	telemetryAddress, err := testenv.LoopbackAddress()
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(metricsAddress, ":")
	telemetryHost, telemetryPort, _ := strings.Cut(telemetryAddress, ":")
	ksm := testenv.RunProcess(t, testenv.Command{Binary: binary, MetricsAddress: metricsAddress, Args: []string{
		"--kubeconfig=" + kubeconfig, "--namespaces=" + vpa.Namespace,
		"--custom-resource-state-only", "--custom-resource-state-config-file=" + configFile,
		"--host=" + host, "--port=" + port, "--telemetry-host=" + telemetryHost, "--telemetry-port=" + telemetryPort,
	}})

	// The recommendation moves as usage comes in: served and written must agree at one moment.
	ctx := context.Background()
	testenv.Eventually(t, timeout, func() error {
		got, err := vpas.AutoscalingV1().VerticalPodAutoscalers(vpa.Namespace).Get(ctx, vpa.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		families, err := ksm.Families(ctx)
		if err != nil {
			return err
		}
		return servedAsWritten(families, got)
	})
}

// servedAsWritten says how the recommendation kube-state-metrics serves differs from vpa's.
func servedAsWritten(families map[string]*dto.MetricFamily, vpa *vpatypes.VerticalPodAutoscaler) error {
	var problems []string
	for _, c := range vpa.Status.Recommendation.ContainerRecommendations {
		for field, values := range map[string]corev1.ResourceList{"target": c.Target, "lowerbound": c.LowerBound,
			"upperbound": c.UpperBound, "uncappedtarget": c.UncappedTarget} {
			for _, resource := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				name := fmt.Sprintf("kube_verticalpodautoscaler_status_recommendation_containerrecommendations_%s_%s", field, resource)
				want := values[resource]
				got, ok := gauge(families[name], map[string]string{"namespace": vpa.Namespace, "verticalpodautoscaler": vpa.Name,
					"container": c.ContainerName, "resource": string(resource),
					"target_api_version": "apps/v1", "target_kind": "Deployment", "target_name": vpa.Spec.TargetRef.Name})
				switch {
				case !ok:
					problems = append(problems, fmt.Sprintf("%s of container %s: not served", name, c.ContainerName))
				case math.Abs(got-want.AsApproximateFloat64()) > 1e-9*math.Max(1, math.Abs(got)):
					problems = append(problems, fmt.Sprintf("%s of container %s = %g, the status says %s", name, c.ContainerName, got, want.String()))
				}
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// gauge returns the value of family's sample whose labels include labels.
func gauge(family *dto.MetricFamily, labels map[string]string) (float64, bool) {
	for _, m := range family.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		matches := true
		for k, v := range labels {
			matches = matches && have[k] == v
		}
		if matches {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}
