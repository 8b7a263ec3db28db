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
	"sigs.k8s.io/controller-runtime/pkg/metrics"

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

// settle waits until the controller has finished at least atLeast reconciles since it counted
// since, and then stays idle (nothing queued, no worker busy) for a few polls in a row: from
// then on, every event that came before has been handled.
func settle(t *testing.T, since float64, atLeast int) {
	t.Helper()
	settleController(t, configmapwatcher.ControllerName, since, atLeast)
}

// settleController is settle for any controller.
func settleController(t *testing.T, controller string, since float64, atLeast int) {
	t.Helper()
	idle := 0
	testenv.Eventually(t, timeout, func() error {
		total := reconcileTotalOf(t, controller)
		depth, active := gauge(t, controller, "workqueue_depth"), gauge(t, controller, "controller_runtime_active_workers")
		if total < since+float64(atLeast) || depth > 0 || active > 0 {
			idle = 0
			return fmt.Errorf("%v reconciles since %v (want at least %d), queue depth %v, active workers %v", total-since, since, atLeast, depth, active)
		}
		if idle++; idle < 5 {
			return fmt.Errorf("idle for %d polls", idle)
		}
		return nil
	})
}

// gauge sums the values of the gauge family name for controller in this process's
// controller-runtime metrics.
func gauge(t *testing.T, controller, name string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					sum += m.GetGauge().GetValue()
				}
			}
		}
	}
	return sum
}
