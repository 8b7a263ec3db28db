package recommender

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/sources"
)

// Informers gives the shared informers of Pods and VerticalScalers: the manager's cache.
type Informers interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// podKill is an OOM kill of a recommended container that the Pod watch saw.
type podKill struct {
	namespace, pod string
	labels         labels.Set
	kill           oomKill
}

// killBuffer is how many kills wait for the poller's goroutine at most. A kill that finds it
// full is not lost: it stays in the Pod's last state, where the next cycle's read finds it.
const killBuffer = 1024

// watchOOMKills adds a handler to the Pod informer that passes every OOM kill an update of a
// Pod shows, and its previous state did not, to the returned channel: each kill counts, where
// a read once a cycle sees only the last of two kills within it. stop removes the handler
// (each term of leading runs a new poller on the shared informer). Without Informers no kill
// comes this way, and the cycles' reads find them.
func (p *UsageProducer) watchOOMKills(ctx context.Context) (kills <-chan podKill, stop func(), err error) {
	ch := make(chan podKill, killBuffer)
	stop, err = p.onUpdate(ctx, &corev1.Pod{}, func(oldObj, newObj any) {
		older, ok1 := oldObj.(*corev1.Pod)
		newer, ok2 := newObj.(*corev1.Pod)
		if !ok1 || !ok2 {
			return
		}
		for _, kill := range newKills(older, newer) {
			select {
			case ch <- podKill{namespace: newer.Namespace, pod: newer.Name, labels: newer.Labels, kill: kill}:
			default:
			}
		}
	})
	return ch, stop, err
}

// onUpdate adds update as the update handler of the shared informer of obj's kind; stop
// removes it. Without Informers it adds nothing.
func (p *UsageProducer) onUpdate(ctx context.Context, obj client.Object, update func(oldObj, newObj any)) (stop func(), err error) {
	if p.Informers == nil {
		return func() {}, nil
	}
	informer, err := p.Informers.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("getting the informer of %T: %w", obj, err)
	}
	registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: update})
	if err != nil {
		return nil, fmt.Errorf("adding a handler to the informer of %T: %w", obj, err)
	}
	return func() {
		if err := informer.RemoveEventHandler(registration); err != nil {
			logf.FromContext(ctx).Error(err, "Removing an informer handler failed", "kind", fmt.Sprintf("%T", obj))
		}
	}, nil
}

// newKills returns the OOM kills of newer's recommended containers that older does not show.
func newKills(older, newer *corev1.Pod) []oomKill {
	recommended := map[string]bool{}
	for _, c := range RecommendedContainers(&newer.Spec) {
		recommended[c.Name] = true
	}
	before := oomKills(older)
	var out []oomKill
	for _, k := range oomKills(newer) {
		seen := slices.ContainsFunc(before, func(b oomKill) bool { return b.container == k.container && b.finishedAt.Equal(k.finishedAt) })
		if recommended[k.container] && !seen {
			out = append(out, k)
		}
	}
	return out
}

// recordKill records a kill the watch saw into each history whose target selects the Pod and
// that has read it before, and sends its VerticalScalers the news at once, as the Vertical Pod
// Autoscaler's recommender reacts to an OOM kill on its next loop: memory is raised before the
// container is killed again.
func (p *UsageProducer) recordKill(ctx context.Context, producer *sources.Producer, k podKill) {
	for key, h := range p.histories {
		if key.Namespace != k.namespace || h.selector == nil || !h.selector.Matches(k.labels) {
			continue
		}
		if !h.history(k.kill.container).RecordOOM(k.pod, k.kill.finishedAt, k.kill.requestBytes) {
			continue
		}
		h.version++
		oomKillsTotal.WithLabelValues("watch").Inc()
		p.reportNow(ctx, producer, key, h)
	}
}

// reportNow sends the news of history h, of key, to the VerticalScalers whose target it is.
func (p *UsageProducer) reportNow(ctx context.Context, producer *sources.Producer, key historyKey, h *targetHistory) {
	var list v1alpha1.VerticalScalerList
	if err := p.Cache.List(ctx, &list, client.InNamespace(key.Namespace)); err != nil {
		logf.FromContext(ctx).Error(err, "Listing VerticalScalers failed")
		return
	}
	obs := observation{histories: h.containers, containers: h.perPod}
	for i := range list.Items {
		vs := &list.Items[i]
		if target, ok := targetOf(vs); !ok || target != key {
			continue
		}
		if r := report(vs, obs); r != nil {
			name := types.NamespacedName{Namespace: vs.Namespace, Name: vs.Name}
			p.Reports.Store(name, *r)
			send(ctx, producer, name)
		}
	}
}

// watchFoundTargets adds a handler to the VerticalScaler informer that passes the history key of
// each VerticalScaler whose status comes to name its target (the controller found it and
// recorded its Pods' selector) to the returned channel, so that the poller reads that target at
// once instead of at the next cycle: a new VerticalScaler gets its first recommendation a read
// after the controller found its target. stop removes the handler.
func (p *UsageProducer) watchFoundTargets(ctx context.Context) (found <-chan historyKey, stop func(), err error) {
	ch := make(chan historyKey, killBuffer)
	stop, err = p.onUpdate(ctx, &v1alpha1.VerticalScaler{}, func(oldObj, newObj any) {
		older, ok1 := oldObj.(*v1alpha1.VerticalScaler)
		newer, ok2 := newObj.(*v1alpha1.VerticalScaler)
		if !ok1 || !ok2 {
			return
		}
		key, ok := targetOf(newer)
		if was, before := targetOf(older); !ok || (before && was == key && equality.Semantic.DeepEqual(older.Status.TargetSelector, newer.Status.TargetSelector)) {
			return
		}
		select {
		case ch <- key:
		default:
		}
	})
	return ch, stop, err
}

// readTarget reads the target of key now, outside a cycle, and reports to its VerticalScalers.
func (p *UsageProducer) readTarget(ctx context.Context, producer *sources.Producer, key historyKey) {
	if p.histories == nil {
		// The first cycle reads everything anyway.
		return
	}
	var list v1alpha1.VerticalScalerList
	if err := p.Cache.List(ctx, &list, client.InNamespace(key.Namespace)); err != nil {
		logf.FromContext(ctx).Error(err, "Listing VerticalScalers failed")
		return
	}
	var scalers []*v1alpha1.VerticalScaler
	for i := range list.Items {
		if target, ok := targetOf(&list.Items[i]); ok && target == key {
			scalers = append(scalers, &list.Items[i])
		}
	}
	if len(scalers) == 0 {
		return
	}
	var restores failures
	obs := p.observe(ctx, key, scalers, &restores)
	restores.log(ctx, "Reading checkpoints failed; their targets' usage waits for the next cycle")
	if obs.skip {
		return
	}
	for _, vs := range scalers {
		if r := report(vs, *obs); r != nil {
			name := types.NamespacedName{Namespace: vs.Namespace, Name: vs.Name}
			p.Reports.Store(name, *r)
			send(ctx, producer, name)
		}
	}
}
