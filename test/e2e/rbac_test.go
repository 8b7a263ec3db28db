package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// TestShippedRBAC deploys the configmapwatcher overlay, the namespaced overlay and the installer
// (config/default with the image pinned, dist/install.yaml), each on a cluster of its own, and
// runs the manager as its ServiceAccount with the Deployment's own args: every controller of the
// set works under the shipped RBAC, and a controller outside the set is refused by the API
// server rather than half-working.
func TestShippedRBAC(t *testing.T) {
	t.Parallel()
	t.Run("configmapwatcher overlay", func(t *testing.T) {
		c := newCluster(t)
		args := c.Deploy(t, "overlays/configmapwatcher")
		kubeconfig, saConfig := c.ServiceAccountKubeconfig(t)
		m := startManager(t, kubeconfig, args)
		eventually(t, 90*time.Second, readyCheck(m))
		configMapWatcherWorks(t, c, testenv.Namespace(t, c.admin, "e2e-cmw-only-"))

		// The MyApp CRD exists (installed by someone else), but the overlay's RBAC does not
		// cover it: the API server refuses the ServiceAccount, and a manager told to run myapp
		// anyway never reports ready.
		c.Kubectl(t, "apply", "--server-side", "-k", root+"/config/crd")
		c.WaitEstablished(t, "crd/myapps.app.example.com")
		err := clientAs(t, saConfig).List(context.Background(), &v1alpha1.MyAppList{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("the ServiceAccount listing MyApps under the configmapwatcher RBAC: %v, want Forbidden", err)
		}
		if err := m.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
		outside := startManager(t, kubeconfig, args, "--controllers=myapp")
		time.Sleep(20 * time.Second)
		if outside.Ready(context.Background()) == nil {
			t.Errorf("a manager running myapp without its RBAC reports ready")
		}
		if log := outside.Output(); !strings.Contains(log, "forbidden") {
			t.Errorf("the manager's log does not show the API server's refusal:\n%s", log)
		}
	})

	t.Run("namespaced overlay", func(t *testing.T) {
		c := newCluster(t)
		ctx := context.Background()
		// The overlay's watched namespaces are the user's: they exist before it is applied.
		for _, ns := range []string{"team-a", "team-b", "elsewhere"} {
			if err := c.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
		}
		args := c.Deploy(t, "overlays/namespaced")
		kubeconfig, saConfig := c.ServiceAccountKubeconfig(t)
		sa := clientAs(t, saConfig)
		if err := sa.List(ctx, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
			t.Errorf("the ServiceAccount listing Secrets cluster-wide under the namespaced overlay: %v, want Forbidden", err)
		}
		if err := sa.List(ctx, &corev1.SecretList{}, client.InNamespace("elsewhere")); !apierrors.IsForbidden(err) {
			t.Errorf("the ServiceAccount listing Secrets of a namespace it does not watch: %v, want Forbidden", err)
		}
		if err := sa.List(ctx, &corev1.SecretList{}, client.InNamespace("team-a")); err != nil {
			t.Errorf("the ServiceAccount listing Secrets of a namespace it watches: %v", err)
		}
		m := startManager(t, kubeconfig, args)
		eventually(t, 90*time.Second, readyCheck(m))
		configMapWatcherWorks(t, c, "team-a")
		secretRollsPods(t, c, "team-b")
	})

	t.Run("installer", func(t *testing.T) {
		c := newCluster(t)
		container, args := c.DeployFile(t, installer)
		// The Deployment runs the image whose binary this test runs, pinned by its digest.
		if !strings.HasSuffix(container.Image, "@"+imageDigest) {
			t.Errorf("the installer's image %s is not pinned to the image under test, %s", container.Image, imageDigest)
		}
		kubeconfig, _ := c.ServiceAccountKubeconfig(t)
		m := startManager(t, kubeconfig, args, "--metrics-secure=false")
		eventually(t, 90*time.Second, readyCheck(m))
		ns := testenv.Namespace(t, c.admin, "e2e-installer-")
		configMapWatcherWorks(t, c, ns)
		myAppAndVerticalScalerWork(t, c, ns)
		builds, err := m.MetricByLabel(context.Background(), "switchboard_build_info", "version")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]float64{stampedVersion: 1}, builds); diff != "" {
			t.Errorf("switchboard_build_info by version (-the version make stamped +scraped):\n%s", diff)
		}
	})
}

// readyCheck checks the manager's /readyz: every controller's caches synced, which needs list
// and watch on every kind it watches.
func readyCheck(m *testenv.Process) func() error {
	return func() error {
		if exited, err := m.Exited(); exited {
			return fmt.Errorf("the manager exited: %v", err)
		}
		return m.Ready(context.Background())
	}
}

// configMapWatcherWorks opts a Deployment in and checks that it is recorded without a roll, and
// that a change of its ConfigMap's data rolls it (a config hash on its Pod template).
func configMapWatcherWorks(t *testing.T, c *testCluster, ns string) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: ns}, Data: map[string]string{"A": "1"}}
	if err := c.admin.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	d := testenv.ReloadedDeployment(ns, "watched", "config")
	if err := c.admin.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	// First sight: a record on the Deployment, no roll.
	eventually(t, 60*time.Second, func() error {
		if err := c.admin.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if d.Annotations[v1alpha1.ConfigStateAnnotation] == "" {
			return fmt.Errorf("no %s on the opted-in Deployment", v1alpha1.ConfigStateAnnotation)
		}
		return nil
	})
	if hash := d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]; hash != "" {
		t.Errorf("config hash %q at first sight, want none", hash)
	}
	cm.Data["A"] = "2"
	if err := c.admin.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		if err := c.admin.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation] == "" {
			return fmt.Errorf("no config hash after the ConfigMap changed")
		}
		return nil
	})
}

// myAppAndVerticalScalerWork checks that a MyApp reaches Running with every replica ready
// (kwok makes the Pods Ready), that a VerticalScaler finds the MyApp's Deployment, that
// deleting the VerticalScaler leaves the Deployment, and that deleting the MyApp lets the
// garbage collector remove its Deployment and Service.
func myAppAndVerticalScalerWork(t *testing.T, c *testCluster, ns string) {
	t.Helper()
	ctx := context.Background()
	app := &v1alpha1.MyApp{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 3, Port: 8080},
	}
	if err := c.admin.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, func() error {
		if err := c.admin.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
			return err
		}
		if app.Status.Phase != v1alpha1.MyAppRunning || app.Status.ReadyReplicas != 3 {
			return fmt.Errorf("MyApp phase %q, %d ready replicas; want Running, 3", app.Status.Phase, app.Status.ReadyReplicas)
		}
		return nil
	})

	vs := &v1alpha1.VerticalScaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       v1alpha1.VerticalScalerSpec{DeploymentName: "web", UpdateMode: v1alpha1.UpdateModeOff},
	}
	if err := c.admin.Create(ctx, vs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		if err := c.admin.Get(ctx, client.ObjectKeyFromObject(vs), vs); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(vs.Status.Conditions, v1alpha1.ConditionTargetFound) {
			return fmt.Errorf("VerticalScaler conditions %v: want %s True", vs.Status.Conditions, v1alpha1.ConditionTargetFound)
		}
		return nil
	})

	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	if err := c.admin.Delete(ctx, vs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		err := c.admin.Get(ctx, client.ObjectKeyFromObject(vs), vs)
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("VerticalScaler not gone yet: %v", err)
		}
		return nil
	})
	if err := c.admin.Get(ctx, client.ObjectKeyFromObject(deployment), deployment); err != nil {
		t.Errorf("the Deployment after deleting the VerticalScaler: %v, want it kept", err)
	}

	if err := c.admin.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, func() error {
		dErr := c.admin.Get(ctx, client.ObjectKeyFromObject(deployment), &appsv1.Deployment{})
		sErr := c.admin.Get(ctx, client.ObjectKeyFromObject(deployment), &corev1.Service{})
		if !apierrors.IsNotFound(dErr) || !apierrors.IsNotFound(sErr) {
			return fmt.Errorf("after deleting the MyApp: Deployment %v, Service %v; want both garbage-collected", dErr, sErr)
		}
		return nil
	})
}

// secretRollsPods opts a Deployment of ns in on a Secret it takes a key of, waits for its Pods,
// changes that key and waits until every Pod was replaced.
func secretRollsPods(t *testing.T, c *testCluster, ns string) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token"}, StringData: map[string]string{"token": "one"}}
	if err := c.admin.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	replicas := int32(2)
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27", Env: []corev1.EnvVar{{Name: "TOKEN",
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "token"}, Key: "token"}}}}}}}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "client", Annotations: map[string]string{v1alpha1.ReloaderSecretAutoAnnotation: "true"}},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: selectorOf("client"), Template: templateOf("client", spec)},
	}
	if err := c.admin.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	before := waitPodsReady(t, c, d, nil)
	eventually(t, 60*time.Second, func() error {
		if err := c.admin.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if d.Annotations[v1alpha1.ConfigStateAnnotation] == "" {
			return fmt.Errorf("Deployment %s/client not recorded yet", ns)
		}
		return nil
	})
	if err := c.admin.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatal(err)
	}
	secret.Data = map[string][]byte{"token": []byte("two")}
	if err := c.admin.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitPodsReady(t, c, d, before)
	waitRollEvent(t, c, ns, "client", "Secret token: token changed")
}
