package configmapwatcher_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/configmapwatcher"
	"github.com/example/switchboard/internal/podrefs"
	"github.com/example/switchboard/internal/testenv"
)

// rolloutCRD is a minimal Rollout CRD of our own: the fields the controller reads and writes.
var rolloutCRD = envtest.CRDInstallOptions{Paths: []string{filepath.Join("testdata", "rollouts.argoproj.io.yaml")}}

// rolloutsServed says whether the API server serves argoproj.io/v1alpha1 Rollouts.
func rolloutsServed(t *testing.T) bool {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	resources, err := dc.ServerResourcesForGroupVersion("argoproj.io/v1alpha1")
	if err != nil {
		return false
	}
	for _, r := range resources.APIResources {
		if r.Kind == "Rollout" {
			return true
		}
	}
	return false
}

// installCRDs installs CRDs until the test ends, and then waits until served says they are
// gone, so that a later test finds the API server without them.
func installCRDs(t *testing.T, crds envtest.CRDInstallOptions, served func(*testing.T) bool) {
	t.Helper()
	if _, err := envtest.InstallCRDs(env.Config, crds); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(env.Config, crds); err != nil {
			t.Error(err)
		}
		testenv.Eventually(t, time.Minute, func() error {
			if served(t) {
				return fmt.Errorf("CRDs %v are still served", crds.Paths)
			}
			return nil
		})
	})
}

// logLines records a manager's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

// count returns how many lines hold every one of parts.
func (l *logLines) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// startLoggedManager starts a manager whose log lines are recorded.
func startLoggedManager(t *testing.T, args ...string) (*testenv.Manager, *logLines) {
	t.Helper()
	lines := &logLines{}
	m := env.StartReplica(t, testenv.Replica{Logger: funcr.New(lines.add, funcr.Options{Verbosity: 0})}, args...)
	return m, lines
}

// rollout returns an Argo Rollout running spec, with annotations.
func rollout(t *testing.T, ns, name string, annotations map[string]string, spec corev1.PodSpec) *unstructured.Unstructured {
	t.Helper()
	if len(spec.Containers) == 0 {
		spec.Containers = []corev1.Container{{Name: "app", Image: "nginx:1.27"}}
	}
	u := configmapwatcher.Rollouts.New()
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetAnnotations(annotations)
	_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
	_ = unstructured.SetNestedMap(u.Object, map[string]any{"canary": map[string]any{"steps": []any{map[string]any{"setWeight": int64(20)}}}}, "spec", "strategy")
	if err := podrefs.SetRolloutTemplate(u, &corev1.PodTemplateSpec{Spec: spec}); err != nil {
		t.Fatal(err)
	}
	return u
}

// getRollout reads a Rollout.
func getRollout(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := configmapwatcher.Rollouts.New()
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestRollouts: without the Rollout CRD the Rollouts' controller is idle and the manager says
// so once, the other controllers running; with it, Rollouts are rolled as the others, through
// the Pod template's annotation, or, with Reloader's rollout-strategy "restart", through
// spec.restartAt, leaving the rest of the Rollout as it is.
func TestRollouts(t *testing.T) {
	ctx := context.Background()
	t.Run("idle without the CRD", func(t *testing.T) {
		if rolloutsServed(t) {
			t.Fatal("the Rollout CRD is installed before the test that needs it absent")
		}
		ns := env.Namespace(t, "cmw-norollouts-")
		k := kinds[0]
		create(t, configMap(ns, "app", map[string]string{"k": "v1"}), k.workload(ns, "web", "true", envFrom("app")))
		_, lines := startLoggedManager(t, "--controllers=configmapwatcher")
		k.waitRecorded(t, ns, "web")
		if n := lines.count("Controller idle", configmapwatcher.Rollouts.ControllerName, "argoproj.io/v1alpha1 Rollout"); n != 1 {
			t.Errorf("%d log lines say the Rollouts' controller is idle, want 1", n)
		}
	})

	installCRDs(t, rolloutCRD, rolloutsServed)
	t.Run("rolled", func(t *testing.T) {
		ns := env.Namespace(t, "cmw-rollouts-")
		create(t, configMap(ns, "app", map[string]string{"k": "v1"}),
			rollout(t, ns, "canary", map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"}, envFrom("app")),
			rollout(t, ns, "restart", map[string]string{v1alpha1.ReloadAnnotation: "true", v1alpha1.ReloaderRolloutStrategyAnnotation: "restart"}, envFrom("app")))
		_, lines := startLoggedManager(t, "--controllers=configmapwatcher")
		var before map[string]*unstructured.Unstructured
		testenv.Eventually(t, timeout, func() error {
			before = map[string]*unstructured.Unstructured{}
			for _, name := range []string{"canary", "restart"} {
				before[name] = getRollout(t, ns, name)
				if before[name].GetAnnotations()[v1alpha1.ConfigStateAnnotation] == "" {
					return fmt.Errorf("Rollout %s not recorded yet", name)
				}
			}
			return nil
		})
		if n := lines.count("Controller idle", configmapwatcher.Rollouts.ControllerName); n != 0 {
			t.Error("the Rollouts' controller says it is idle with the CRD installed")
		}
		for name, r := range before {
			if hash := podrefs.PodTemplate(r).Annotations[v1alpha1.ConfigHashAnnotation]; hash != "" {
				t.Errorf("Rollout %s rolled at first sight", name)
			}
		}
		for i := range 2 {
			updateConfigMap(t, ns, "app", map[string]string{"k": fmt.Sprintf("v%d", i+2)})
			var after map[string]*unstructured.Unstructured
			testenv.Eventually(t, timeout, func() error {
				after = map[string]*unstructured.Unstructured{"canary": getRollout(t, ns, "canary"), "restart": getRollout(t, ns, "restart")}
				if hash := podrefs.PodTemplate(after["canary"]).Annotations[v1alpha1.ConfigHashAnnotation]; hash == "" || hash == podrefs.PodTemplate(before["canary"]).Annotations[v1alpha1.ConfigHashAnnotation] {
					return fmt.Errorf("Rollout canary not rolled yet")
				}
				if restartAtOf(after["restart"]) == "" || restartAtOf(after["restart"]) == restartAtOf(before["restart"]) && i > 0 {
					return fmt.Errorf("Rollout restart not restarted yet (restartAt %q)", restartAtOf(after["restart"]))
				}
				return nil
			})
			if hash := podrefs.PodTemplate(after["restart"]).Annotations[v1alpha1.ConfigHashAnnotation]; hash != "" {
				t.Errorf("Rollout restart's Pod template changed (config hash %q): restart must go through spec.restartAt", hash)
			}
			if _, err := time.Parse(time.RFC3339, restartAtOf(after["restart"])); err != nil {
				t.Errorf("spec.restartAt: %v", err)
			}
			for name, r := range after {
				keep := func(u *unstructured.Unstructured) []any {
					replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
					strategy, _, _ := unstructured.NestedMap(u.Object, "spec", "strategy")
					return []any{replicas, strategy, podrefs.PodTemplate(u).Spec.Containers}
				}
				if diff := cmp.Diff(keep(before[name]), keep(r)); diff != "" {
					t.Errorf("Rollout %s: what the controller does not own changed (-before +after):\n%s", name, diff)
				}
			}
			before = after
			// restartAt has a resolution of a second: the second change waits for the next one.
			time.Sleep(1100 * time.Millisecond)
		}
		if err := env.Client.DeleteAllOf(ctx, configmapwatcher.Rollouts.New(), client.InNamespace(ns)); err != nil {
			t.Error(err)
		}
	})
}

// restartAtOf returns a Rollout's spec.restartAt.
func restartAtOf(u *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(u.Object, "spec", "restartAt")
	return s
}
