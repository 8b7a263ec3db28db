package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
	"github.com/example/switchboard/internal/testenv"
)

// shardKey is the label that assigns an object to a shard: Flux's convention.
const shardKey = "sharding.fluxcd.io/key"

// shard is one manager of a sharded installation, and the selector of its objects.
type shard struct {
	name     string
	selector string
	manager  *testenv.Manager
	recorder *testenv.ReconcileRecorder
}

// TestLabelShardsSplitTheObjects runs three managers with every controller, as the sharded
// overlay does: shard1 and shard2 with --watch-label-selector=sharding.fluxcd.io/key=<shard>,
// and one for the objects of no shard (!sharding.fluxcd.io/key), each with Leases of its own.
// Each shard has a MyApp taking its environment from a ConfigMap all share
// (so that its Deployment is opted in to the configmapwatcher), a VerticalScaler naming that
// Deployment, and an opted-in StatefulSet using the shared ConfigMap and one of its own. Only
// the MyApp, the VerticalScaler and the StatefulSet are labelled: myapp labels the Deployment
// and the Service like their MyApp.
//
// Then: every object is reconciled, and by its own shard alone; each manager's cache holds its
// shard's objects alone (so its periodic resync and its indexes, which read the cache, cover
// its shard alone); a change of the shared ConfigMap rolls every
// workload once, each by its shard; a change of shard1's own ConfigMap reconciles nothing in
// the other shards, whose watches see the change but whose indexes hold no workload that uses it.
func TestLabelShardsSplitTheObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := env.Namespace(t, "shards-")
	shards := []*shard{
		{name: "shard1", selector: shardKey + "=shard1"},
		{name: "shard2", selector: shardKey + "=shard2"},
		{name: "none", selector: "!" + shardKey},
	}
	for _, s := range shards {
		s.recorder = testenv.NewReconcileRecorder(ctrl.Log)
		s.manager = env.StartReplica(t, testenv.Replica{Identity: s.name, Logger: s.recorder.Logger()},
			"--controllers=*", "--watch-namespaces="+ns, "--watch-label-selector="+s.selector, "--usage-source=off",
			"--leader-elect", "--leader-election-namespace="+ns, "--leader-elect-resource-name=switchboard-"+s.name)
	}
	create := func(obj client.Object) {
		t.Helper()
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Data: map[string]string{"LEVEL": "info"}})
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-shard1"}, Data: map[string]string{"COLOR": "blue"}})
	for _, s := range shards {
		labels := map[string]string{}
		if s.name != "none" {
			labels[shardKey] = s.name
		}
		create(&v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-" + s.name, Labels: labels},
			Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080, EnvFrom: []v1alpha1.ConfigMapEnvSource{{ConfigMapName: "shared"}}}})
		create(&v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vs-" + s.name, Labels: labels},
			Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "app-" + s.name, UpdateMode: v1alpha1.UpdateModeOff}})
		sources := []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}}
		if s.name == "shard1" {
			sources = append(sources, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "own-shard1"}}})
		}
		podLabels := map[string]string{"app": "sts-" + s.name}
		create(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sts-" + s.name, Labels: labels,
			Annotations: map[string]string{v1alpha1.ReloadAnnotation: "true"}},
			Spec: appsv1.StatefulSetSpec{ServiceName: "sts-" + s.name, Selector: &metav1.LabelSelector{MatchLabels: podLabels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27", EnvFrom: sources}}}}}})
	}

	// Everything converges, each in its shard: the Deployments carry their MyApp's label, and
	// the verticalscaler of each shard finds its Deployment.
	testenv.Eventually(t, time.Minute, func() error {
		for _, s := range shards {
			key := client.ObjectKey{Namespace: ns, Name: "app-" + s.name}
			app := &v1alpha1.MyApp{}
			if err := env.Client.Get(ctx, key, app); err != nil {
				return err
			}
			if app.Status.ObservedGeneration != app.Generation {
				return fmt.Errorf("MyApp %s not converged", key.Name)
			}
			vs := &v1alpha1.VerticalScaler{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vs-" + s.name}, vs); err != nil {
				return err
			}
			if c := findCondition(vs.Status.Conditions, v1alpha1.ConditionTargetFound); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("VerticalScaler vs-%s: TargetFound %+v", s.name, c)
			}
			for _, w := range workloadsOf(s, ns) {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
					return err
				}
				if w.GetAnnotations()[v1alpha1.ConfigStateAnnotation] == "" {
					return fmt.Errorf("%T %s not recorded yet", w, w.GetName())
				}
			}
		}
		return nil
	})
	checkCachedShard(t, ns, shards)

	// The shared ConfigMap changes: each workload rolls once, by its shard.
	hashes := configHashes(t, ns, shards)
	updateConfigMap(t, ns, "shared", "LEVEL", "debug")
	testenv.Eventually(t, 30*time.Second, func() error {
		for name, hash := range configHashes(t, ns, shards) {
			if hash == hashes[name] {
				return fmt.Errorf("%s not rolled yet", name)
			}
		}
		return nil
	})

	// shard1's own ConfigMap changes: shard1 rolls its StatefulSet, the others reconcile nothing
	// for it.
	time.Sleep(time.Second) // the roll's own events
	before := configMapWatcherReconciles(shards)
	hashes = configHashes(t, ns, shards)
	updateConfigMap(t, ns, "own-shard1", "COLOR", "green")
	testenv.Eventually(t, 30*time.Second, func() error {
		if configHashes(t, ns, shards)["sts-shard1"] == hashes["sts-shard1"] {
			return fmt.Errorf("sts-shard1 not rolled yet")
		}
		return nil
	})
	time.Sleep(time.Second) // longer than the debounce: anything mapped would have been reconciled
	after := configMapWatcherReconciles(shards)
	for _, s := range shards[1:] {
		if after[s.name] != before[s.name] {
			t.Errorf("shard %s reconciled %d workloads for a ConfigMap only shard1's workload uses", s.name, after[s.name]-before[s.name])
		}
	}
	for name, hash := range configHashes(t, ns, shards) {
		if name != "sts-shard1" && hash != hashes[name] {
			t.Errorf("%s rolled for a ConfigMap it does not use", name)
		}
	}

	// Every reconcile of every shard was of its own objects, and every object was reconciled by
	// its shard.
	for _, s := range shards {
		seen := map[string]bool{}
		for _, rec := range s.recorder.Records() {
			if rec.Namespace != ns {
				continue
			}
			if owner := rec.Name[strings.LastIndex(rec.Name, "-")+1:]; owner != s.name {
				t.Errorf("shard %s reconciled %s %s, of shard %s", s.name, rec.Controller, rec.Name, owner)
			}
			seen[rec.Controller+"/"+rec.Name] = true
		}
		for _, want := range []string{"myapp/app-", "verticalscaler/vs-", "configmapwatcher-deployments/app-", "configmapwatcher-statefulsets/sts-"} {
			if !seen[want+s.name] {
				t.Errorf("shard %s never reconciled %s%s", s.name, want, s.name)
			}
		}
	}
}

// workloadsOf returns the opted-in workloads of shard s in ns, empty, for reading.
func workloadsOf(s *shard, ns string) []client.Object {
	return []client.Object{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-" + s.name}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sts-" + s.name}}}
}

// configHashes returns the config hash of every shard's workloads, by name.
func configHashes(t *testing.T, ns string, shards []*shard) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range shards {
		for _, w := range workloadsOf(s, ns) {
			if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), w); err != nil {
				t.Fatal(err)
			}
			out[w.GetName()] = podrefs.PodTemplate(w).Annotations[v1alpha1.ConfigHashAnnotation]
		}
	}
	return out
}

// updateConfigMap sets key to value in the data of the ConfigMap name.
func updateConfigMap(t *testing.T, ns, name, key, value string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[key] = value
	if err := env.Client.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
}

// configMapWatcherReconciles counts each shard's configmapwatcher reconciles so far.
func configMapWatcherReconciles(shards []*shard) map[string]int {
	out := map[string]int{}
	for _, s := range shards {
		for _, rec := range s.recorder.Records() {
			if strings.HasPrefix(rec.Controller, "configmapwatcher") {
				out[s.name]++
			}
		}
	}
	return out
}

// checkCachedShard checks that each shard's cache holds its own objects of ns and no other, of
// every kind it caches.
func checkCachedShard(t *testing.T, ns string, shards []*shard) {
	t.Helper()
	for _, s := range shards {
		for _, list := range []client.ObjectList{&v1alpha1.MyAppList{}, &v1alpha1.VerticalScalerList{}, &appsv1.DeploymentList{}, &appsv1.StatefulSetList{}} {
			if err := s.manager.GetCache().List(context.Background(), list, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			var names []string
			if err := apimeta.EachListItem(list, func(o runtime.Object) error {
				names = append(names, o.(client.Object).GetName())
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(names) != 1 || !strings.HasSuffix(names[0], "-"+s.name) {
				t.Errorf("shard %s caches the %T items %v, want its own alone", s.name, list, names)
			}
		}
	}
}
