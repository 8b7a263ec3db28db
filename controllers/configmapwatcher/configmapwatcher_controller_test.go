package configmapwatcher_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
	"github.com/example/switchboard/internal/testenv"
)

// referenceKinds are the ways a Pod spec can use a ConfigMap or a Secret, one workload each,
// named after the source it uses ("cm-" + way, or "secret-" + way).
var referenceKinds = map[string]func(name string) corev1.PodSpec{
	"envfrom":        envFrom,
	"secret-envfrom": secretEnvFrom,
	"keyref": func(cm string) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
			Env: []corev1.EnvVar{{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: "k"}}}}}}}
	},
	"secret-keyref": func(s string) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
			Env: []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: s}, Key: "k"}}}}}}}
	},
	"volume": func(cm string) corev1.PodSpec {
		return corev1.PodSpec{Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}}}
	},
	"secret-volume": func(s string) corev1.PodSpec {
		return corev1.PodSpec{Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: s}}}}}
	},
	"projected": func(cm string) corev1.PodSpec {
		return corev1.PodSpec{Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}}}}}}
	},
	"init": func(cm string) corev1.PodSpec {
		spec := envFrom(cm)
		spec.InitContainers, spec.Containers = spec.Containers, []corev1.Container{{Name: "app", Image: "nginx:1.27"}}
		spec.InitContainers[0].Name = "init"
		return spec
	},
	"secret-sidecar": func(s string) corev1.PodSpec {
		always := corev1.ContainerRestartPolicyAlways
		spec := secretEnvFrom(s)
		spec.InitContainers, spec.Containers = spec.Containers, []corev1.Container{{Name: "app", Image: "nginx:1.27"}}
		spec.InitContainers[0].Name, spec.InitContainers[0].RestartPolicy = "sidecar", &always
		return spec
	},
}

// sourceName is the source a workload of referenceKinds uses.
func sourceName(way string) string {
	if strings.HasPrefix(way, "secret-") {
		return way
	}
	return "cm-" + way
}

// createSource creates the ConfigMap or Secret a workload of referenceKinds uses.
func createSource(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	if strings.HasPrefix(name, "secret-") {
		create(t, secret(ns, name, data))
		return
	}
	create(t, configMap(ns, name, data))
}

// updateSource gives the ConfigMap or Secret new data.
func updateSource(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	if strings.HasPrefix(name, "secret-") {
		updateSecret(t, ns, name, data)
		return
	}
	updateConfigMap(t, ns, name, data)
}

// TestFirstSightRollsNothing: installing the manager over opted-in workloads, and creating an
// opted-in workload while it runs, record a baseline on the workload's metadata and touch no
// Pod template: generations stay, no config hash.
func TestFirstSightRollsNothing(t *testing.T) {
	forEachKindInTurn(t, func(t *testing.T, k workloadKind, ns string) {
		create(t, configMap(ns, "settings", map[string]string{"k": "v1"}), secret(ns, "db", map[string]string{"password": "p1"}))
		spec := envFrom("settings")
		spec.Containers[0].EnvFrom = append(spec.Containers[0].EnvFrom, secretEnvFrom("db").Containers[0].EnvFrom...)
		create(t, k.workload(ns, "installed", "true", spec))
		counter := k.countRolls(t, ns)

		env.StartManager(t, "--controllers=configmapwatcher")
		create(t, k.workload(ns, "created", "true", spec))
		k.waitRecorded(t, ns, "installed", "created")
		settle(t, reconcileTotal(t), 0)
		after := k.states(t, ns)
		for _, name := range []string{"installed", "created"} {
			if after[name].Hash != "" {
				t.Errorf("%s %s after first sight: config hash %q, want none", k.name, name, after[name].Hash)
			}
			if !strings.Contains(after[name].Record, `"ConfigMap/settings":{"k":`) || !strings.Contains(after[name].Record, `"Secret/db":{"password":`) {
				t.Errorf("%s %s: record %s does not hold both sources' keys", k.name, name, after[name].Record)
			}
		}
		if got := counter.take(t, k, ns); len(got) > 0 {
			t.Errorf("rolls at first sight: %v, want none", got)
		}
	})
}

// TestDataChangeRollsExactlyTheWorkloadsThatUseIt changes the data of each source in turn and
// checks which workloads rolled. A sentinel ConfigMap changed after each one marks when the
// controller has seen the change: its workload rolling proves that the events before it were
// handled.
func TestDataChangeRollsExactlyTheWorkloadsThatUseIt(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher")
	forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
		// Sources first: a source created after its workload rolls it once.
		for _, name := range []string{"cm-listed-a", "secret-listed-b", "cm-unlisted", "cm-sentinel"} {
			createSource(t, ns, name, map[string]string{"k": "v1"})
		}
		for way, spec := range referenceKinds {
			createSource(t, ns, sourceName(way), map[string]string{"k": "v1"})
			create(t, k.workload(ns, way, "true", spec(sourceName(way))))
		}
		// "listed" rolls on the sources its annotation names, whether or not its Pod spec uses
		// them, and not on the one it uses but does not name.
		listed := k.workload(ns, "listed", " cm-listed-a, secret/secret-listed-b", referenceKinds["volume"]("cm-listed-a"))
		listedTemplate := podrefs.PodTemplate(listed)
		listedTemplate.Spec.Containers[0].EnvFrom = envFrom("cm-unlisted").Containers[0].EnvFrom
		// "optout" uses sources but carries no annotation.
		optout := k.workload(ns, "optout", "", envFrom("cm-envfrom"))
		// "both" uses a ConfigMap and a Secret that other workloads use too.
		bothSpec := referenceKinds["keyref"]("cm-keyref")
		bothSpec.Volumes = referenceKinds["secret-volume"]("secret-volume").Volumes
		create(t, listed, optout, k.workload(ns, "both", "true", bothSpec), k.workload(ns, "sentinel", "true", envFrom("cm-sentinel")))
		optedIn := []string{"listed", "both", "sentinel"}
		for way := range referenceKinds {
			optedIn = append(optedIn, way)
		}
		before := k.waitRecorded(t, ns, optedIn...)
		counter := k.countRolls(t, ns)

		for i, tc := range []struct {
			source string
			want   []string // workloads that roll
		}{
			{"cm-envfrom", []string{"envfrom"}},
			{"secret-envfrom", []string{"secret-envfrom"}},
			{"cm-keyref", []string{"both", "keyref"}},
			{"secret-keyref", []string{"secret-keyref"}},
			{"cm-volume", []string{"volume"}},
			{"secret-volume", []string{"both", "secret-volume"}},
			{"cm-projected", []string{"projected"}},
			{"cm-init", []string{"init"}},
			{"secret-sidecar", []string{"secret-sidecar"}},
			{"cm-listed-a", []string{"listed"}},
			{"secret-listed-b", []string{"listed"}},
			{"cm-unlisted", nil},
		} {
			t.Run(tc.source, func(t *testing.T) {
				updateSource(t, ns, tc.source, map[string]string{"k": fmt.Sprintf("v%d", i+2)})
				updateConfigMap(t, ns, "cm-sentinel", map[string]string{"k": fmt.Sprintf("v%d", i+2)})
				since := k.reconcileTotal(t)
				k.waitRolled(t, ns, before, "sentinel")
				k.settle(t, since, 0)
				after := k.states(t, ns)
				var rolled []string
				for name, n := range counter.take(t, k, ns) {
					if name != "sentinel" {
						rolled = append(rolled, name)
					}
					if n != 1 {
						t.Errorf("%s %s rolled %d times, want once", k.name, name, n)
					}
				}
				slices.Sort(rolled)
				if diff := cmp.Diff(tc.want, rolled); diff != "" {
					t.Errorf("rolled workloads (-want +got):\n%s", diff)
				}
				for _, name := range tc.want {
					kind := "ConfigMap"
					if strings.HasPrefix(tc.source, "secret-") {
						kind = "Secret"
					}
					k.waitEvent(t, ns, name, v1alpha1.ReasonConfigChanged, kind+" "+tc.source+": k changed")
				}
				before = after
			})
		}
		if before["optout"].Record != "" || before["optout"].Hash != "" {
			t.Errorf("the workload without the annotation got a record %q or a config hash %q", before["optout"].Record, before["optout"].Hash)
		}
	})
}

// TestPerKey: a workload that takes keys by name rolls only when those keys change; the Event
// names the keys.
func TestPerKey(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher")
	forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
		create(t, configMap(ns, "app", map[string]string{"a": "1", "b": "1"}), secret(ns, "tls", map[string]string{"tls.crt": "c1", "tls.key": "k1", "ca.crt": "ca1"}))
		spec := referenceKinds["keyref"]("app")
		spec.Containers[0].Env[0].ValueFrom.ConfigMapKeyRef.Key = "a"
		spec.Volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls",
			Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "crt"}, {Key: "tls.key", Path: "key"}}}}}}
		create(t, k.workload(ns, "web", "true", spec), k.workload(ns, "sentinel", "true", envFrom("app")))
		before := k.waitRecorded(t, ns, "web", "sentinel")

		// Keys the workload does not take: the sentinel (envFrom, every key) rolls, web does not.
		updateConfigMap(t, ns, "app", map[string]string{"a": "1", "b": "2"})
		before = k.waitRolled(t, ns, before, "sentinel")
		updateSecret(t, ns, "tls", map[string]string{"tls.crt": "c1", "tls.key": "k1", "ca.crt": "ca2"})
		updateConfigMap(t, ns, "app", map[string]string{"a": "1", "b": "3"})
		since := k.reconcileTotal(t)
		after := k.waitRolled(t, ns, before, "sentinel")
		k.settle(t, since, 0)
		if after["web"] != before["web"] {
			t.Errorf("%s web written after changes of keys it does not take: %+v, was %+v", k.name, after["web"], before["web"])
		}

		// A key it takes: one roll, and the Event says which.
		updateSecret(t, ns, "tls", map[string]string{"tls.crt": "c2", "tls.key": "k1", "ca.crt": "ca2"})
		after = k.waitRolled(t, ns, before, "web")
		k.waitEvent(t, ns, "web", v1alpha1.ReasonConfigChanged, "Secret tls: tls.crt changed")
		updateConfigMap(t, ns, "app", map[string]string{"a": "2", "b": "3"})
		k.waitRolled(t, ns, after, "web")
		k.waitEvent(t, ns, "web", v1alpha1.ReasonConfigChanged, "ConfigMap app: a changed")
	})
}

// TestUnchangedDataWritesNothing makes the controllers reconcile converged workloads over and
// over (source label and annotation changes, and a one-second periodic resync) and counts the
// writes the API server served.
func TestUnchangedDataWritesNothing(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher", "--resync-interval=1s")
	forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
		ctx := context.Background()
		cm := configMap(ns, "settings", map[string]string{"k": "v1"})
		s := secret(ns, "db", map[string]string{"password": "p"})
		create(t, cm, s, k.workload(ns, "web", "true", envFrom("settings")), k.workload(ns, "api", "secret/db", envFrom("other")))
		k.waitRecorded(t, ns, "web", "api")
		k.settle(t, k.reconcileTotal(t), 0)
		before := k.states(t, ns)
		writes := k.writes(t)
		since := k.reconcileTotal(t)

		cm.Labels = map[string]string{"team": "blue"}
		if err := env.Client.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		s.Annotations = map[string]string{"note": "hello"}
		if err := env.Client.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		// Two resyncs reconcile both workloads at least twice more.
		time.Sleep(2500 * time.Millisecond)
		k.settle(t, since, 4)
		if got := k.writes(t) - writes; got != 0 {
			t.Errorf("the API server served %v writes to %s, want 0", got, k.resource)
		}
		if diff := cmp.Diff(before, k.states(t, ns)); diff != "" {
			t.Errorf("%s states (-before +after):\n%s", k.name, diff)
		}
	})
}

// TestBurstRollsOnce changes two ConfigMaps and a Secret of one workload one right after the
// other, as a helm upgrade does: one roll, whose Event names all three. The debounce delay is
// long here so that a slow test machine cannot split the burst; the benchmark measures the
// default.
func TestBurstRollsOnce(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher", "--reload-debounce=3s")
	forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
		create(t, configMap(ns, "app", map[string]string{"k": "1"}), configMap(ns, "flags", map[string]string{"k": "1"}),
			secret(ns, "db", map[string]string{"k": "1"}))
		spec := envFrom("app")
		spec.Containers[0].EnvFrom = append(spec.Containers[0].EnvFrom, envFrom("flags").Containers[0].EnvFrom...)
		spec.Containers[0].EnvFrom = append(spec.Containers[0].EnvFrom, secretEnvFrom("db").Containers[0].EnvFrom...)
		create(t, k.workload(ns, "web", "true", spec))
		before := k.waitRecorded(t, ns, "web")
		counter := k.countRolls(t, ns)
		since := k.reconcileTotal(t)

		updateConfigMap(t, ns, "app", map[string]string{"k": "2"})
		updateConfigMap(t, ns, "flags", map[string]string{"k": "2"})
		updateSecret(t, ns, "db", map[string]string{"k": "2"})
		k.waitRolled(t, ns, before, "web")
		k.settle(t, since, 1)
		if diff := cmp.Diff(map[string]int{"web": 1}, counter.take(t, k, ns)); diff != "" {
			t.Errorf("rolls (-want +got):\n%s", diff)
		}
		k.waitEvent(t, ns, "web", v1alpha1.ReasonConfigChanged, "ConfigMap app: k changed", "ConfigMap flags: k changed", "Secret db: k changed")
	})
}

// TestMissingSources: a workload whose source is missing at first sight records it as missing
// (a warning says so) and, as Reloader without --reload-on-create, records its creation without
// a roll; a source deleted later gives a
// warning, no roll and an untouched record; re-created with the same data it rolls nothing,
// with other data once.
func TestMissingSources(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher")
	forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
		ctx := context.Background()
		create(t, k.workload(ns, "early", "true", envFrom("later")),
			secret(ns, "db", map[string]string{"password": "p1"}), k.workload(ns, "web", "true", secretEnvFrom("db")))
		k.waitEvent(t, ns, "early", v1alpha1.ReasonConfigMapMissing, "ConfigMap later not found: its creation is recorded without rolling this workload (--reload-on-create is off)")
		before := k.waitRecorded(t, ns, "early", "web")
		counter := k.countRolls(t, ns)
		if !strings.Contains(before["early"].Record, `"ConfigMap/later":null`) {
			t.Errorf("record of early %s: want the ConfigMap recorded as missing", before["early"].Record)
		}

		// The ConfigMap appears: recorded, no roll, as Reloader without --reload-on-create.
		create(t, configMap(ns, "later", map[string]string{"k": "v1"}))
		since := k.reconcileTotal(t)
		testenv.Eventually(t, timeout, func() error {
			if r := k.states(t, ns)["early"].Record; strings.Contains(r, `"ConfigMap/later":null`) {
				return fmt.Errorf("record of early %s: the ConfigMap still recorded as missing", r)
			}
			return nil
		})
		k.settle(t, since, 0)
		after := k.states(t, ns)
		if after["early"].Hash != before["early"].Hash {
			t.Errorf("config hash of early moved from %q to %q at the ConfigMap's creation", before["early"].Hash, after["early"].Hash)
		}
		if got := counter.take(t, k, ns); len(got) > 0 {
			t.Errorf("rolls after the ConfigMap's creation: %v, want none", got)
		}

		// A used Secret is deleted: no roll, a warning, the record untouched.
		if err := env.Client.Delete(ctx, secret(ns, "db", nil)); err != nil {
			t.Fatal(err)
		}
		k.waitEvent(t, ns, "web", v1alpha1.ReasonSecretMissing, "Secret db not found: a deletion rolls nothing (--reload-on-delete is off)")
		k.settle(t, k.reconcileTotal(t), 0)
		if diff := cmp.Diff(after, k.states(t, ns)); diff != "" {
			t.Errorf("states after the Secret was deleted (-want +got):\n%s", diff)
		}

		// It comes back with the same data: nothing to roll nor write.
		since = k.reconcileTotal(t)
		create(t, secret(ns, "db", map[string]string{"password": "p1"}))
		k.settle(t, since, 1)
		if diff := cmp.Diff(after, k.states(t, ns)); diff != "" {
			t.Errorf("states after the Secret came back unchanged (-want +got):\n%s", diff)
		}

		// Deleted again, and back with other data: one roll.
		if err := env.Client.Delete(ctx, secret(ns, "db", nil)); err != nil {
			t.Fatal(err)
		}
		k.settle(t, since+1, 1)
		create(t, secret(ns, "db", map[string]string{"password": "p2"}))
		since = k.reconcileTotal(t)
		k.waitRolled(t, ns, after, "web")
		k.settle(t, since, 0)
		if diff := cmp.Diff(map[string]int{"web": 1}, counter.take(t, k, ns)); diff != "" {
			t.Errorf("rolls after the Secret came back with other data (-want +got):\n%s", diff)
		}
		k.waitEvent(t, ns, "web", v1alpha1.ReasonConfigChanged, "Secret db: password changed")
	})
}

// TestRestartRollsOnlyWhatChangedWhileDown stops the manager, changes one source's data and
// another's labels, and starts a new manager: only the workload of the first rolls, and the API
// server serves exactly that one write to the kind.
func TestRestartRollsOnlyWhatChangedWhileDown(t *testing.T) {
	forEachKindInTurn(t, func(t *testing.T, k workloadKind, ns string) {
		ctx := context.Background()
		first := env.StartManager(t, "--controllers=configmapwatcher")
		create(t, configMap(ns, "cm-a", map[string]string{"k": "v1"}), k.workload(ns, "a", "true", envFrom("cm-a")),
			secret(ns, "secret-b", map[string]string{"k": "v1"}), k.workload(ns, "b", "true", secretEnvFrom("secret-b")),
			configMap(ns, "cm-c", map[string]string{"k": "v1"}), k.workload(ns, "c", "true", envFrom("cm-c")),
			k.workload(ns, "plain", "", envFrom("cm-a")))
		k.waitRecorded(t, ns, "a", "b", "c")
		settle(t, reconcileTotal(t), 0)
		first.Stop()

		updateConfigMap(t, ns, "cm-a", map[string]string{"k": "v2"})
		b := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "secret-b"}, b); err != nil {
			t.Fatal(err)
		}
		b.Labels = map[string]string{"changed": "labels-only"}
		if err := env.Client.Update(ctx, b); err != nil {
			t.Fatal(err)
		}
		before := k.states(t, ns)
		counter := k.countRolls(t, ns)
		writes := k.writes(t)
		since := reconcileTotal(t)

		env.StartManager(t, "--controllers=configmapwatcher")
		k.waitRolled(t, ns, before, "a")
		settle(t, since, 3)
		if got := k.writes(t) - writes; got != 1 {
			t.Errorf("the API server served %v writes to %s after the restart, want 1", got, k.resource)
		}
		if diff := cmp.Diff(map[string]int{"a": 1}, counter.take(t, k, ns)); diff != "" {
			t.Errorf("rolls after the restart (-want +got):\n%s", diff)
		}
	})
}

// TestInvalidAnnotation: an annotation entry that cannot be read gives a warning Event naming
// it, is not retried in a loop, and holds nothing back: the workload's other entries are
// recorded and roll it. A workload whose only entry cannot be read is not written.
func TestInvalidAnnotation(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher")
	forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
		create(t, configMap(ns, "settings", map[string]string{"k": "v1"}), secret(ns, "db", map[string]string{"k": "v1"}))
		ours := k.workload(ns, "ours", "settings,pod/x", envFrom("settings"))
		theirs := k.workload(ns, "theirs", "", secretEnvFrom("db"))
		theirs.SetAnnotations(map[string]string{v1alpha1.ReloaderSecretReloadAnnotation: "db-[0-9,db"})
		nothing := k.workload(ns, "nothing", "", secretEnvFrom("db"))
		nothing.SetAnnotations(map[string]string{v1alpha1.ReloaderSecretReloadAnnotation: "db-[0-9"})
		// The manager reconciles the workloads of the earlier tests first.
		k.settle(t, k.reconcileTotal(t), 0)
		since := k.reconcileTotal(t)
		create(t, ours, theirs, nothing)
		k.waitEvent(t, ns, "ours", v1alpha1.ReasonInvalidReloadAnnotation, v1alpha1.ReloadAnnotation, `"pod/x"`)
		k.waitEvent(t, ns, "theirs", v1alpha1.ReasonInvalidReloadAnnotation, v1alpha1.ReloaderSecretReloadAnnotation, "on the workload", `"db-[0-9"`)
		before := k.waitRecorded(t, ns, "ours", "theirs")
		time.Sleep(2 * time.Second)
		k.settle(t, since, 3)
		if n := k.reconcileTotal(t) - since; n > 9 {
			t.Errorf("%v reconciles of three workloads with invalid annotations in 2 s: a retry loop", n)
		}
		if s := before["nothing"]; s.Record != "" || s.Hash != "" {
			t.Errorf("%s nothing, whose only entry is invalid, was written: %+v", k.name, s)
		}
		counter := k.countRolls(t, ns)
		updateConfigMap(t, ns, "settings", map[string]string{"k": "v2"})
		updateSecret(t, ns, "db", map[string]string{"k": "v2"})
		since = k.reconcileTotal(t)
		k.waitRolled(t, ns, before, "ours", "theirs")
		k.settle(t, since, 0)
		if diff := cmp.Diff(map[string]int{"ours": 1, "theirs": 1}, counter.take(t, k, ns)); diff != "" {
			t.Errorf("rolls: the valid entries must still count (-want +got):\n%s", diff)
		}
	})
}
