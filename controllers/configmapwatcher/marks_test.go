package configmapwatcher

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
)

func TestReloaderEnvVarName(t *testing.T) {
	for _, tc := range []struct {
		src  podrefs.Source
		want string
	}{
		{podrefs.Source{Kind: podrefs.ConfigMap, Name: "my-app.cfg"}, "STAKATER_MY_APP_CFG_CONFIGMAP"},
		{podrefs.Source{Kind: podrefs.Secret, Name: "db"}, "STAKATER_DB_SECRET"},
		// Reloader's own quirks: no underscore before the first letter or digit, one per run
		// of others, and one after a name that ends with another character.
		{podrefs.Source{Kind: podrefs.ConfigMap, Name: ".a--b9"}, "STAKATER_A_B9_CONFIGMAP"},
		{podrefs.Source{Kind: podrefs.Secret, Name: "tls-"}, "STAKATER_TLS__SECRET"},
	} {
		if got := reloaderEnvVarName(tc.src); got != tc.want {
			t.Errorf("reloaderEnvVarName(%s) = %q, want %q", tc.src, got, tc.want)
		}
	}
}

// rollFixture is a Pod template whose "app" container takes ConfigMap app, and whose "side"
// container mounts Secret db; it carries a config hash, Reloader's annotation and a variable
// of Reloader's from earlier rolls.
func rollFixture() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			v1alpha1.ConfigHashAnnotation: "old-hash", v1alpha1.ReloaderLastReloadedFromAnnotation: "old-lrf", "user": "kept",
		}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "app", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}},
				{Name: "side", VolumeMounts: []corev1.VolumeMount{{Name: "creds"}},
					Env: []corev1.EnvVar{{Name: "STAKATER_DB_SECRET", Value: "old-db"}, {Name: "PLAIN", Value: "x"}}},
			},
			Volumes: []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}},
		},
	}
}

func TestMarksRolled(t *testing.T) {
	key := newDigestKey([]byte("test key"))
	now := time.Unix(1700000000, 0)
	template := rollFixture()
	current := marksOf(template)
	wantCurrent := marks{configHash: "old-hash", lastReloadedFrom: "old-lrf", env: map[string]map[string]string{"side": {"STAKATER_DB_SECRET": "old-db"}}}
	if diff := cmp.Diff(wantCurrent, current, cmp.AllowUnexported(marks{})); diff != "" {
		t.Fatalf("marksOf (-want +got):\n%s", diff)
	}
	record := &state{Version: stateVersion, KeyID: key.id, Sources: map[string]map[string]string{
		"ConfigMap/app": {"k": "d2"}, "Secret/db": {"password": "p2"}, "ConfigMap/named": {"x": "n1"},
	}}
	in := func(strategy Strategy, lrf LastReloadedFrom, viaReloader bool, changed ...string) rollInput {
		d := decision{roll: true, record: record}
		for _, c := range changed {
			d.changes = append(d.changes, sourceChange{Source: c, Change: changeChanged})
		}
		return rollInput{strategy: strategy, lastReloadedFrom: lrf, viaReloader: viaReloader, namespace: "shop",
			spec: &template.Spec, refs: podrefs.References(&template.Spec), d: d, key: key, now: now}
	}
	appHash := key.sourceHash(podrefs.Source{Kind: podrefs.ConfigMap, Name: "app"}, record.Sources["ConfigMap/app"])
	dbHash := key.sourceHash(podrefs.Source{Kind: podrefs.Secret, Name: "db"}, record.Sources["Secret/db"])
	namedHash := key.sourceHash(podrefs.Source{Kind: podrefs.ConfigMap, Name: "named"}, record.Sources["ConfigMap/named"])
	lrf := func(typ, name, hash, container string) string {
		return `{"type":"` + typ + `","name":"` + name + `","namespace":"shop","hash":"` + hash + `","containerRefs":["` + container + `"],"observedAt":1700000000}`
	}
	newHash := key.configHash(record)
	for _, tc := range []struct {
		name string
		in   rollInput
		want marks
	}{
		{"config-hash, opted in through ours", in(StrategyConfigHash, LastReloadedFromReloader, false, "ConfigMap/app"),
			marks{configHash: newHash, lastReloadedFrom: "old-lrf", env: wantCurrent.env}},
		{"config-hash, opted in through Reloader's", in(StrategyConfigHash, LastReloadedFromReloader, true, "ConfigMap/app"),
			marks{configHash: newHash, lastReloadedFrom: lrf("CONFIGMAP", "app", appHash, "app"), env: wantCurrent.env}},
		{"config-hash, always", in(StrategyConfigHash, LastReloadedFromAlways, false, "Secret/db"),
			marks{configHash: newHash, lastReloadedFrom: lrf("SECRET", "db", dbHash, "side"), env: wantCurrent.env}},
		{"config-hash, never", in(StrategyConfigHash, LastReloadedFromNever, true, "Secret/db"),
			marks{configHash: newHash, lastReloadedFrom: "old-lrf", env: wantCurrent.env}},
		// The first change names the roll; a named source that no container uses names the
		// first container, as Reloader's does.
		{"annotations", in(StrategyAnnotations, LastReloadedFromReloader, false, "ConfigMap/named", "Secret/db"),
			marks{configHash: "old-hash", lastReloadedFrom: lrf("CONFIGMAP", "named", namedHash, "app"), env: wantCurrent.env}},
		{"env-vars", in(StrategyEnvVars, LastReloadedFromAlways, true, "ConfigMap/app", "Secret/db"),
			marks{configHash: "old-hash", lastReloadedFrom: "old-lrf", env: map[string]map[string]string{
				"app": {"STAKATER_APP_CONFIGMAP": appHash}, "side": {"STAKATER_DB_SECRET": dbHash}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := current.rolled(tc.in)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(marks{})); diff != "" {
				t.Errorf("rolled (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(wantCurrent, current, cmp.AllowUnexported(marks{})); diff != "" {
		t.Errorf("rolled changed the current marks (-want +got):\n%s", diff)
	}
}

// TestSourceHash: a source's hash follows its data and its name, and tells a deletion apart.
func TestSourceHash(t *testing.T) {
	key := newDigestKey([]byte("k"))
	app := podrefs.Source{Kind: podrefs.ConfigMap, Name: "app"}
	h := key.sourceHash(app, map[string]string{"a": "1"})
	if len(h) != 40 {
		t.Errorf("hash %q: want 40 hex digits, as Reloader's SHA-1", h)
	}
	for name, other := range map[string]string{
		"other data":   key.sourceHash(app, map[string]string{"a": "2"}),
		"other source": key.sourceHash(podrefs.Source{Kind: podrefs.Secret, Name: "app"}, map[string]string{"a": "1"}),
		"deleted":      key.sourceHash(app, nil),
		"no keys":      key.sourceHash(app, map[string]string{}),
		"other key":    newDigestKey([]byte("k2")).sourceHash(app, map[string]string{"a": "1"}),
	} {
		if other == h {
			t.Errorf("%s: the same hash %s", name, h)
		}
	}
	if key.sourceHash(app, nil) == key.sourceHash(app, map[string]string{}) {
		t.Error("a deleted source and one without keys hash the same")
	}
}

// TestMarksApplyTo: a Job made from a template carries the marks, each variable once.
func TestMarksApplyTo(t *testing.T) {
	template := rollFixture()
	m := marks{configHash: "h", env: map[string]map[string]string{"side": {"STAKATER_DB_SECRET": "new"}, "app": {"STAKATER_APP_CONFIGMAP": "a"}, "gone": {"X": "y"}}}
	m.applyTo(template)
	if template.Annotations[v1alpha1.ConfigHashAnnotation] != "h" || template.Annotations[v1alpha1.ReloaderLastReloadedFromAnnotation] != "old-lrf" || template.Annotations["user"] != "kept" {
		t.Errorf("annotations %v", template.Annotations)
	}
	want := [][]corev1.EnvVar{
		{{Name: "STAKATER_APP_CONFIGMAP", Value: "a"}},
		{{Name: "STAKATER_DB_SECRET", Value: "new"}, {Name: "PLAIN", Value: "x"}},
	}
	for i, c := range template.Spec.Containers {
		if diff := cmp.Diff(want[i], c.Env); diff != "" {
			t.Errorf("container %s env (-want +got):\n%s", c.Name, diff)
		}
	}
}
