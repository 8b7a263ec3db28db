package configmapwatcher_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/configmapwatcher"
	"github.com/example/switchboard/internal/testenv"
)

// env is the control plane shared by the tests of this package; each test starts its own
// manager with only the configmapwatcher controller, through the same flags and table as
// main.go.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env))
}

const timeout = 20 * time.Second

func create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

// deployment returns a Deployment running spec, opted in with reload when reload is not empty.
func deployment(ns, name, reload string, spec corev1.PodSpec) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	if reload != "" {
		d.Annotations = map[string]string{v1alpha1.ReloadAnnotation: reload}
	}
	if len(d.Spec.Template.Spec.Containers) == 0 {
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx:1.27"}}
	}
	return d
}

// envFrom is a Pod spec whose container takes its environment from configMap.
func envFrom(configMap string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}}}}
}

// hashes returns the config hash of every Deployment in ns, "" for none.
func hashes(t *testing.T, ns string) map[string]string {
	t.Helper()
	var list appsv1.DeploymentList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range list.Items {
		out[d.Name] = d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]
	}
	return out
}

// resourceVersions returns the resourceVersion of every Deployment in ns: any write that
// changes a Deployment changes it.
func resourceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	var list appsv1.DeploymentList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range list.Items {
		out[d.Name] = d.ResourceVersion
	}
	return out
}

// waitHashed waits until each named Deployment in ns has a config hash different from the one
// in before ("" when it had none), and returns the hashes of all.
func waitHashed(t *testing.T, ns string, before map[string]string, names ...string) map[string]string {
	t.Helper()
	var now map[string]string
	testenv.Eventually(t, timeout, func() error {
		now = hashes(t, ns)
		for _, name := range names {
			if now[name] == "" || now[name] == before[name] {
				return fmt.Errorf("Deployment %s: config hash %q, want a new one (was %q)", name, now[name], before[name])
			}
		}
		return nil
	})
	return now
}

// deploymentWrites returns how many writes to Deployments the API server has served.
func deploymentWrites(t *testing.T) float64 {
	t.Helper()
	writes, err := env.APIWrites(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return writes["deployments"]
}

func reconcileTotal(t *testing.T) float64 {
	t.Helper()
	return reconcileTotalOf(t, configmapwatcher.ControllerName)
}

func reconcileTotalOf(t *testing.T, controller string) float64 {
	t.Helper()
	total, err := testenv.ReconcileTotal(controller)
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// settledOf is when the tests count controller as having handled every event that came
// before: at least atLeast reconciles since its count was since, then nothing queued, no worker
// busy and the count unchanged over five polls in a row.
func settledOf(controller string, since float64, atLeast int) testenv.Quiet {
	return testenv.Quiet{Controllers: []string{controller}, Since: since, AtLeast: atLeast, Idle: true,
		For: 200 * time.Millisecond, Interval: 50 * time.Millisecond, Timeout: timeout}
}

// settle waits until the configmapwatcher has settled (settledOf).
func settle(t *testing.T, since float64, atLeast int) {
	t.Helper()
	testenv.WaitQuiet(t, testenv.InProcess, settledOf(configmapwatcher.ControllerName, since, atLeast))
}
