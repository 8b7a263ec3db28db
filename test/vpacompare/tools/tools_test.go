package tools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vpatypes "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1"
	vpaclient "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/client/clientset/versioned"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// env is the control plane of this package's tests.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env))
}

const timeout = 30 * time.Second

// recommendedVPA creates, in a namespace of its own, a Deployment web with two Pods reporting
// usage, and a VerticalPodAutoscaler in Off mode for it written with the VPA's own client and
// types, as Goldilocks creates one per workload; it starts a manager, waits until the VPA has a
// recommendation, and returns the VPA as the VPA's client reads it.
func recommendedVPA(t *testing.T) (*vpatypes.VerticalPodAutoscaler, vpaclient.Interface) {
	t.Helper()
	env.InstallVPACRDs(t)
	ctx := context.Background()
	ns := env.Namespace(t, "tools-")
	labels := map[string]string{"app": "web"}
	containers := []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: containers}}}}
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "web-", Labels: labels,
			Annotations: map[string]string{v1alpha1.UsageAnnotationPrefix + "app": "cpu=300m,memory=200Mi"}},
			Spec: corev1.PodSpec{Containers: containers}}
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	vpas, err := vpaclient.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	off := vpatypes.UpdateModeOff
	vpa := &vpatypes.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "goldilocks-web"},
		Spec: vpatypes.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			UpdatePolicy: &vpatypes.PodUpdatePolicy{UpdateMode: &off}}}
	if _, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).Create(ctx, vpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.StartManager(t, "--controllers=verticalscaler", "--resync-interval=0", "--usage-source=pod-annotations", "--usage-interval=200ms")
	testenv.Eventually(t, timeout, func() error {
		got, err := vpas.AutoscalingV1().VerticalPodAutoscalers(ns).Get(ctx, vpa.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Recommendation == nil || len(got.Status.Recommendation.ContainerRecommendations) == 0 {
			return fmt.Errorf("no recommendation yet: status %+v", got.Status)
		}
		vpa = got
		return nil
	})
	return vpa, vpas
}

// TestGoldilocksReadsTheRecommendation: what Goldilocks reads of a VPA it created in Off mode,
// through the VPA's own client and types, is there: per container a target, lower and upper
// bound and uncapped target for cpu and memory, and RecommendationProvided=True.
func TestGoldilocksReadsTheRecommendation(t *testing.T) {
	vpa, _ := recommendedVPA(t)
	rec := vpa.Status.Recommendation.ContainerRecommendations[0]
	if rec.ContainerName != "app" {
		t.Errorf("recommendation for container %q, want app", rec.ContainerName)
	}
	for name, values := range map[string]corev1.ResourceList{"target": rec.Target, "lowerBound": rec.LowerBound,
		"upperBound": rec.UpperBound, "uncappedTarget": rec.UncappedTarget} {
		if values.Cpu().IsZero() || values.Memory().IsZero() {
			t.Errorf("%s = %v, want cpu and memory", name, values)
		}
	}
	provided := false
	for _, c := range vpa.Status.Conditions {
		provided = provided || (c.Type == vpatypes.RecommendationProvided && c.Status == corev1.ConditionTrue)
	}
	if !provided {
		t.Errorf("conditions %+v, want RecommendationProvided True", vpa.Status.Conditions)
	}
}

// TestKubectlDescribeVPA: `kubectl describe vpa` shows the recommendation and the conditions
// Switchboard wrote, as it shows the VPA recommender's.
func TestKubectlDescribeVPA(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is not on PATH: ", err)
	}
	vpa, _ := recommendedVPA(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config, vpa.Namespace); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "describe", "vpa", vpa.Name).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl describe vpa: %v\n%s", err, out)
	}
	for _, want := range []string{`Recommendation:\s+Container Recommendations:\s+Container Name:\s+app`,
		`Lower Bound:\s+Cpu:\s+\S+\s+Memory:\s+\S+`, `Target:\s+Cpu:\s+\S+\s+Memory:\s+\S+`,
		`Status:\s+True\s+Type:\s+RecommendationProvided`} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("kubectl describe vpa does not show %s:\n%s", want, out)
		}
	}
}
