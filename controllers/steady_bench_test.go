package controllers_test

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
	"github.com/example/switchboard/internal/testenv"
)

// writableResources are every resource one of the three controllers may write.
var writableResources = []string{"myapps", "myapps/status", "deployments", "services", "verticalscalers/status", "events"}

// BenchmarkSharedDeploymentsSteadyState runs the three controllers on shared Deployments: per
// set a MyApp taking env from a ConfigMap changed once (so the configmapwatcher owns the Pod
// template's hash)
// and a VerticalScaler in Auto on its Deployment (so the verticalscaler owns the container's
// resources), with Pods reporting usage. Once all three have written their part, it restarts
// the manager (a forced resync of everything) with periodic resyncs, and counts the API server's
// writes over a window (60 s; 10 s under SWITCHBOARD_BENCH_SMOKE): the three field managers
// must never undo each other, so there must be none.
func BenchmarkSharedDeploymentsSteadyState(b *testing.B) {
	sets, window := 20, time.Minute
	if os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" {
		sets, window = 3, 10*time.Second
	}
	ctx := context.Background()
	ns := env.Namespace(b, "shared-")
	args := []string{"--controllers=*", "--watch-namespaces=" + ns, "--usage-source=pod-annotations", "--usage-interval=1s"}
	m := env.StartManager(b, append(args, "--resync-interval=0")...)
	for i := range sets {
		createSharedSet(b, ctx, ns, fmt.Sprintf("app-%02d", i))
	}
	for i := range sets {
		changeOnceRecorded(b, ctx, ns, fmt.Sprintf("app-%02d", i))
	}
	for i := range sets {
		waitAllThreeApplied(b, ctx, ns, fmt.Sprintf("app-%02d", i))
	}
	// The Deployments' last changes make myapp write the MyApps' status once more: stopping
	// before that would leave it to the measured window.
	// (The verticalscaler is never quiet here: the usage source triggers it every second.)
	testenv.WaitQuiet(b, testenv.InProcess, testenv.Quiet{Controllers: []string{"myapp", "configmapwatcher-deployments"},
		Idle: true, For: 3 * time.Second, Interval: 500 * time.Millisecond, Timeout: 2 * time.Minute})
	m.Stop()

	for range b.N {
		before, err := env.APIWrites(ctx)
		if err != nil {
			b.Fatal(err)
		}
		reconcilesBefore := reconcilesPerController(b)
		m := env.StartManager(b, append(args, fmt.Sprintf("--resync-interval=%s", window/3))...)
		time.Sleep(window)
		after, err := env.APIWrites(ctx)
		if err != nil {
			b.Fatal(err)
		}
		m.Stop()
		for name, n := range reconcilesPerController(b) {
			if n-reconcilesBefore[name] < float64(2*sets) {
				b.Errorf("controller %s reconciled %v times in the window, want at least %d: the resync did not cover it", name, n-reconcilesBefore[name], 2*sets)
			}
		}
		var writes float64
		for _, r := range writableResources {
			writes += after[r] - before[r]
		}
		b.ReportMetric(writes, "steady-writes")
		if writes != 0 {
			b.Errorf("%v writes in a steady window on shared Deployments (%v before, %v after)", writes, before, after)
		}
	}
	b.ReportMetric(float64(sets), "sets")
}

func createSharedSet(b *testing.B, ctx context.Context, ns, name string) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"LEVEL": "info"}}
	app := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080,
			EnvFrom: []v1alpha1.ConfigMapEnvSource{{ConfigMapName: name}}}}
	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.VerticalScalerSpec{DeploymentName: name, UpdateMode: v1alpha1.UpdateModeAuto}}
	// A Pod of the MyApp's Deployment (envtest runs no kubelet) reporting steady usage.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-pod",
			Labels:      map[string]string{"app.kubernetes.io/name": "myapp", "app.kubernetes.io/instance": name},
			Annotations: map[string]string{v1alpha1.UsageAnnotationPrefix + "app": "cpu=300m,memory=200Mi"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	for _, obj := range []client.Object{cm, app, vs, pod} {
		if err := env.Client.Create(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
}

// changeOnceRecorded waits until the configmapwatcher has recorded the set's Deployment, then
// changes its ConfigMap's data, so that it rolls it once and owns its Pod template's hash.
func changeOnceRecorded(b *testing.B, ctx context.Context, ns, name string) {
	d := &appsv1.Deployment{}
	testenv.Eventually(b, 2*time.Minute, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		if d.Annotations[v1alpha1.ConfigStateAnnotation] == "" {
			return fmt.Errorf("%s: no config record yet", name)
		}
		return nil
	})
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		b.Fatal(err)
	}
	cm.Data["LEVEL"] = "debug"
	if err := env.Client.Update(ctx, cm); err != nil {
		b.Fatal(err)
	}
}

// waitAllThreeApplied waits until the Deployment carries each controller's part: myapp's image,
// the configmapwatcher's hash and the verticalscaler's requests.
func waitAllThreeApplied(b *testing.B, ctx context.Context, ns, name string) {
	d := &appsv1.Deployment{}
	testenv.Eventually(b, 2*time.Minute, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		c := d.Spec.Template.Spec.Containers[0]
		switch {
		case d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation] == "":
			return fmt.Errorf("%s: no config hash yet", name)
		case c.Resources.Requests.Cpu().IsZero():
			return fmt.Errorf("%s: no CPU request from the verticalscaler yet", name)
		}
		return nil
	})
}

func reconcilesPerController(b *testing.B) map[string]float64 {
	out := map[string]float64{}
	for _, name := range []string{"myapp", "verticalscaler", "configmapwatcher-deployments"} {
		n, err := testenv.ReconcileTotal(name)
		if err != nil {
			b.Fatal(err)
		}
		out[name] = n
	}
	return out
}
