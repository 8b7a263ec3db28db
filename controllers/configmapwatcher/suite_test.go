package configmapwatcher_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/configmapwatcher"
	"github.com/example/switchboard/internal/podrefs"
	"github.com/example/switchboard/internal/testenv"
)

// env is the control plane shared by the tests of this package; each test starts its own
// manager with the configmapwatcher's controllers, through the same flags and table as
// main.go.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env))
}

const timeout = 20 * time.Second

// controllerNames are the group's controllers, one per workload kind, but for the Rollouts',
// which is idle without the Rollout CRD (its tests wait for what they need themselves).
var controllerNames = []string{
	configmapwatcher.Deployments.ControllerName, configmapwatcher.StatefulSets.ControllerName,
	configmapwatcher.DaemonSets.ControllerName, configmapwatcher.CronJobs.ControllerName,
	configmapwatcher.Jobs.ControllerName,
}

// workloadKind is one workload kind under test: how to make one and where it keeps its Pod
// template (podrefs.PodTemplate).
type workloadKind struct {
	name       string
	controller string
	// resource is the API server's name of the kind, as its request counters name it.
	resource string
	// make returns a workload of the kind running spec.
	make    func(ns, name string, spec corev1.PodSpec) client.Object
	newList func() client.ObjectList
}

// kinds are the four workload kinds; every guarantee is tested on each.
var kinds = []workloadKind{
	{"Deployment", configmapwatcher.Deployments.ControllerName, "deployments",
		func(ns, name string, spec corev1.PodSpec) client.Object {
			return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: appsv1.DeploymentSpec{Selector: selector(name), Template: template(name, spec)}}
		},
		func() client.ObjectList { return &appsv1.DeploymentList{} }},
	{"StatefulSet", configmapwatcher.StatefulSets.ControllerName, "statefulsets",
		func(ns, name string, spec corev1.PodSpec) client.Object {
			return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: appsv1.StatefulSetSpec{ServiceName: name, Selector: selector(name), Template: template(name, spec)}}
		},
		func() client.ObjectList { return &appsv1.StatefulSetList{} }},
	{"DaemonSet", configmapwatcher.DaemonSets.ControllerName, "daemonsets",
		func(ns, name string, spec corev1.PodSpec) client.Object {
			return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: appsv1.DaemonSetSpec{Selector: selector(name), Template: template(name, spec)}}
		},
		func() client.ObjectList { return &appsv1.DaemonSetList{} }},
	{"CronJob", configmapwatcher.CronJobs.ControllerName, "cronjobs",
		func(ns, name string, spec corev1.PodSpec) client.Object {
			spec.RestartPolicy = corev1.RestartPolicyOnFailure
			t := template(name, spec)
			t.Labels = nil
			// Once a year: nothing runs during a test, and nothing is to run early.
			return &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: t}}}}
		},
		func() client.ObjectList { return &batchv1.CronJobList{} }},
}

// forEachKind runs test once per workload kind, each in a namespace of its own, the kinds in
// parallel: each kind has a controller of its own, and a test counts that one's reconciles
// (k.reconcileTotal, k.settle), so that the kinds do not disturb each other's counts.
func forEachKind(t *testing.T, test func(t *testing.T, k workloadKind, ns string)) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			test(t, k, env.Namespace(t, "cmw-"+strings.ToLower(k.name)+"-"))
		})
	}
}

// forEachKindInTurn is forEachKind one kind after the other, for a test that starts a manager
// per kind: a manager acts on every namespace, and the controllers' metrics are the process's,
// so two at once would roll and count each other's workloads.
func forEachKindInTurn(t *testing.T, test func(t *testing.T, k workloadKind, ns string)) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			test(t, k, env.Namespace(t, "cmw-"+strings.ToLower(k.name)+"-"))
		})
	}
}

func selector(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
}

func template(name string, spec corev1.PodSpec) corev1.PodTemplateSpec {
	if len(spec.Containers) == 0 {
		spec.Containers = []corev1.Container{{Name: "app", Image: "nginx:1.27"}}
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: spec}
}

// workload returns a workload of kind k running spec, opted in with our annotation when
// reload is not empty.
func (k workloadKind) workload(ns, name, reload string, spec corev1.PodSpec) client.Object {
	obj := k.make(ns, name, spec)
	if reload != "" {
		obj.SetAnnotations(map[string]string{v1alpha1.ReloadAnnotation: reload})
	}
	return obj
}

func create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func secret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
}

// envFrom is a Pod spec whose container takes its environment from configMap.
func envFrom(configMap string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}}}}
}

// secretEnvFrom is a Pod spec whose container takes its environment from secret.
func secretEnvFrom(secret string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
		EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}}}}}}}
}

// workloadState is what the tests read of a workload: the controller's record and the Pod
// template's config hash.
type workloadState struct {
	Record string
	Hash   string
	// ResourceVersion changes with any write.
	ResourceVersion string
}

// states returns the state of every workload of kind k in ns.
func (k workloadKind) states(t testing.TB, ns string) map[string]workloadState {
	t.Helper()
	list := k.newList()
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]workloadState{}
	if err := apimeta.EachListItem(list, func(item runtime.Object) error {
		obj := item.(client.Object)
		out[obj.GetName()] = workloadState{Record: obj.GetAnnotations()[v1alpha1.ConfigStateAnnotation],
			Hash: podrefs.PodTemplate(obj).Annotations[v1alpha1.ConfigHashAnnotation], ResourceVersion: obj.GetResourceVersion()}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitRecorded waits until each named workload of kind k in ns carries a record, and returns
// the state of all.
func (k workloadKind) waitRecorded(t testing.TB, ns string, names ...string) map[string]workloadState {
	t.Helper()
	var now map[string]workloadState
	testenv.Eventually(t, timeout, func() error {
		now = k.states(t, ns)
		for _, name := range names {
			if now[name].Record == "" {
				return fmt.Errorf("%s %s has no %s yet", k.name, name, v1alpha1.ConfigStateAnnotation)
			}
		}
		return nil
	})
	return now
}

// waitRolled waits until each named workload of kind k in ns has a config hash other than the
// one in before, and returns the state of all.
func (k workloadKind) waitRolled(t testing.TB, ns string, before map[string]workloadState, names ...string) map[string]workloadState {
	t.Helper()
	var now map[string]workloadState
	testenv.Eventually(t, timeout, func() error {
		now = k.states(t, ns)
		for _, name := range names {
			if now[name].Hash == "" || now[name].Hash == before[name].Hash {
				return fmt.Errorf("%s %s: config hash %q, want a new one (was %q)", k.name, name, now[name].Hash, before[name].Hash)
			}
		}
		return nil
	})
	return now
}

// rollCounter counts the rolls of the workloads of one kind and namespace from a watch: a
// roll is a change of the Pod template, which is what makes the workload's controller replace
// its Pods. (A Deployment's generation is no count of rolls: the API server bumps it for a
// change of the Deployment's own annotations too.)
type rollCounter struct {
	mu        sync.Mutex
	templates map[string]string
	counts    map[string]int
}

// countRolls starts counting the rolls of the workloads of kind k in ns, until the test ends.
func (k workloadKind) countRolls(t testing.TB, ns string) *rollCounter {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	list := k.newList()
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	counter := &rollCounter{templates: map[string]string{}, counts: map[string]int{}}
	_ = apimeta.EachListItem(list, func(item runtime.Object) error {
		obj := item.(client.Object)
		counter.templates[obj.GetName()] = templateJSON(obj)
		return nil
	})
	w, err := c.Watch(context.Background(), k.newList(), client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(client.Object)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			now := templateJSON(obj)
			counter.mu.Lock()
			if before, seen := counter.templates[obj.GetName()]; seen && before != now {
				counter.counts[obj.GetName()]++
			}
			counter.templates[obj.GetName()] = now
			counter.mu.Unlock()
		}
	}()
	return counter
}

func templateJSON(obj client.Object) string {
	data, err := json.Marshal(podrefs.PodTemplate(obj))
	if err != nil {
		panic(err)
	}
	return string(data)
}

// take returns the rolls per workload counted since the last take (or the start), after
// waiting for the watch to catch up with the API server's latest writes.
func (c *rollCounter) take(t testing.TB, k workloadKind, ns string) map[string]int {
	t.Helper()
	current := map[string]string{}
	list := k.newList()
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	_ = apimeta.EachListItem(list, func(item runtime.Object) error {
		obj := item.(client.Object)
		current[obj.GetName()] = templateJSON(obj)
		return nil
	})
	testenv.Eventually(t, timeout, func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		for name, template := range current {
			if c.templates[name] != template {
				return fmt.Errorf("the watch has not seen the latest template of %s %s", k.name, name)
			}
		}
		return nil
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

// writes returns how many writes to kind k the API server has served.
func (k workloadKind) writes(t testing.TB) float64 {
	t.Helper()
	writes, err := env.APIWrites(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return writes[k.resource]
}

// updateConfigMap gives a ConfigMap new data.
func updateConfigMap(t testing.TB, ns, name string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data = data
	if err := env.Client.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
}

// updateSecret gives a Secret new data.
func updateSecret(t testing.TB, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	s.Data = nil
	s.StringData = data
	if err := env.Client.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// reconcileTotal returns how many reconciles the group's controllers have finished.
func reconcileTotal(t testing.TB) float64 {
	t.Helper()
	total := 0.0
	for _, name := range controllerNames {
		n, err := testenv.ReconcileTotal(name)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

// settled is when the tests count the group's controllers as having handled every event that
// came before: at least atLeast reconciles since their count was since, then nothing queued, no
// worker busy and the count unchanged over five polls in a row. (A request that waits out the
// debounce delay is not counted as queued; the delay is shorter than the five polls.)
func settled(since float64, atLeast int) testenv.Quiet {
	return testenv.Quiet{Controllers: controllerNames, Since: since, AtLeast: atLeast, Idle: true,
		For: 250 * time.Millisecond, Interval: 50 * time.Millisecond, Timeout: timeout}
}

// settle waits until the group's controllers have settled.
func settle(t testing.TB, since float64, atLeast int) {
	t.Helper()
	testenv.WaitQuiet(t, testenv.InProcess, settled(since, atLeast))
}

// reconcileTotal returns how many reconciles the controller of kind k has finished.
func (k workloadKind) reconcileTotal(t testing.TB) float64 {
	t.Helper()
	n, err := testenv.ReconcileTotal(k.controller)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// settle is settle for the controller of kind k alone: at least atLeast of its reconciles since
// its count was since, then it is idle and its count unchanged over five polls in a row.
func (k workloadKind) settle(t testing.TB, since float64, atLeast int) {
	t.Helper()
	q := settled(since, atLeast)
	q.Controllers = []string{k.controller}
	testenv.WaitQuiet(t, testenv.InProcess, q)
}

// events returns the notes of the Events of reason about the workload ns/name of kind k.
func (k workloadKind) events(t testing.TB, ns, name, reason string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range list.Items {
		if e.Reason == reason && e.Regarding.Kind == k.name && e.Regarding.Name == name {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// waitEvent waits for an Event of reason about the workload ns/name of kind k whose note
// contains every one of parts.
func (k workloadKind) waitEvent(t testing.TB, ns, name, reason string, parts ...string) {
	t.Helper()
	testenv.Eventually(t, timeout, func() error {
		notes := k.events(t, ns, name, reason)
		for _, note := range notes {
			found := true
			for _, part := range parts {
				found = found && strings.Contains(note, part)
			}
			if found {
				return nil
			}
		}
		return fmt.Errorf("no %s Event about %s %s with %q among %q", reason, k.name, name, parts, notes)
	})
}
