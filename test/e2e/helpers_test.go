package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/testenv"
)

// startManager runs the manager binary of the tests with its Deployment's args, as the
// kubeconfig's user (testenv.RunManager); extra flags come last and win.
func startManager(t *testing.T, kubeconfig string, deploymentArgs []string, extra ...string) *testenv.Process {
	t.Helper()
	return testenv.RunManager(t, manager, kubeconfig, deploymentArgs, extra...)
}

// clientAs returns a client that authenticates with cfg.
func clientAs(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eventually polls check until it returns nil or timeout passes; four times a second, not
// faster, because checks list objects of a cluster that also runs the controllers under test.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	testenv.Poll(t, timeout, 250*time.Millisecond, check)
}

// createMyApp creates a MyApp running nginx:1.27. A kube-apiserver that has just started
// answers a MyApp create with 503 until its admission policy plugin has read the MyApp schema
// (it polls the OpenAPI every 5 s): that answer is retried, as a client of a restarted API
// server would.
func createMyApp(t *testing.T, c *testCluster, ns, name string, replicas int32) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		app := &v1alpha1.MyApp{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: replicas, Port: 8080},
		}
		err := c.admin.Create(context.Background(), app)
		if err != nil && !apierrors.IsServiceUnavailable(err) {
			t.Fatal(err)
		}
		return err
	})
}

// waitDeployments waits until ns holds at least n Deployments.
func waitDeployments(t *testing.T, c *testCluster, ns string, n int) {
	t.Helper()
	eventually(t, 2*time.Minute, func() error {
		var deployments appsv1.DeploymentList
		if err := c.admin.List(context.Background(), &deployments, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(deployments.Items) < n {
			return fmt.Errorf("%d Deployments so far, waiting for %d", len(deployments.Items), n)
		}
		return nil
	})
}
