package chaos

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
)

// observer watches, as the admin and without faults, what the invariants need to see as it
// happens: every roll of a workload (its Pod template's config hash changed) and every
// recommendation of a VerticalScaler.
type observer struct {
	mu      sync.Mutex
	hashes  map[string]string
	rolls   []Roll
	samples []SamplesSeen
}

func observe(t *testing.T, cfg *rest.Config, ns string) *observer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := cache.New(cfg, cache.Options{Scheme: controllers.NewScheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	o := &observer{hashes: map[string]string{}}
	for _, w := range []struct {
		obj  client.Object
		seen func(any)
	}{{&appsv1.Deployment{}, o.deployment}, {&v1alpha1.VerticalScaler{}, o.scaler}} {
		seen := w.seen
		informer, err := c.GetInformer(ctx, w.obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    seen,
			UpdateFunc: func(_, obj any) { seen(obj) },
		}); err != nil {
			t.Fatal(err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the observer's caches did not sync")
	}
	return o
}

// deployment records a roll when a Deployment's config hash differs from the last one seen.
func (o *observer) deployment(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	hash := d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]
	o.mu.Lock()
	defer o.mu.Unlock()
	if last, seen := o.hashes[d.Name]; (seen && last != hash) || (!seen && hash != "") {
		o.rolls = append(o.rolls, Roll{Workload: d.Name, At: time.Now(), Hash: hash})
	}
	o.hashes[d.Name] = hash
}

// scaler records the samples of every container recommendation of a VerticalScaler.
func (o *observer) scaler(obj any) {
	vs, ok := obj.(*v1alpha1.VerticalScaler)
	if !ok || vs.Status.Recommendation == nil {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range vs.Status.Recommendation.ContainerRecommendations {
		o.samples = append(o.samples, SamplesSeen{Scaler: fmt.Sprintf("%s/%s (uid %s)", vs.Namespace, vs.Name, vs.UID), Container: c.ContainerName, At: now, Samples: c.Samples})
	}
}

// seen returns what was observed so far.
func (o *observer) seen() ([]Roll, []SamplesSeen) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Roll(nil), o.rolls...), append([]SamplesSeen(nil), o.samples...)
}

// rollsOf counts the rolls of each workload seen so far.
func (o *observer) rollsOf() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]int{}
	for _, r := range o.rolls {
		out[r.Workload]++
	}
	return out
}
