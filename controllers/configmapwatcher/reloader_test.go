package configmapwatcher_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
	"github.com/example/switchboard/internal/testenv"
)

// reloaderCases are workloads opted in only with Reloader's annotations, each using the
// ConfigMap "app" and the Secret "db"; want says which of the changes "app", "db", "app-2"
// (a ConfigMap no workload references) and "ignored" roll it.
var reloaderCases = []struct {
	name        string
	annotations map[string]string
	template    map[string]string
	want        []string
}{
	{"auto", map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"}, nil, []string{"app", "db"}},
	{"auto-on-template", nil, map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"}, []string{"app", "db"}},
	{"secret-auto", map[string]string{v1alpha1.ReloaderSecretAutoAnnotation: "true"}, nil, []string{"db"}},
	{"configmap-reload-pattern", map[string]string{v1alpha1.ReloaderConfigMapReloadAnnotation: "app-[0-9]+"}, nil, []string{"app-2"}},
	{"secret-reload", map[string]string{v1alpha1.ReloaderSecretReloadAnnotation: "db"}, nil, []string{"db"}},
	{"search", map[string]string{v1alpha1.ReloaderSearchAnnotation: "true"}, nil, []string{"db"}},
	{"auto-but-ignored", map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"}, nil, []string{"app", "db"}},
	{"auto-excluded", map[string]string{v1alpha1.ReloaderAutoAnnotation: "true", v1alpha1.ReloaderConfigMapExcludeAnnotation: "app"}, nil, []string{"db"}},
}

// TestReloaderAnnotations runs workloads opted in only with Reloader's annotations: auto (on
// the workload or its Pod template), typed auto, reload names and patterns, search with match
// on the source, ignore on the source, exclude. Each change rolls exactly the workloads
// Reloader would roll. With --reloader-annotations=false none of them is even recorded.
func TestReloaderAnnotations(t *testing.T) {
	t.Run("on", func(t *testing.T) {
		env.StartManager(t, "--controllers=configmapwatcher")
		forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
			createReloaderCases(t, k, ns)
			names := []string{"sentinel"}
			for _, tc := range reloaderCases {
				names = append(names, tc.name)
			}
			before := k.waitRecorded(t, ns, names...)
			counter := k.countRolls(t, ns)
			for i, change := range []string{"app", "db", "app-2", "ignored"} {
				t.Run(change, func(t *testing.T) {
					data := map[string]string{"k": fmt.Sprintf("v%d", i+2)}
					if change == "db" {
						updateSecret(t, ns, change, data)
					} else {
						updateConfigMap(t, ns, change, data)
					}
					updateConfigMap(t, ns, "sentinel", data)
					since := k.reconcileTotal(t)
					before = k.waitRolled(t, ns, before, "sentinel")
					k.settle(t, since, 0)
					var rolled []string
					for name := range counter.take(t, k, ns) {
						if name != "sentinel" {
							rolled = append(rolled, name)
						}
					}
					slices.Sort(rolled)
					var want []string
					for _, tc := range reloaderCases {
						if slices.Contains(tc.want, change) {
							want = append(want, tc.name)
						}
					}
					slices.Sort(want)
					if diff := cmp.Diff(want, rolled); diff != "" {
						t.Errorf("rolled on a change of %s (-want +got):\n%s", change, diff)
					}
				})
			}
		})
	})
	t.Run("off", func(t *testing.T) {
		env.StartManager(t, "--controllers=configmapwatcher", "--reloader-annotations=false")
		forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
			createReloaderCases(t, k, ns)
			k.waitRecorded(t, ns, "sentinel")
			k.settle(t, k.reconcileTotal(t), 0)
			for name, s := range k.states(t, ns) {
				if name != "sentinel" && (s.Record != "" || s.Hash != "") {
					t.Errorf("%s %s opted in with Reloader's annotations only was written with --reloader-annotations=false: %+v", k.name, name, s)
				}
			}
		})
	})
}

// createReloaderCases creates the sources and the workloads of reloaderCases, and a sentinel
// opted in with our annotation on the ConfigMap "sentinel". "db" carries Reloader's match
// annotation; "ignored" its ignore annotation, and every workload but the pattern's uses it.
func createReloaderCases(t *testing.T, k workloadKind, ns string) {
	t.Helper()
	match := secret(ns, "db", map[string]string{"k": "v1"})
	match.Annotations = map[string]string{v1alpha1.ReloaderMatchAnnotation: "true"}
	ignored := configMap(ns, "ignored", map[string]string{"k": "v1"})
	ignored.Annotations = map[string]string{v1alpha1.ReloaderIgnoreAnnotation: "true"}
	create(t, configMap(ns, "app", map[string]string{"k": "v1"}), configMap(ns, "app-2", map[string]string{"k": "v1"}),
		configMap(ns, "sentinel", map[string]string{"k": "v1"}), match, ignored)
	for _, tc := range reloaderCases {
		spec := envFrom("app")
		spec.Containers[0].EnvFrom = append(spec.Containers[0].EnvFrom, secretEnvFrom("db").Containers[0].EnvFrom...)
		spec.Volumes = []corev1.Volume{{Name: "ignored", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "ignored"}}}}}
		w := k.workload(ns, tc.name, "", spec)
		w.SetAnnotations(tc.annotations)
		podrefs.PodTemplate(w).Annotations = tc.template
		create(t, w)
	}
	create(t, k.workload(ns, "sentinel", "true", envFrom("sentinel")))
}

// TestUpgradeFromConfigHash: a workload that a release before records rolled carries a
// config hash (a SHA-256 of its ConfigMaps' data) and no record. If the data is the one that
// hash was made of, the upgrade records a baseline and keeps the hash on the Pod template (server-side
// apply would otherwise remove it, and roll the Pods); if the data changed meanwhile, it rolls
// once.
func TestUpgradeFromConfigHash(t *testing.T) {
	forEachKindInTurn(t, func(t *testing.T, k workloadKind, ns string) {
		create(t, configMap(ns, "settings", map[string]string{"k": "v1"}), configMap(ns, "other", map[string]string{"k": "v1"}))
		current := legacyHash(t, ns, "settings")
		for name, hash := range map[string]string{"current": current, "stale": "0123456789abcdef0123456789abcdef"} {
			w := k.workload(ns, name, "true", envFrom("settings"))
			podrefs.PodTemplate(w).Annotations = map[string]string{v1alpha1.ConfigHashAnnotation: hash}
			create(t, w)
			// As the previous release wrote it: the hash owned by the field manager configmapwatcher.
			applyLegacyHash(t, w, hash)
		}
		counter := k.countRolls(t, ns)

		env.StartManager(t, "--controllers=configmapwatcher")
		k.waitRecorded(t, ns, "current", "stale")
		settle(t, reconcileTotal(t), 0)
		if diff := cmp.Diff(map[string]int{"stale": 1}, counter.take(t, k, ns)); diff != "" {
			t.Errorf("rolls at the upgrade (-want +got):\n%s", diff)
		}
		if got := k.states(t, ns)["current"].Hash; got != current {
			t.Errorf("config hash of the unchanged workload after the upgrade: %q, want it kept as %q", got, current)
		}
		k.waitEvent(t, ns, "stale", v1alpha1.ReasonConfigChanged, "differs from the config hash the previous release wrote")

		// From then on it rolls on changes like any other.
		before := k.states(t, ns)
		updateConfigMap(t, ns, "settings", map[string]string{"k": "v2"})
		k.waitRolled(t, ns, before, "current", "stale")
	})
}

// legacyHash computes the previous release's config hash of the named ConfigMaps, as its
// hash.go did (a copy here: the test must not trust the code it checks).
func legacyHash(t *testing.T, ns string, names ...string) string {
	t.Helper()
	var cms []corev1.ConfigMap
	for _, name := range names {
		var cm corev1.ConfigMap
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
			t.Fatal(err)
		}
		cms = append(cms, cm)
	}
	return previousReleaseHash(cms)
}

// applyLegacyHash applies the config hash to w's Pod template as the previous release did:
// under the field manager configmapwatcher.
func applyLegacyHash(t *testing.T, w client.Object, hash string) {
	t.Helper()
	gvk, err := apiutil.GVKForObject(w, env.Client.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	template := fmt.Sprintf(`{"template":{"metadata":{"annotations":{%q:%q}}}}`, v1alpha1.ConfigHashAnnotation, hash)
	if gvk.Kind == "CronJob" {
		template = `{"jobTemplate":{"spec":` + template + `}}`
	}
	patch := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,"namespace":%q},"spec":%s}`,
		gvk.GroupVersion().String(), gvk.Kind, w.GetName(), w.GetNamespace(), template)
	if err := env.Client.Patch(context.Background(), w, client.RawPatch(types.ApplyPatchType, []byte(patch)),
		client.FieldOwner("configmapwatcher"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
}

// previousReleaseHash is the config hash of the release before records (its hash.go, copied
// so that the test checks the controller against what that release wrote, not against itself):
// SHA-256 of the ConfigMaps' data and binaryData, in name and key order, every string after its
// length, hex, 32 characters.
func previousReleaseHash(configMaps []corev1.ConfigMap) string {
	sorted := append([]corev1.ConfigMap(nil), configMaps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	h := sha256.New()
	write := func(b []byte) {
		var n [8]byte
		for i, l := 0, uint64(len(b)); i < 8; i++ {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(b)
	}
	for i := range sorted {
		cm := &sorted[i]
		write([]byte(cm.Name))
		write([]byte("data"))
		for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
			write([]byte(k))
			write([]byte(cm.Data[k]))
		}
		write([]byte("binaryData"))
		for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
			write([]byte(k))
			write(cm.BinaryData[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// TestReloaderFormsReportedAtStart: at start the manager logs each of Reloader's annotations
// its workloads carry but it does not read, with how many and which workloads, and counts them
// in switchboard_configmapwatcher_reloader_unsupported.
func TestReloaderFormsReportedAtStart(t *testing.T) {
	k := kinds[1]
	ns := env.Namespace(t, "cmw-forms-")
	csi := "secretproviderclass.reloader.stakater.com/reload"
	w := k.workload(ns, "vault", "", envFrom("app"))
	podrefs.PodTemplate(w).Annotations = map[string]string{csi: "vault-db"}
	create(t, w)
	_, lines := startLoggedManager(t, "--controllers=configmapwatcher")
	testenv.Eventually(t, timeout, func() error {
		if lines.count("Reloader annotation not supported", csi, ns+"/vault") != 1 {
			return fmt.Errorf("no log line about %s on %s/vault yet", csi, ns)
		}
		return nil
	})
	if v := metricValue(t, "switchboard_configmapwatcher_reloader_unsupported", map[string]string{"form": "annotation", "name": csi, "kind": k.name}); v < 1 {
		t.Errorf("switchboard_configmapwatcher_reloader_unsupported for %s on %ss = %v, want at least 1", csi, k.name, v)
	}
}
