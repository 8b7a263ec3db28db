package controllers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/indexers"
	"github.com/example/switchboard/internal/testenv"
)

// env is the control plane of the all-controllers suite.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env))
}

// readyChecks returns the names of the checks /readyz?verbose reports once every one passes.
func readyChecks(t *testing.T, addr string) []string {
	t.Helper()
	var checks []string
	testenv.Eventually(t, 30*time.Second, func() error {
		resp, err := http.Get("http://" + addr + "/readyz?verbose")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %d: %s", resp.StatusCode, body)
		}
		checks = nil
		for _, line := range strings.Split(string(body), "\n") {
			if name, ok := strings.CutPrefix(line, "[+]"); ok {
				checks = append(checks, strings.Fields(name)[0])
			}
		}
		return nil
	})
	sort.Strings(checks)
	return checks
}

func TestReadinessCheckPerEnabledController(t *testing.T) {
	for _, tc := range []struct {
		controllers string
		want        []string
	}{
		{"*", []string{"configmapwatcher-cronjobs", "configmapwatcher-daemonsets", "configmapwatcher-deployments",
			"configmapwatcher-jobs", "configmapwatcher-rollouts", "configmapwatcher-statefulsets", "myapp", "verticalpodautoscaler", "verticalscaler"}},
		{"*,-configmapwatcher", []string{"myapp", "verticalpodautoscaler", "verticalscaler"}},
		{"configmapwatcher,-configmapwatcher-cronjobs", []string{"configmapwatcher-daemonsets", "configmapwatcher-deployments",
			"configmapwatcher-jobs", "configmapwatcher-rollouts", "configmapwatcher-statefulsets"}},
		{"verticalscaler", []string{"verticalpodautoscaler", "verticalscaler"}},
		{"verticalscaler,-verticalpodautoscaler", []string{"verticalscaler"}},
	} {
		t.Run(tc.controllers, func(t *testing.T) {
			addr := testenv.FreeAddress(t)
			m := env.StartManager(t, "--controllers="+tc.controllers, "--health-probe-bind-address="+addr)
			if diff := cmp.Diff(tc.want, readyChecks(t, addr)); diff != "" {
				t.Errorf("readiness checks (-want +got):\n%s", diff)
			}
			m.Stop()
		})
	}
}

// TestOnlyEnabledControllersIndexesAreRegistered lists through each shared index on the
// manager's cache: that works for the indexes of enabled controllers and fails for the others,
// because the cache never registered them.
func TestOnlyEnabledControllersIndexesAreRegistered(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		controllers string
		want        map[string]bool // index field -> registered
	}{
		{"*", map[string]bool{indexers.VerticalScalerTargetField: true, indexers.WorkloadSourcesField: true}},
		{"myapp", map[string]bool{indexers.VerticalScalerTargetField: false, indexers.WorkloadSourcesField: false}},
		{"verticalscaler", map[string]bool{indexers.VerticalScalerTargetField: true, indexers.WorkloadSourcesField: false}},
	} {
		t.Run(tc.controllers, func(t *testing.T) {
			m := env.StartManager(t, "--controllers="+tc.controllers)
			if !m.GetCache().WaitForCacheSync(ctx) {
				t.Fatal("cache did not sync")
			}
			got := map[string]bool{
				indexers.VerticalScalerTargetField: m.GetCache().List(ctx, &v1alpha1.VerticalScalerList{},
					client.MatchingFields{indexers.VerticalScalerTargetField: "x"}) == nil,
				indexers.WorkloadSourcesField: m.GetCache().List(ctx, &appsv1.DeploymentList{},
					client.MatchingFields{indexers.WorkloadSourcesField: "x"}) == nil,
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("registered indexes (-want +got):\n%s", diff)
			}
			m.Stop()
		})
	}
}

// TestAllControllersTogether runs every controller on one Deployment: a MyApp with envFrom a
// ConfigMap (so the configmapwatcher records it, then rolls it) and a VerticalScaler naming its
// Deployment.
func TestAllControllersTogether(t *testing.T) {
	env.StartManager(t, "--controllers=*")
	ctx := context.Background()
	ns := env.Namespace(t, "all-")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"LEVEL": "info"}}
	app := &v1alpha1.MyApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"},
		Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 2, Port: 8080,
			EnvFrom: []v1alpha1.ConfigMapEnvSource{{ConfigMapName: "settings"}}},
	}
	vs := &v1alpha1.VerticalScaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"},
		Spec:       v1alpha1.VerticalScalerSpec{DeploymentName: "shared", UpdateMode: v1alpha1.UpdateModeOff},
	}
	for _, obj := range []client.Object{cm, app, vs} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	// First sight: the configmapwatcher records a baseline on the Deployment's metadata and
	// leaves its Pod template alone.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}}
	testenv.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if d.Annotations[v1alpha1.ConfigStateAnnotation] == "" {
			return fmt.Errorf("no config record on the Deployment yet")
		}
		return nil
	})
	if hash := d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]; hash != "" {
		t.Errorf("config hash %q on the Pod template at first sight, want none", hash)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(vs), vs); err != nil {
			return err
		}
		if c := findCondition(vs.Status.Conditions, v1alpha1.ConditionTargetFound); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("TargetFound = %+v", c)
		}
		return nil
	})

	// A ConfigMap data change rolls it.
	cm.Data["LEVEL"] = "debug"
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	var firstHash string
	testenv.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if firstHash = d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]; firstHash == "" {
			return fmt.Errorf("config hash not set after a data change")
		}
		return nil
	})
	record := d.Annotations[v1alpha1.ConfigStateAnnotation]

	// A myapp change rolls the Deployment through the myapp field manager; the watcher's
	// annotations must survive it.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
			return err
		}
		app.Spec.Image = "nginx:1.28"
		return env.Client.Update(ctx, app)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != "nginx:1.28" {
			return fmt.Errorf("image %q, want nginx:1.28", got)
		}
		return nil
	})
	if got := d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]; got != firstHash {
		t.Errorf("config hash after a myapp update = %q, want it kept as %q", got, firstHash)
	}
	if got := d.Annotations[v1alpha1.ConfigStateAnnotation]; got != record {
		t.Errorf("config record after a myapp update = %q, want it kept as %q", got, record)
	}

	// Another data change rolls it again; myapp's fields stay.
	cm.Data["LEVEL"] = "warn"
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation] == firstHash {
			return fmt.Errorf("config hash unchanged after a data change")
		}
		return nil
	})
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "nginx:1.28" {
		t.Errorf("image after the watcher's roll = %q, want nginx:1.28", got)
	}
}

func findCondition(conditions []metav1.Condition, t string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}
