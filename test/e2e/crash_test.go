package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// TestCrashSafety kills the manager with SIGKILL while 200 MyApps converge and starts another:
// every MyApp converges, with exactly one Deployment and one Service each, controlled by it.
func TestCrashSafety(t *testing.T) {
	t.Parallel()
	const n = 200
	ctx := context.Background()
	c := newCluster(t)
	args := c.Deploy(t, "default")
	kubeconfig, _ := c.ServiceAccountKubeconfig(t)
	ns := testenv.Namespace(t, c.admin, "e2e-crash-")
	first := startManager(t, kubeconfig, args, "--concurrency=myapp=4")
	for i := range n {
		createMyApp(t, c, ns, fmt.Sprintf("app-%03d", i), 1)
	}
	// Kill it in the middle of the work.
	waitDeployments(t, c, ns, n/4)
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}

	// The new manager waits out the killed one's Lease, then finishes the work.
	startManager(t, kubeconfig, args, "--concurrency=myapp=4")
	eventually(t, 5*time.Minute, func() error {
		return testenv.MyAppsConverged(ctx, c.admin, ns, n)
	})
	checkOneOfEachPerMyApp(t, c, ns, n)
}

// checkOneOfEachPerMyApp checks that ns holds exactly one Deployment and one Service per MyApp,
// each controlled by its MyApp: nothing duplicated, nothing orphaned.
func checkOneOfEachPerMyApp(t *testing.T, c *testCluster, ns string, n int) {
	t.Helper()
	ctx := context.Background()
	var apps v1alpha1.MyAppList
	var deployments appsv1.DeploymentList
	var services corev1.ServiceList
	for _, list := range []client.ObjectList{&apps, &deployments, &services} {
		if err := c.admin.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	if len(apps.Items) != n || len(deployments.Items) != n || len(services.Items) != n {
		t.Errorf("%d MyApps, %d Deployments, %d Services; want %d of each", len(apps.Items), len(deployments.Items), len(services.Items), n)
	}
	uids := map[string]string{}
	for _, app := range apps.Items {
		uids[app.Name] = string(app.UID)
	}
	var owned []client.Object
	for i := range deployments.Items {
		owned = append(owned, &deployments.Items[i])
	}
	for i := range services.Items {
		owned = append(owned, &services.Items[i])
	}
	for _, obj := range owned {
		owner := metav1.GetControllerOf(obj)
		if owner == nil || owner.Kind != "MyApp" || uids[obj.GetName()] != string(owner.UID) {
			t.Errorf("%T %s is not controlled by its MyApp: %+v", obj, obj.GetName(), owner)
		}
	}
}
