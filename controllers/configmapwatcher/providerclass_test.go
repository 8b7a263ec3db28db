package configmapwatcher_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// providerCRDs are the Secrets Store CSI driver's CRDs, vendored unchanged from the driver.
var providerCRDs = envtest.CRDInstallOptions{Paths: []string{filepath.Join("..", "..", "testdata", "crds", "secrets-store-csi-driver")}}

var (
	providerClassGVK  = schema.GroupVersionKind{Group: "secrets-store.csi.x-k8s.io", Version: "v1", Kind: "SecretProviderClass"}
	providerStatusGVK = schema.GroupVersionKind{Group: "secrets-store.csi.x-k8s.io", Version: "v1", Kind: "SecretProviderClassPodStatus"}
)

// providerStatusesServed says whether the API server serves SecretProviderClassPodStatuses.
func providerStatusesServed(t *testing.T) bool {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	resources, err := dc.ServerResourcesForGroupVersion(providerStatusGVK.GroupVersion().String())
	if err != nil {
		return false
	}
	for _, r := range resources.APIResources {
		if r.Kind == providerStatusGVK.Kind {
			return true
		}
	}
	return false
}

// providerClass returns a SecretProviderClass of the Vault provider.
func providerClass(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(providerClassGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, "vault", "spec", "provider")
	return u
}

// providerStatus returns the SecretProviderClassPodStatus the driver writes for a Pod that
// mounts class, with the version of each object (as the driver names it: pod, namespace,
// class).
func providerStatus(ns, pod, class string, versions map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(providerStatusGVK)
	u.SetNamespace(ns)
	u.SetName(pod + "-" + ns + "-" + class)
	setVersions(u, class, pod, versions)
	return u
}

func setVersions(u *unstructured.Unstructured, class, pod string, versions map[string]string) {
	var objects []any
	for id, version := range versions {
		objects = append(objects, map[string]any{"id": id, "version": version})
	}
	_ = unstructured.SetNestedField(u.Object, map[string]any{"podName": pod, "secretProviderClassName": class, "mounted": true,
		"targetPath": "/var/lib/kubelet/pods/" + pod + "/volumes/kubernetes.io~csi/secrets/mount", "objects": objects}, "status")
}

// rotate writes new versions in a Pod's SecretProviderClassPodStatus, as the driver's rotation
// does when the store's secrets change.
func rotate(t *testing.T, ns, pod, class string, versions map[string]string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(providerStatusGVK)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pod + "-" + ns + "-" + class}, u); err != nil {
		t.Fatal(err)
	}
	setVersions(u, class, pod, versions)
	if err := env.Client.Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}

// csiSpec is a Pod spec whose container takes its environment from configMap and mounts class
// through the Secrets Store CSI driver.
func csiSpec(configMap, class string) corev1.PodSpec {
	spec := envFrom(configMap)
	spec.Volumes = []corev1.Volume{{Name: "secrets", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: "secrets-store.csi.k8s.io", VolumeAttributes: map[string]string{"secretProviderClass": class}}}}}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "secrets", MountPath: "/mnt/secrets-store"}}
	return spec
}

// TestSecretProviderClasses: with --enable-csi-integration, workloads roll on the versions the
// Secrets Store CSI driver reports for the SecretProviderClasses their Pods mount, through
// Reloader's annotations: once per change of the store, when no Pod reports the recorded
// version any more, and not when a Pod first mounts them; not through our annotation, which
// names ConfigMaps and Secrets. Without the driver's CRD the manager says so at start and rolls
// on ConfigMaps and Secrets as before.
func TestSecretProviderClasses(t *testing.T) {
	t.Run("without the CRD", func(t *testing.T) {
		if providerStatusesServed(t) {
			t.Fatal("the driver's CRDs are installed before the test that needs them absent")
		}
		ns := env.Namespace(t, "cmw-nocsi-")
		k := kinds[0]
		create(t, configMap(ns, "app", map[string]string{"k": "v1"}), k.workload(ns, "web", "true", csiSpec("app", "vault")))
		_, lines := startLoggedManager(t, "--controllers=configmapwatcher", "--enable-csi-integration")
		k.waitRecorded(t, ns, "web")
		if n := lines.count("SecretProviderClasses not watched", "secrets-store.csi.x-k8s.io/v1 SecretProviderClassPodStatus"); n != 1 {
			t.Errorf("%d log lines say SecretProviderClasses are not watched, want 1", n)
		}
	})

	installCRDs(t, providerCRDs, providerStatusesServed)
	_, lines := startLoggedManager(t, "--controllers=configmapwatcher", "--enable-csi-integration")
	testenv.Eventually(t, timeout, func() error {
		if lines.count("Watching SecretProviderClassPodStatuses") != 1 {
			return fmt.Errorf("the manager does not say it watches SecretProviderClassPodStatuses yet")
		}
		return nil
	})
	forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
		v1 := map[string]string{"api_key": "1"}
		create(t, configMap(ns, "app", map[string]string{"k": "v1"}), providerClass(ns, "vault"), providerStatus(ns, "pod-a", "vault", v1))
		workloads := map[string]map[string]string{
			"typed": {v1alpha1.ReloaderSecretProviderClassAutoAnnotation: "true"},
			"auto":  {v1alpha1.ReloaderAutoAnnotation: "true"},
			"named": {v1alpha1.ReloaderSecretProviderClassReloadAnnotation: "vault"},
			"ours":  {v1alpha1.ReloadAnnotation: "true"},
		}
		for name, annotations := range workloads {
			w := k.workload(ns, name, "", csiSpec("app", "vault"))
			w.SetAnnotations(annotations)
			create(t, w)
		}
		rolls := k.countRolls(t, ns)
		states := k.waitRecorded(t, ns, "typed", "auto", "named", "ours")
		for name, s := range states {
			if s.Hash != "" {
				t.Errorf("%s rolled at first sight", name)
			}
			if want := name != "ours"; strings.Contains(s.Record, "SecretProviderClass/vault") != want {
				t.Errorf("%s's record %s: SecretProviderClass/vault in it is %v, want %v", name, s.Record, !want, want)
			}
		}

		// A second Pod mounts the class: its first status rolls nothing.
		since := k.reconcileTotal(t)
		create(t, providerStatus(ns, "pod-b", "vault", v1))
		// The first Pod rotated, the second not yet: the recorded version is still mounted.
		rotate(t, ns, "pod-a", "vault", map[string]string{"api_key": "2"})
		k.settle(t, since, 1)
		if got := rolls.take(t, k, ns); len(got) != 0 {
			t.Errorf("rolls while a Pod still reports the recorded version: %v, want none", got)
		}

		// Both rotated: one roll of each workload that rolls on the class.
		rotate(t, ns, "pod-b", "vault", map[string]string{"api_key": "2"})
		k.waitRolled(t, ns, states, "typed", "auto", "named")
		since = k.reconcileTotal(t)
		k.settle(t, since, 0)
		if diff := cmp.Diff(map[string]int{"typed": 1, "auto": 1, "named": 1}, rolls.take(t, k, ns)); diff != "" {
			t.Errorf("rolls after both Pods rotated (-want +got):\n%s", diff)
		}

		// A class first mounted after its workload was recorded, as when the driver mounts after
		// the workload's last event: the mount rolls nothing but is recorded, and the next
		// rotation rolls, as Reloader's.
		late := k.workload(ns, "late", "", csiSpec("app", "later"))
		late.SetAnnotations(map[string]string{v1alpha1.ReloaderSecretProviderClassReloadAnnotation: "later"})
		since = k.reconcileTotal(t)
		create(t, providerClass(ns, "later"), late)
		k.settle(t, since, 1)
		create(t, providerStatus(ns, "pod-c", "later", v1))
		var lateStates map[string]workloadState
		testenv.Eventually(t, timeout, func() error {
			lateStates = k.states(t, ns)
			if s := lateStates["late"]; s.Hash != "" || !strings.Contains(s.Record, "SecretProviderClass/later") {
				return fmt.Errorf("late: hash %q, record %s: want no roll and SecretProviderClass/later recorded", s.Hash, s.Record)
			}
			return nil
		})
		rotate(t, ns, "pod-c", "later", map[string]string{"api_key": "2"})
		k.waitRolled(t, ns, lateStates, "late")
		since = k.reconcileTotal(t)
		k.settle(t, since, 0)
		if diff := cmp.Diff(map[string]int{"late": 1}, rolls.take(t, k, ns)); diff != "" {
			t.Errorf("rolls of a class first mounted after the record (-want +got):\n%s", diff)
		}

		// The ConfigMap: the typed annotation leaves it out, as Reloader's.
		since = k.reconcileTotal(t)
		updateConfigMap(t, ns, "app", map[string]string{"k": "v2"})
		k.settle(t, since, 1)
		if diff := cmp.Diff(map[string]int{"auto": 1, "ours": 1}, rolls.take(t, k, ns)); diff != "" {
			t.Errorf("rolls after the ConfigMap changed (-want +got):\n%s", diff)
		}
	})
}
