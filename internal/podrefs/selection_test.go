package podrefs

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/example/switchboard/apis/v1alpha1"
)

// tracked evaluates a Selection over a namespace: the Pod spec's references, and the sources
// that exist with their annotations (a missing one is not in existing). It returns what the
// workload rolls on, as Source.Key values, in Candidates order then pattern matches.
func tracked(s Selection, spec *corev1.PodSpec, existing map[Source]map[string]string) []string {
	refs := References(spec)
	var out []string
	seen := map[Source]bool{}
	consider := func(src Source) {
		if seen[src] {
			return
		}
		seen[src] = true
		annotations, exists := existing[src]
		_, referenced := refs[src]
		if s.Tracks(src, referenced, annotations, exists) {
			out = append(out, src.Key())
		}
	}
	for _, src := range s.Candidates(refs) {
		consider(src)
	}
	for _, kind := range SourceKinds {
		if !s.ListsKind(kind) {
			continue
		}
		for _, src := range slices.SortedFunc(maps.Keys(existing), compareSources) {
			if src.Kind == kind && s.Matches(src) {
				consider(src)
			}
		}
	}
	return out
}

// TestSelect reads our annotation and Reloader's as the README says, against one Pod spec and
// one namespace.
func TestSelect(t *testing.T) {
	spec := podSpecUsingEveryReference()
	existing := map[Source]map[string]string{
		{ConfigMap, "envfrom"}:       nil,
		{ConfigMap, "init-envfrom"}:  nil,
		{ConfigMap, "keyref"}:        {v1alpha1.ReloaderMatchAnnotation: "true"},
		{ConfigMap, "projected"}:     {v1alpha1.ReloaderIgnoreAnnotation: "true"},
		{ConfigMap, "volume"}:        nil,
		{ConfigMap, "unreferenced"}:  nil,
		{ConfigMap, "app-1"}:         nil,
		{ConfigMap, "app-2"}:         nil,
		{ConfigMap, "app.config"}:    nil,
		{ConfigMap, "appxconfig"}:    nil,
		{Secret, "secret-envfrom"}:   {v1alpha1.ReloaderMatchAnnotation: "true"},
		{Secret, "sidecar-secret"}:   nil,
		{Secret, "projected-secret"}: nil,
		{Secret, "tls"}:              nil,
		{Secret, "db"}:               nil,
	}
	allConfigMaps := []string{"ConfigMap/envfrom", "ConfigMap/init-envfrom", "ConfigMap/keyref", "ConfigMap/volume"}
	allSecrets := []string{"Secret/projected-secret", "Secret/secret-envfrom", "Secret/sidecar-secret", "Secret/tls"}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		template    map[string]string
		noReloader  bool
		// autoReloadAll is Reloader's --auto-reload-all.
		autoReloadAll bool
		want          []string
		wantErr       []string // substrings of the error
		// viaReloader is what ViaReloader says.
		viaReloader bool
	}{
		{name: "nothing", want: nil},
		{name: "ours true: every referenced source, but not one Reloader's ignore marks",
			annotations: map[string]string{v1alpha1.ReloadAnnotation: " true "},
			want:        append(append([]string{}, allConfigMaps...), allSecrets...)},
		{name: "ours true, Reloader off: ignore is not read",
			annotations: map[string]string{v1alpha1.ReloadAnnotation: "true"}, noReloader: true,
			want: append(append([]string{}, allConfigMaps[:3]...), append([]string{"ConfigMap/projected", "ConfigMap/volume"}, allSecrets...)...)},
		{name: "ours, a list: ConfigMaps unless secret/, referenced or not",
			annotations: map[string]string{v1alpha1.ReloadAnnotation: " volume, unreferenced ,,secret/db, configmap/volume,Secret/tls"},
			want:        []string{"ConfigMap/unreferenced", "ConfigMap/volume", "Secret/db", "Secret/tls"}},
		{name: "ours, malformed entries name the annotation",
			annotations: map[string]string{v1alpha1.ReloadAnnotation: "volume,pod/x,Bad_Name,secret/"},
			want:        []string{"ConfigMap/volume"},
			wantErr:     []string{v1alpha1.ReloadAnnotation, `"pod/x" is not NAME, secret/NAME or configmap/NAME`, `"Bad_Name" is not a ConfigMap name`, `"secret/" is not a Secret name`}},
		{name: "ours is not read on the Pod template", template: map[string]string{v1alpha1.ReloadAnnotation: "true"}, want: nil},
		{name: "Reloader auto", annotations: map[string]string{v1alpha1.ReloaderAutoAnnotation: "True"},
			want: append(append([]string{}, allConfigMaps...), allSecrets...), viaReloader: true},
		{name: "Reloader auto false", annotations: map[string]string{v1alpha1.ReloaderAutoAnnotation: "false"}, want: nil},
		{name: "Reloader auto not a bool is false, as Reloader reads it", annotations: map[string]string{v1alpha1.ReloaderAutoAnnotation: "yes"}, want: nil},
		{name: "Reloader off: auto is not read", annotations: map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"}, noReloader: true, want: nil},
		{name: "typed auto: Secrets only", annotations: map[string]string{v1alpha1.ReloaderSecretAutoAnnotation: "1"}, want: allSecrets, viaReloader: true},
		{name: "typed auto: ConfigMaps only", annotations: map[string]string{v1alpha1.ReloaderConfigMapAutoAnnotation: "t"}, want: allConfigMaps, viaReloader: true},
		{name: "auto-reload-all: every referenced source of a workload that says nothing", autoReloadAll: true,
			want: append(append([]string{}, allConfigMaps...), allSecrets...), viaReloader: true},
		{name: "auto-reload-all, Reloader off: the same", autoReloadAll: true, noReloader: true,
			want: append(append([]string{}, allConfigMaps[:3]...), append([]string{"ConfigMap/projected", "ConfigMap/volume"}, allSecrets...)...), viaReloader: true},
		{name: "auto-reload-all: auto false opts out", autoReloadAll: true,
			annotations: map[string]string{v1alpha1.ReloaderAutoAnnotation: "false"}, want: nil},
		{name: "auto-reload-all: auto false on the Pod template opts out", autoReloadAll: true,
			template: map[string]string{v1alpha1.ReloaderAutoAnnotation: "false"}, want: nil},
		{name: "auto-reload-all: typed auto false opts that kind out", autoReloadAll: true,
			annotations: map[string]string{v1alpha1.ReloaderConfigMapAutoAnnotation: "false"}, want: allSecrets, viaReloader: true},
		{name: "auto-reload-all: ours false opts out, Reloader's names still count", autoReloadAll: true,
			annotations: map[string]string{v1alpha1.ReloadAnnotation: "false", v1alpha1.ReloaderSecretReloadAnnotation: "db"}, want: []string{"Secret/db"}, viaReloader: true},
		{name: "auto-reload-all, Reloader off: ours false opts out", autoReloadAll: true, noReloader: true,
			annotations: map[string]string{v1alpha1.ReloadAnnotation: "false"}, want: nil},
		{name: "auto-reload-all with a list of ours: the list and every referenced source", autoReloadAll: true,
			annotations: map[string]string{v1alpha1.ReloadAnnotation: "unreferenced"},
			want:        append([]string{"ConfigMap/envfrom", "ConfigMap/init-envfrom", "ConfigMap/keyref", "ConfigMap/unreferenced", "ConfigMap/volume"}, allSecrets...), viaReloader: true},
		{name: "Reloader reload: names, referenced or not",
			annotations: map[string]string{v1alpha1.ReloaderConfigMapReloadAnnotation: "unreferenced, volume", v1alpha1.ReloaderSecretReloadAnnotation: "db"},
			want:        []string{"ConfigMap/unreferenced", "ConfigMap/volume", "Secret/db"}, viaReloader: true},
		{name: "Reloader reload: a valid name is literal, a pattern matches every name of the namespace, anchored",
			annotations: map[string]string{v1alpha1.ReloaderConfigMapReloadAnnotation: "app.config,app-[0-9]+,pp"},
			want:        []string{"ConfigMap/app.config", "ConfigMap/pp", "ConfigMap/app-1", "ConfigMap/app-2"}, viaReloader: true},
		{name: "Reloader reload: an invalid pattern names the annotation and where it was read",
			template: map[string]string{v1alpha1.ReloaderSecretReloadAnnotation: "db,[", v1alpha1.ReloaderConfigMapReloadAnnotation: "volume"},
			want:     []string{"ConfigMap/volume", "Secret/db"},
			wantErr:  []string{v1alpha1.ReloaderSecretReloadAnnotation + " on the Pod template", `"[" is not a regular expression`}, viaReloader: true},
		{name: "Reloader annotations on the Pod template when none on the workload",
			template: map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"},
			want:     append(append([]string{}, allConfigMaps...), allSecrets...), viaReloader: true},
		{name: "per kind: a ConfigMap annotation on the workload leaves Secrets to the Pod template's",
			annotations: map[string]string{v1alpha1.ReloaderConfigMapReloadAnnotation: "volume"},
			template:    map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"},
			want:        append([]string{"ConfigMap/volume"}, allSecrets...), viaReloader: true},
		{name: "search: referenced sources that carry match",
			annotations: map[string]string{v1alpha1.ReloaderSearchAnnotation: "true"},
			want:        []string{"ConfigMap/keyref", "Secret/secret-envfrom"}, viaReloader: true},
		{name: "exclude, on the workload only",
			annotations: map[string]string{v1alpha1.ReloaderAutoAnnotation: "true",
				v1alpha1.ReloaderConfigMapExcludeAnnotation: "volume, keyref", v1alpha1.ReloaderSecretExcludeAnnotation: "tls"},
			want: []string{"ConfigMap/envfrom", "ConfigMap/init-envfrom", "Secret/projected-secret", "Secret/secret-envfrom", "Secret/sidecar-secret"}, viaReloader: true},
		{name: "exclude on the Pod template is not read",
			annotations: map[string]string{v1alpha1.ReloaderSecretAutoAnnotation: "true"},
			template:    map[string]string{v1alpha1.ReloaderSecretExcludeAnnotation: "tls"},
			want:        allSecrets, viaReloader: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Select(tc.annotations, tc.template, Reading{Reloader: !tc.noReloader, AutoReloadAll: tc.autoReloadAll})
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatalf("Select: %v", err)
			}
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v does not contain %q", err, want)
				}
			}
			got := tracked(s, &spec, existing)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tracked sources (-want +got):\n%s", diff)
			}
			if s.OptedIn() != (len(tc.want) > 0) {
				t.Errorf("OptedIn() = %v with %d tracked sources", s.OptedIn(), len(tc.want))
			}
			if s.ViaReloader() != tc.viaReloader {
				t.Errorf("ViaReloader() = %v, want %v", s.ViaReloader(), tc.viaReloader)
			}
		})
	}
}

// TestTracksMissingSources: a source that does not exist counts when it would with Reloader's
// match and without its ignore, so that its creation is noticed.
func TestTracksMissingSources(t *testing.T) {
	s, err := Select(map[string]string{v1alpha1.ReloaderSearchAnnotation: "true"}, nil, Reading{Reloader: true})
	if err != nil {
		t.Fatal(err)
	}
	src := Source{ConfigMap, "later"}
	if !s.Tracks(src, true, nil, false) {
		t.Error("a missing referenced source under search is not tracked")
	}
	if s.Tracks(src, true, nil, true) {
		t.Error("an existing referenced source without match is tracked under search")
	}
	if s.Tracks(src, false, nil, false) {
		t.Error("a missing source the Pod template does not reference is tracked under search")
	}
}

func TestIndexValues(t *testing.T) {
	spec := podSpecUsingEveryReference()
	refs := References(&spec)
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        []string
	}{
		{"not opted in", nil, nil},
		{"names", map[string]string{v1alpha1.ReloadAnnotation: "volume,secret/db"}, []string{"ConfigMap/volume", "Secret/db"}},
		{"typed auto, without the excluded", map[string]string{v1alpha1.ReloaderSecretAutoAnnotation: "true", v1alpha1.ReloaderSecretExcludeAnnotation: "tls"},
			[]string{"Secret/projected-secret", "Secret/secret-envfrom", "Secret/sidecar-secret"}},
		{"a pattern files the workload under the wildcard", map[string]string{v1alpha1.ReloaderConfigMapReloadAnnotation: "app-.*,volume"},
			[]string{"ConfigMap/*", "ConfigMap/volume"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Select(tc.annotations, nil, Reading{Reloader: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.IndexValues(refs)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLegacyReloadConfigMaps(t *testing.T) {
	spec := podSpecUsingEveryReference()
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        []string
	}{
		{"not opted in", nil, nil},
		{"true: referenced ConfigMaps, no Secrets", map[string]string{v1alpha1.ReloadAnnotation: "true"},
			[]string{"envfrom", "init-envfrom", "keyref", "projected", "volume"}},
		{"listed names, as written", map[string]string{v1alpha1.ReloadAnnotation: " volume, extra ,,volume"}, []string{"extra", "volume"}},
		{"empty list", map[string]string{v1alpha1.ReloadAnnotation: ""}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, LegacyReloadConfigMaps(tc.annotations, &spec)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestSelectRenamedAnnotations: with Reloader's annotations renamed by its flags, the new names
// are read, on the workload and on the sources, and the default names no longer are.
func TestSelectRenamedAnnotations(t *testing.T) {
	spec := podSpecUsingEveryReference()
	names := ReloaderNames{ConfigMapReload: "x.io/cm", SecretReload: "x.io/secret", Auto: "x.io/auto", ConfigMapAuto: "x.io/cm-auto",
		SecretAuto: "x.io/secret-auto", Search: "x.io/search", Match: "x.io/match", Ignore: "x.io/ignore"}
	existing := map[Source]map[string]string{
		{ConfigMap, "envfrom"}:     {"x.io/match": "true"},
		{ConfigMap, "keyref"}:      {v1alpha1.ReloaderMatchAnnotation: "true"},
		{ConfigMap, "volume"}:      {"x.io/ignore": "true"},
		{Secret, "secret-envfrom"}: nil,
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        []string
	}{
		// A referenced source that does not exist counts (it is read once created); the renamed
		// ignore leaves out volume.
		{"the renamed auto", map[string]string{"x.io/cm-auto": "true"}, []string{"ConfigMap/envfrom", "ConfigMap/init-envfrom", "ConfigMap/keyref", "ConfigMap/projected"}},
		{"the default auto, no longer read", map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"}, nil},
		{"the renamed reload list", map[string]string{"x.io/secret": "db", v1alpha1.ReloaderConfigMapReloadAnnotation: "keyref"}, []string{"Secret/db"}},
		// keyref carries only the default match, which is no longer read.
		{"the renamed search and match", map[string]string{"x.io/search": "true"}, []string{"ConfigMap/envfrom", "ConfigMap/init-envfrom",
			"ConfigMap/projected", "Secret/projected-secret", "Secret/sidecar-secret", "Secret/tls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Select(tc.annotations, nil, Reading{Reloader: true, Names: names})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tracked(s, &spec, existing)); diff != "" {
				t.Errorf("tracked (-want +got):\n%s", diff)
			}
		})
	}
	if !slices.Contains(names.OptIn(), "x.io/search") || !slices.Contains(Reading{}.Names.OptIn(), v1alpha1.ReloaderAutoAnnotation) {
		t.Errorf("OptIn: %v, %v", names.OptIn(), Reading{}.Names.OptIn())
	}
}

// TestSecretProviderClasses: with Reading.CSI, a CSI volume's SecretProviderClass is a source,
// counted through Reloader's annotations of that kind, its auto annotation and exclusions, as
// Reloader reads them, but not through ours; without it, SecretProviderClasses count for nothing.
func TestSecretProviderClasses(t *testing.T) {
	spec := corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "secrets", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
			Driver: "secrets-store.csi.k8s.io", VolumeAttributes: map[string]string{SecretProviderClassAttribute: "vault"}}}}},
		Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "secrets", MountPath: "/mnt"}}}},
	}
	vault := Source{Kind: SecretProviderClass, Name: "vault"}
	refs := References(&spec)
	if diff := cmp.Diff(map[Source]Use{vault: {AllKeys: true}}, refs); diff != "" {
		t.Errorf("References (-want +got):\n%s", diff)
	}
	trimmed := ReferencesOnly(&spec)
	if diff := cmp.Diff(refs, References(&trimmed)); diff != "" {
		t.Errorf("References of the trimmed spec (-want +got):\n%s", diff)
	}
	if got := Carrier(&trimmed, vault, false); got != "app" {
		t.Errorf("Carrier = %q, want app", got)
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		csi         bool
		want        []Source
	}{
		{"typed auto", map[string]string{v1alpha1.ReloaderSecretProviderClassAutoAnnotation: "true"}, true, []Source{vault}},
		{"auto", map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"}, true, []Source{vault}},
		{"named", map[string]string{v1alpha1.ReloaderSecretProviderClassReloadAnnotation: "vault"}, true, []Source{vault}},
		{"excluded", map[string]string{v1alpha1.ReloaderAutoAnnotation: "true", v1alpha1.ReloaderSecretProviderClassExcludeAnnotation: "vault"}, true, nil},
		{"ours", map[string]string{v1alpha1.ReloadAnnotation: "true"}, true, nil},
		{"without CSI", map[string]string{v1alpha1.ReloaderSecretProviderClassAutoAnnotation: "true"}, false, nil},
	} {
		s, err := Select(tc.annotations, nil, Reading{Reloader: true, CSI: tc.csi})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []Source
		for _, src := range s.Candidates(refs) {
			if s.Tracks(src, true, nil, true) {
				got = append(got, src)
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: sources tracked (-want +got):\n%s", tc.name, diff)
		}
	}
}
