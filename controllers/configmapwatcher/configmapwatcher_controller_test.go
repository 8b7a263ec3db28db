package configmapwatcher_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// referenceKinds are the ways a Pod spec can use a ConfigMap, one Deployment each, named after
// the ConfigMap it uses ("cm-" + kind).
var referenceKinds = map[string]func(configMap string) corev1.PodSpec{
	"envfrom": envFrom,
	"keyref": func(cm string) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
			Env: []corev1.EnvVar{{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: "k"}}}}}}}
	},
	"volume": func(cm string) corev1.PodSpec {
		return corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}},
		}
	},
	"projected": func(cm string) corev1.PodSpec {
		return corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}}}}},
		}
	},
	"init": func(cm string) corev1.PodSpec {
		spec := envFrom(cm)
		spec.InitContainers, spec.Containers = spec.Containers, []corev1.Container{{Name: "app", Image: "nginx:1.27"}}
		spec.InitContainers[0].Name = "init"
		return spec
	},
}

// updateData gives cm new data.
func updateData(t *testing.T, ns, name, value string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"k": value}
	if err := env.Client.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
}

// TestDataChangeRollsExactlyTheDeploymentsThatUseIt changes the data of each ConfigMap in
// turn and checks which Deployments got a new config hash. A sentinel ConfigMap changed after
// each one marks when the controller has seen the change: its Deployment rolling proves that
// the events before it were handled.
func TestDataChangeRollsExactlyTheDeploymentsThatUseIt(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher")
	ns := env.Namespace(t, "cmw-")
	for kind, spec := range referenceKinds {
		create(t, configMap(ns, "cm-"+kind, map[string]string{"k": "v1"}), deployment(ns, kind, "true", spec("cm-"+kind)))
	}
	// "listed" reloads on the ConfigMaps its annotation names, whether or not its Pod spec
	// uses them, and not on the one it uses but does not name.
	listed := deployment(ns, "listed", " cm-listed-a, cm-listed-b", referenceKinds["volume"]("cm-listed-a"))
	listed.Spec.Template.Spec.Containers[0].EnvFrom = envFrom("cm-unlisted").Containers[0].EnvFrom
	// "optout" uses every ConfigMap but carries no annotation.
	optout := deployment(ns, "optout", "", envFrom("cm-envfrom"))
	optout.Spec.Template.Spec.Volumes = listed.Spec.Template.Spec.Volumes
	// "both" uses two ConfigMaps that other Deployments use too.
	both := deployment(ns, "both", "true", referenceKinds["keyref"]("cm-keyref"))
	both.Spec.Template.Spec.Volumes = referenceKinds["projected"]("cm-projected").Volumes
	create(t, listed, optout, both, deployment(ns, "sentinel", "true", envFrom("cm-sentinel")))
	for _, name := range []string{"cm-listed-a", "cm-listed-b", "cm-unlisted", "cm-sentinel"} {
		create(t, configMap(ns, name, map[string]string{"k": "v1"}))
	}
	optedIn := []string{"envfrom", "keyref", "volume", "projected", "init", "listed", "both", "sentinel"}
	before := waitHashed(t, ns, nil, optedIn...)

	for i, tc := range []struct {
		configMap string
		want      []string // Deployments that roll
	}{
		{"cm-envfrom", []string{"envfrom"}},
		{"cm-keyref", []string{"both", "keyref"}},
		{"cm-volume", []string{"volume"}},
		{"cm-projected", []string{"both", "projected"}},
		{"cm-init", []string{"init"}},
		{"cm-listed-a", []string{"listed"}},
		{"cm-listed-b", []string{"listed"}},
		{"cm-unlisted", nil},
	} {
		t.Run(tc.configMap, func(t *testing.T) {
			updateData(t, ns, tc.configMap, fmt.Sprintf("v%d", i+2))
			updateData(t, ns, "cm-sentinel", fmt.Sprintf("v%d", i+2))
			since := reconcileTotal(t)
			waitHashed(t, ns, before, "sentinel")
			settle(t, since, 0)
			after := hashes(t, ns)
			var rolled []string
			for name, hash := range after {
				if hash != before[name] && name != "sentinel" {
					rolled = append(rolled, name)
				}
			}
			slices.Sort(rolled)
			if diff := cmp.Diff(tc.want, rolled); diff != "" {
				t.Errorf("rolled Deployments (-want +got):\n%s", diff)
			}
			before = after
		})
	}
	if before["optout"] != "" {
		t.Errorf("the Deployment without the annotation got a config hash %q", before["optout"])
	}
}

// TestUnchangedHashWritesNothing makes the controller reconcile converged Deployments over and
// over (ConfigMap label and annotation changes, and a one-second periodic resync) and counts the writes to Deployments the API server served.
func TestUnchangedHashWritesNothing(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher", "--resync-interval=1s")
	ctx := context.Background()
	ns := env.Namespace(t, "cmw-")
	cm := configMap(ns, "settings", map[string]string{"k": "v1"})
	create(t, cm, deployment(ns, "web", "true", envFrom("settings")), deployment(ns, "api", "settings", envFrom("other")))
	waitHashed(t, ns, nil, "web", "api")
	settle(t, reconcileTotal(t), 0)
	versions := resourceVersions(t, ns)
	writes := deploymentWrites(t)
	since := reconcileTotal(t)

	cm.Labels = map[string]string{"team": "blue"}
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	cm.Annotations = map[string]string{"note": "hello"}
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	// Two resyncs reconcile both Deployments at least twice more.
	time.Sleep(2500 * time.Millisecond)
	settle(t, since, 4)

	if got := deploymentWrites(t) - writes; got != 0 {
		t.Errorf("the API server served %v writes to Deployments, want 0", got)
	}
	if diff := cmp.Diff(versions, resourceVersions(t, ns)); diff != "" {
		t.Errorf("Deployment resourceVersions (-before +after):\n%s", diff)
	}
}

// TestMissingConfigMap checks that a Deployment whose ConfigMap is missing is not rolled, that
// a warning Event says so, and that it rolls once when the ConfigMap comes back.
func TestMissingConfigMap(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher")
	ctx := context.Background()
	ns := env.Namespace(t, "cmw-")
	create(t, deployment(ns, "early", "true", envFrom("later")),
		configMap(ns, "settings", map[string]string{"k": "v1"}), deployment(ns, "web", "true", envFrom("settings")))
	waitWarning(t, ns, "early", "not rolled: ConfigMap later not found")
	hashed := waitHashed(t, ns, nil, "web")
	settle(t, reconcileTotal(t), 0)
	if hashed["early"] != "" {
		t.Errorf("Deployment early got config hash %q while its ConfigMap is missing", hashed["early"])
	}

	// The ConfigMap appears: the Deployment rolls once.
	generation := generationOf(t, ns, "early")
	create(t, configMap(ns, "later", map[string]string{"k": "v1"}))
	hashed = waitHashed(t, ns, hashed, "early")
	settle(t, reconcileTotal(t), 0)
	if got := generationOf(t, ns, "early"); got != generation+1 {
		t.Errorf("generation went from %d to %d, want one roll", generation, got)
	}

	// A used ConfigMap is deleted: no roll, a warning.
	if err := env.Client.Delete(ctx, configMap(ns, "settings", nil)); err != nil {
		t.Fatal(err)
	}
	waitWarning(t, ns, "web", "not rolled: ConfigMap settings not found")
	settle(t, reconcileTotal(t), 0)
	if diff := cmp.Diff(hashed, hashes(t, ns)); diff != "" {
		t.Errorf("config hashes after the ConfigMap was deleted (-want +got):\n%s", diff)
	}

	// It comes back with the same data: nothing to roll.
	versions := resourceVersions(t, ns)
	since := reconcileTotal(t)
	create(t, configMap(ns, "settings", map[string]string{"k": "v1"}))
	settle(t, since, 1)
	if diff := cmp.Diff(versions, resourceVersions(t, ns)); diff != "" {
		t.Errorf("Deployments written after the ConfigMap came back unchanged (-before +after):\n%s", diff)
	}

	// Deleted again, and back with other data: one roll.
	if err := env.Client.Delete(ctx, configMap(ns, "settings", nil)); err != nil {
		t.Fatal(err)
	}
	settle(t, since+1, 1)
	generation = generationOf(t, ns, "web")
	create(t, configMap(ns, "settings", map[string]string{"k": "v2"}))
	waitHashed(t, ns, hashed, "web")
	settle(t, reconcileTotal(t), 0)
	if got := generationOf(t, ns, "web"); got != generation+1 {
		t.Errorf("generation went from %d to %d, want one roll", generation, got)
	}
}

func generationOf(t *testing.T, ns, name string) int64 {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d.Generation
}

// waitWarning waits for a warning Event about the Deployment ns/name with the given note.
func waitWarning(t *testing.T, ns, name, note string) {
	t.Helper()
	testenv.Eventually(t, timeout, func() error {
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonConfigMapMissing &&
				e.Regarding.Kind == "Deployment" && e.Regarding.Name == name && e.Note == note {
				return nil
			}
		}
		return fmt.Errorf("no %s warning %q about Deployment %s among %d Events", v1alpha1.ReasonConfigMapMissing, note, name, len(list.Items))
	})
}

// TestRestartRollsOnlyWhatChangedWhileDown stops the manager, changes one ConfigMap's data and
// another's labels, and starts a new manager: only the Deployment of the first rolls, and the
// API server serves exactly that one write to Deployments.
func TestRestartRollsOnlyWhatChangedWhileDown(t *testing.T) {
	first := env.StartManager(t, "--controllers=configmapwatcher")
	ctx := context.Background()
	ns := env.Namespace(t, "cmw-")
	for _, name := range []string{"a", "b", "c"} {
		create(t, configMap(ns, "cm-"+name, map[string]string{"k": "v1"}), deployment(ns, name, "true", envFrom("cm-"+name)))
	}
	create(t, deployment(ns, "plain", "", envFrom("cm-a")))
	before := waitHashed(t, ns, nil, "a", "b", "c")
	settle(t, reconcileTotal(t), 0)
	first.Stop()

	updateData(t, ns, "cm-a", "v2")
	cmB := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm-b"}, cmB); err != nil {
		t.Fatal(err)
	}
	cmB.Labels = map[string]string{"changed": "labels-only"}
	if err := env.Client.Update(ctx, cmB); err != nil {
		t.Fatal(err)
	}
	versions := resourceVersions(t, ns)
	writes := deploymentWrites(t)
	since := reconcileTotal(t)

	env.StartManager(t, "--controllers=configmapwatcher")
	after := waitHashed(t, ns, before, "a")
	settle(t, since, 3)
	if got := deploymentWrites(t) - writes; got != 1 {
		t.Errorf("the API server served %v writes to Deployments after the restart, want 1", got)
	}
	delete(versions, "a")
	now := resourceVersions(t, ns)
	delete(now, "a")
	if diff := cmp.Diff(versions, now); diff != "" {
		t.Errorf("Deployments other than a written after the restart (-before +after):\n%s", diff)
	}
	before["a"] = after["a"]
	if diff := cmp.Diff(before, hashes(t, ns)); diff != "" {
		t.Errorf("config hashes (-want +got):\n%s", diff)
	}
}
