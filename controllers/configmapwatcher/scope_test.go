package configmapwatcher_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/configmapwatcher"
	"github.com/example/switchboard/internal/testenv"
)

// TestDeletedSourceHoldsNothingBack: a workload whose Secret is deleted gets a Warning Event
// and is not rolled, but a change of its ConfigMap meanwhile rolls it; the Secret back with
// its old data rolls nothing.
func TestDeletedSourceHoldsNothingBack(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher")
	forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
		ctx := context.Background()
		spec := envFrom("app")
		spec.Containers[0].EnvFrom = append(spec.Containers[0].EnvFrom, secretEnvFrom("db").Containers[0].EnvFrom...)
		create(t, configMap(ns, "app", map[string]string{"k": "v1"}), secret(ns, "db", map[string]string{"password": "p1"}),
			k.workload(ns, "web", "true", spec))
		before := k.waitRecorded(t, ns, "web")
		counter := k.countRolls(t, ns)

		if err := env.Client.Delete(ctx, secret(ns, "db", nil)); err != nil {
			t.Fatal(err)
		}
		k.waitEvent(t, ns, "web", v1alpha1.ReasonSecretMissing, "Secret db not found", "changes of the other sources still roll this workload")
		updateConfigMap(t, ns, "app", map[string]string{"k": "v2"})
		since := k.reconcileTotal(t)
		after := k.waitRolled(t, ns, before, "web")
		k.settle(t, since, 0)
		if diff := cmp.Diff(map[string]int{"web": 1}, counter.take(t, k, ns)); diff != "" {
			t.Errorf("rolls after the ConfigMap changed while the Secret was deleted (-want +got):\n%s", diff)
		}
		k.waitEvent(t, ns, "web", v1alpha1.ReasonConfigChanged, "ConfigMap app: k changed")
		if !strings.Contains(after["web"].Record, `"Secret/db":{"password":`) {
			t.Errorf("record %s: the deleted Secret's digests must stay", after["web"].Record)
		}

		since = k.reconcileTotal(t)
		create(t, secret(ns, "db", map[string]string{"password": "p1"}))
		k.settle(t, since, 1)
		if diff := cmp.Diff(after, k.states(t, ns)); diff != "" {
			t.Errorf("states after the Secret came back with its old data (-want +got):\n%s", diff)
		}
	})
}

// TestReloadOnDeleteAndCreate: with Reloader's --reload-on-delete a deleted source rolls its
// workloads (the Event says so), and with --reload-on-create its return rolls them again.
// TestMissingSources has a creation without --reload-on-create, which rolls nothing.
func TestReloadOnDeleteAndCreate(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher", "--reload-on-delete", "--reload-on-create")
	forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
		create(t, secret(ns, "db", map[string]string{"password": "p1"}), k.workload(ns, "web", "true", secretEnvFrom("db")))
		before := k.waitRecorded(t, ns, "web")
		counter := k.countRolls(t, ns)
		if err := env.Client.Delete(context.Background(), secret(ns, "db", nil)); err != nil {
			t.Fatal(err)
		}
		since := k.reconcileTotal(t)
		after := k.waitRolled(t, ns, before, "web")
		k.settle(t, since, 0)
		k.waitEvent(t, ns, "web", v1alpha1.ReasonConfigChanged, "Secret db: deleted")
		create(t, secret(ns, "db", map[string]string{"password": "p1"}))
		since = k.reconcileTotal(t)
		k.waitRolled(t, ns, after, "web")
		k.settle(t, since, 0)
		k.waitEvent(t, ns, "web", v1alpha1.ReasonConfigChanged, "Secret db: created")
		if diff := cmp.Diff(map[string]int{"web": 2}, counter.take(t, k, ns)); diff != "" {
			t.Errorf("rolls for a deletion and a return (-want +got):\n%s", diff)
		}
	})
}

// TestAutoReloadAll: with --auto-reload-all, workloads that say nothing are recorded without a
// roll and roll on the sources they reference; one that opts out with Reloader's auto "false"
// (or ours "false") is neither recorded nor rolled, one with auto "false" for ConfigMaps only
// still rolls on its Secret, and one that references nothing is not written.
func TestAutoReloadAll(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher", "--auto-reload-all")
	forEachKind(t, func(t *testing.T, k workloadKind, ns string) {
		spec := envFrom("app")
		spec.Containers[0].EnvFrom = append(spec.Containers[0].EnvFrom, secretEnvFrom("db").Containers[0].EnvFrom...)
		optedOut := k.workload(ns, "opted-out", "", spec)
		optedOut.SetAnnotations(map[string]string{v1alpha1.ReloaderAutoAnnotation: "false"})
		oursOff := k.workload(ns, "ours-off", "false", spec)
		secretsOnly := k.workload(ns, "secrets-only", "", spec)
		secretsOnly.SetAnnotations(map[string]string{v1alpha1.ReloaderConfigMapAutoAnnotation: "false"})
		create(t, configMap(ns, "app", map[string]string{"k": "v1"}), secret(ns, "db", map[string]string{"k": "v1"}), configMap(ns, "other", map[string]string{"k": "v1"}),
			k.workload(ns, "plain", "", spec), k.workload(ns, "other", "", envFrom("other")),
			k.workload(ns, "no-sources", "", corev1.PodSpec{}), optedOut, oursOff, secretsOnly)
		k.waitRecorded(t, ns, "plain", "other", "secrets-only")
		k.settle(t, k.reconcileTotal(t), 0)
		before := k.states(t, ns)
		for _, name := range []string{"no-sources", "opted-out", "ours-off"} {
			if s := before[name]; s.Record != "" || s.Hash != "" {
				t.Errorf("%s %s written under --auto-reload-all: %+v", k.name, name, s)
			}
		}
		for name, s := range before {
			if s.Hash != "" {
				t.Errorf("%s %s rolled at first sight", k.name, name)
			}
		}
		counter := k.countRolls(t, ns)
		updateConfigMap(t, ns, "app", map[string]string{"k": "v2"})
		since := k.reconcileTotal(t)
		k.waitRolled(t, ns, before, "plain")
		k.settle(t, since, 0)
		updateSecret(t, ns, "db", map[string]string{"k": "v2"})
		since = k.reconcileTotal(t)
		k.waitRolled(t, ns, before, "secrets-only")
		k.settle(t, since, 0)
		if diff := cmp.Diff(map[string]int{"plain": 2, "secrets-only": 1}, counter.take(t, k, ns)); diff != "" {
			t.Errorf("rolls (-want +got):\n%s", diff)
		}
	})
}

// TestScopeFlags: --namespaces-to-ignore leaves a namespace's workloads alone;
// --resource-label-selector counts only the labelled sources (a change of another rolls
// nothing and it is not recorded); --resources-to-ignore=secrets leaves Secrets out.
func TestScopeFlags(t *testing.T) {
	k := kinds[0]
	ignored := env.Namespace(t, "cmw-ignored-")
	ns := env.Namespace(t, "cmw-scope-")
	labelled := configMap(ns, "labelled", map[string]string{"k": "v1"})
	labelled.Labels = map[string]string{"reload": "yes"}
	spec := envFrom("labelled")
	spec.Containers[0].EnvFrom = append(spec.Containers[0].EnvFrom, envFrom("plain").Containers[0].EnvFrom...)
	spec.Containers[0].EnvFrom = append(spec.Containers[0].EnvFrom, secretEnvFrom("db").Containers[0].EnvFrom...)
	create(t, labelled, configMap(ns, "plain", map[string]string{"k": "v1"}), secret(ns, "db", map[string]string{"k": "v1"}),
		k.workload(ns, "web", "true", spec),
		configMap(ignored, "labelled", map[string]string{"k": "v1"}), k.workload(ignored, "web", "true", envFrom("labelled")))

	env.StartManager(t, "--controllers=configmapwatcher", "--namespaces-to-ignore="+ignored,
		"--resource-label-selector=reload:yes", "--resources-to-ignore=secrets")
	before := k.waitRecorded(t, ns, "web")
	settle(t, reconcileTotal(t), 0)
	if s := k.states(t, ignored)["web"]; s.Record != "" {
		t.Errorf("Deployment of an ignored namespace recorded: %+v", s)
	}
	if record := before["web"].Record; !strings.Contains(record, "ConfigMap/labelled") || strings.Contains(record, "ConfigMap/plain") || strings.Contains(record, "Secret/db") {
		t.Errorf("record %s: want the labelled ConfigMap only", record)
	}
	counter := k.countRolls(t, ns)
	updateConfigMap(t, ns, "plain", map[string]string{"k": "v2"})
	updateSecret(t, ns, "db", map[string]string{"k": "v2"})
	updateConfigMap(t, ignored, "labelled", map[string]string{"k": "v2"})
	since := reconcileTotal(t)
	time.Sleep(time.Second)
	settle(t, since, 0)
	if got := counter.take(t, k, ns); len(got) > 0 {
		t.Errorf("rolls on sources out of scope: %v", got)
	}
	updateConfigMap(t, ns, "labelled", map[string]string{"k": "v2"})
	since = reconcileTotal(t)
	k.waitRolled(t, ns, before, "web")
	settle(t, since, 0)
	if diff := cmp.Diff(map[string]int{"web": 1}, counter.take(t, k, ns)); diff != "" {
		t.Errorf("rolls on the labelled ConfigMap (-want +got):\n%s", diff)
	}
	if s := k.states(t, ignored)["web"]; s.Record != "" || s.Hash != "" {
		t.Errorf("Deployment of an ignored namespace written: %+v", s)
	}
}

// TestNamespaceSelector: with --namespace-selector only the workloads of the matching
// namespaces are cached and recorded; when another namespace starts to match, the manager
// stops with ErrNamespacesChanged, and a new one records that namespace's workloads too.
func TestNamespaceSelector(t *testing.T) {
	k := kinds[0]
	label := "cmw-selector-" + strings.ToLower(t.Name())
	selected := env.Namespace(t, "cmw-selected-")
	later := env.Namespace(t, "cmw-later-")
	setLabel(t, selected, label)
	for _, ns := range []string{selected, later} {
		create(t, configMap(ns, "app", map[string]string{"k": "v1"}), k.workload(ns, "web", "true", envFrom("app")))
	}
	m := env.StartManager(t, "--controllers=configmapwatcher", "--namespace-selector="+label+":yes")
	k.waitRecorded(t, selected, "web")
	settle(t, reconcileTotal(t), 0)
	checkLeftOut(t, m, k, later)

	setLabel(t, later, label)
	waitStoppedForNamespaces(t, m)
	env.StartManager(t, "--controllers=configmapwatcher", "--namespace-selector="+label+"=yes")
	k.waitRecorded(t, later, "web")
}

// TestNamespaceSelectorSelectingMost: a --namespace-selector that selects most namespaces is
// served by watches of every namespace that leave out the unselected ones: their workloads are
// not cached, the selected ones' are recorded and roll, and a new namespace the selector does
// not select stops the manager with ErrNamespacesChanged, since those watches would see it.
func TestNamespaceSelectorSelectingMost(t *testing.T) {
	k := kinds[0]
	label := "cmw-out-" + strings.ToLower(t.Name())
	in := env.Namespace(t, "cmw-in-")
	out := env.Namespace(t, "cmw-out-")
	setLabel(t, out, label)
	for _, ns := range []string{in, out} {
		create(t, configMap(ns, "app", map[string]string{"k": "v1"}), k.workload(ns, "web", "true", envFrom("app")))
	}
	m := env.StartManager(t, "--controllers=configmapwatcher", "--namespace-selector=!"+label)
	before := k.waitRecorded(t, in, "web")
	settle(t, reconcileTotal(t), 0)
	checkLeftOut(t, m, k, out)
	updateConfigMap(t, in, "app", map[string]string{"k": "v2"})
	k.waitRolled(t, in, before, "web")

	later := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cmw-out-later-", Labels: map[string]string{label: "yes"}}}
	if err := env.Client.Create(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	waitStoppedForNamespaces(t, m)
}

// checkLeftOut fails t when the workload "web" of namespace ns, which the scope leaves out, is
// recorded or in the manager's cache.
func checkLeftOut(t *testing.T, m *testenv.Manager, k workloadKind, ns string) {
	t.Helper()
	if s := k.states(t, ns)["web"]; s.Record != "" {
		t.Errorf("%s of namespace %s, which the selector leaves out, recorded: %+v", k.name, ns, s)
	}
	if err := m.GetCache().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, k.make(ns, "web", corev1.PodSpec{})); err == nil {
		t.Errorf("the cache holds a %s of namespace %s, which the selector leaves out", k.name, ns)
	}
}

// waitStoppedForNamespaces waits until m stopped with ErrNamespacesChanged.
func waitStoppedForNamespaces(t *testing.T, m *testenv.Manager) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() error {
		if err := m.Err(); !errors.Is(err, configmapwatcher.ErrNamespacesChanged) {
			return errors.New("the manager has not stopped for the namespaces' change yet")
		}
		return nil
	})
}

// setLabel labels namespace ns with key=yes.
func setLabel(t *testing.T, ns, key string) {
	t.Helper()
	namespace := &corev1.Namespace{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: ns}, namespace); err != nil {
		t.Fatal(err)
	}
	namespace.Labels = map[string]string{key: "yes"}
	if err := env.Client.Update(context.Background(), namespace); err != nil {
		t.Fatal(err)
	}
}
