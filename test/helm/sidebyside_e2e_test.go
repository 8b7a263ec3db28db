package helm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/manifests"
	"github.com/example/switchboard/internal/testenv"
)

// runningRelease is a release of the chart installed on a local cluster, with its managers
// running as its ServiceAccount.
type runningRelease struct {
	name string
	// leaderGroup is the leader election group whose leader the test waits for.
	leaderGroup string
	// leases are the Leases its managers may elect through (its Role's).
	leases   []string
	replicas []*testenv.Process
}

// TestE2ETwoReleasesInOneNamespace installs two releases of the chart in one namespace, as a
// team moving from Reloader and one moving from the VPA would: "reloader" with the
// configmapwatcher alone and "vpa" with the verticalscaler alone, two replicas each and the
// chart's default election (one Lease per manager). Each release's two managers run as its
// ServiceAccount with the args its Deployment renders (the image's binary, on a local
// cluster). Both releases then lead at once, through Leases of their own that their Roles
// allow (with the fixed Lease name of earlier releases one would have waited for the other's
// for ever), and both controllers do their work on one Deployment. `make test-e2e` runs it; it
// is skipped elsewhere.
func TestE2ETwoReleasesInOneNamespace(t *testing.T) {
	manager := os.Getenv("SWITCHBOARD_E2E_MANAGER")
	if os.Getenv("SWITCHBOARD_E2E") != "1" || manager == "" {
		t.Skip("needs a local cluster and the image's manager (SWITCHBOARD_E2E=1, SWITCHBOARD_E2E_MANAGER): run `make test-e2e`")
	}
	c := testenv.StartLocalCluster(t, 2)
	ctx := context.Background()
	if err := c.Admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	// The chart's default election, one Lease for the manager: the one two releases shared
	// when its name was fixed.
	const ha = "replicaCount: 2\n"
	releases := []*runningRelease{
		startRelease(t, c, manager, "reloader", ha+valuesFile(t, "ci/configmapwatcher-values.yaml"), "configmapwatcher-deployments"),
		startRelease(t, c, manager, "vpa", ha+valuesFile(t, "ci/verticalscaler-values.yaml"), "verticalscaler"),
	}

	// One replica of all four leads each group, and it is one of its own release's.
	var all []*testenv.Process
	var groups, wantLeases []string
	for _, r := range releases {
		all = append(all, r.replicas...)
		groups = append(groups, r.leaderGroup)
		wantLeases = append(wantLeases, r.leases...)
	}
	leaders := testenv.Leaders(t, all, groups...)
	for _, r := range releases {
		if !slices.Contains(r.replicas, leaders[r.leaderGroup]) {
			t.Errorf("%s is led by a replica of another release", r.leaderGroup)
		}
	}

	// Every Lease in the namespace is one of a release's, held; each release holds one at least.
	leases := &coordinationv1.LeaseList{}
	if err := c.Admin.List(ctx, leases, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	holding := map[string][]string{}
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			t.Errorf("Lease %s has no holder", l.Name)
		}
		i := slices.IndexFunc(releases, func(r *runningRelease) bool { return slices.Contains(r.leases, l.Name) })
		if i < 0 {
			t.Errorf("Lease %s is neither release's (%v)", l.Name, wantLeases)
			continue
		}
		holding[releases[i].name] = append(holding[releases[i].name], l.Name)
	}
	for _, r := range releases {
		if len(holding[r.name]) == 0 {
			t.Errorf("release %s holds no Lease of its own %v", r.name, r.leases)
		}
	}
	t.Logf("Leases: %v", holding)

	ns := testenv.Namespace(t, c.Admin, "two-releases-")
	bothControllersWork(t, c, ns)
}

// startRelease installs the release name of the chart with values in the test's namespace, as
// `helm install` would apply it, and runs two managers with its Deployment's args as its
// ServiceAccount.
func startRelease(t *testing.T, c *testenv.LocalCluster, manager, name, values, leaderGroup string) *runningRelease {
	t.Helper()
	manifest, err := releaseManifest(t, name, namespace, values)
	if err != nil {
		t.Fatalf("rendering %s: %v", name, err)
	}
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	_, args := c.DeployFile(t, path)
	objs, err := manifests.Decode([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, _ := c.ServiceAccountKubeconfigOf(t, namespace, managerDeployment(t, objs).Spec.Template.Spec.ServiceAccountName)
	opts, sel := testenv.ManagerOptions(t, args)
	r := &runningRelease{name: name, leaderGroup: leaderGroup, leases: controllers.LeaseNames(sel.Controllers, opts.LeaderElectResourceName)}
	for range 2 {
		r.replicas = append(r.replicas, testenv.RunManager(t, manager, kubeconfig, args, "--metrics-secure=false"))
	}
	return r
}

// bothControllersWork creates a Deployment opted in to the configmapwatcher on a ConfigMap,
// and a VerticalScaler for it: the reloader release records the Deployment's ConfigMap and
// rolls it when the ConfigMap changes, and the vpa release finds the Deployment.
func bothControllersWork(t *testing.T, c *testenv.LocalCluster, ns string) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: ns}, Data: map[string]string{"A": "1"}}
	if err := c.Admin.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	d := testenv.ReloadedDeployment(ns, "web", cm.Name)
	if err := c.Admin.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	vs := &v1alpha1.VerticalScaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       v1alpha1.VerticalScalerSpec{DeploymentName: d.Name, UpdateMode: v1alpha1.UpdateModeOff},
	}
	if err := c.Admin.Create(ctx, vs); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, time.Minute, 250*time.Millisecond, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if d.Annotations[v1alpha1.ConfigStateAnnotation] == "" {
			return fmt.Errorf("no %s on the opted-in Deployment", v1alpha1.ConfigStateAnnotation)
		}
		return nil
	})
	cm.Data["A"] = "2"
	if err := c.Admin.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, time.Minute, 250*time.Millisecond, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation] == "" {
			return fmt.Errorf("no config hash on the Deployment's Pod template after its ConfigMap changed")
		}
		return nil
	})
	testenv.Poll(t, time.Minute, 250*time.Millisecond, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(vs), vs); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(vs.Status.Conditions, v1alpha1.ConditionTargetFound) {
			return fmt.Errorf("VerticalScaler conditions %v: want %s True", vs.Status.Conditions, v1alpha1.ConditionTargetFound)
		}
		return nil
	})
}
