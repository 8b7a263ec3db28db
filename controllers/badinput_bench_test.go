package controllers_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/testenv"
)

// BenchmarkBadInput measures what malformed objects mixed into the churn cost the well-formed
// ones. Each round runs three phases, in turn first: one with SWITCHBOARD_BENCH_MALFORMED
// malformed objects (1,000: a quarter each of unreadable reload annotations, missing
// ConfigMaps, MyApps whose Deployment's name is taken, VerticalScalers naming a missing
// container; testenv.MalformedObjects), one with as many well-formed twins of the same kinds and
// names (testenv.WellFormedTwins), and one with neither. The malformed objects and the twins are
// changed all along, one change between two of the measured operations. Each phase runs a fresh
// manager with every controller on a namespace of its own, and times, one every 150 ms in turn,
// new MyApps until their status observes their generation and ConfigMap changes until the
// Deployment that takes them gets a new config hash. It reports the p50 and p90 of both beside
// the malformed objects, as ratios of the same without them (x-without) and beside the twins
// (x-twins: the cost of being malformed, the work of as many objects and changes being equal),
// and what the malformed objects got: warning Events per change (the periodic resync, every
// 15 s here, must not say it again), and reconciles beyond what their changes, the resyncs and a
// taken name's retry a minute bring.
func BenchmarkBadInput(b *testing.B) {
	malformed := testenv.BenchSetting("SWITCHBOARD_BENCH_MALFORMED", 1000)
	ops, rounds := 40, 2
	if os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" {
		ops, rounds = 10, 1
	}
	for range b.N {
		results := map[extraObjects][]phaseResult{}
		for round := range rounds {
			for _, extra := range testenv.Rotated([]extraObjects{withMalformed, withTwins, withNothing}, round) {
				results[extra] = append(results[extra], badInputPhase(b, extra, malformed, ops))
			}
		}
		p := func(extra extraObjects, pick func(phaseResult) float64) float64 {
			var xs []float64
			for _, r := range results[extra] {
				xs = append(xs, pick(r))
			}
			return testenv.Median(xs)
		}
		for _, m := range []struct {
			name string
			pick func(phaseResult) float64
		}{
			{"myapp-p50", func(r phaseResult) float64 { return r.converge.p50 }},
			{"myapp-p90", func(r phaseResult) float64 { return r.converge.p90 }},
			{"roll-p50", func(r phaseResult) float64 { return r.roll.p50 }},
			{"roll-p90", func(r phaseResult) float64 { return r.roll.p90 }},
		} {
			bad, none, twins := p(withMalformed, m.pick), p(withNothing, m.pick), p(withTwins, m.pick)
			b.ReportMetric(bad, m.name+"-ms")
			b.ReportMetric(none, m.name+"-ms-without")
			b.ReportMetric(bad/none, m.name+"-x-without")
			b.ReportMetric(bad/twins, m.name+"-x-twins")
		}
		worst := func(pick func(phaseResult) float64) float64 {
			v := 0.0
			for _, r := range results[withMalformed] {
				v = max(v, pick(r))
			}
			return v
		}
		b.ReportMetric(worst(func(r phaseResult) float64 { return r.eventsPerChange }), "max-events/change")
		b.ReportMetric(worst(func(r phaseResult) float64 { return r.extraReconciles }), "max-extra-reconciles")
		b.ReportMetric(float64(malformed), "malformed")
	}
}

// extraObjects is what a bad-input phase has beside its measured operations.
type extraObjects string

const (
	withMalformed extraObjects = "malformed"
	withTwins     extraObjects = "twins"
	withNothing   extraObjects = "nothing"
)

// latencies are the p50 and p90 of one kind of operation, in milliseconds.
type latencies struct{ p50, p90 float64 }

// phaseResult is what one phase measured.
type phaseResult struct {
	converge, roll latencies
	// eventsPerChange is the most warning Events of one malformed object per change of it (its
	// creation counts as one); extraReconciles the most reconciles of one beyond its changes,
	// the periodic resyncs, the first one of the manager and, for a taken name, one a minute.
	eventsPerChange, extraReconciles float64
}

// badInputPhase runs one phase: ops new MyApps and ops ConfigMap changes, one every 150 ms in
// turn, with n malformed objects, or their well-formed twins, changed in between, or nothing.
func badInputPhase(b *testing.B, extra extraObjects, n, ops int) phaseResult {
	b.Helper()
	ctx := context.Background()
	c := env.UnthrottledClient(b)
	ns := env.Namespace(b, "bad-input-")
	const readers = 20
	for i := range readers {
		name := fmt.Sprintf("reader-%d", i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"A": "0"}}
		if err := c.Create(ctx, cm); err != nil {
			b.Fatal(err)
		}
		if err := c.Create(ctx, readerDeployment(ns, name)); err != nil {
			b.Fatal(err)
		}
	}
	var objects []*testenv.Malformed
	switch extra {
	case withMalformed:
		objects = testenv.MalformedObjects(ns, n)
	case withTwins:
		objects = testenv.WellFormedTwins(ns, n)
		if err := testenv.CreateTwinSources(ctx, c, ns); err != nil {
			b.Fatal(err)
		}
	}
	for _, o := range objects {
		if err := o.Create(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	seen := watchLatencies(b, ns)
	recorder := testenv.NewReconcileRecorder(ctrl.Log)
	m := env.StartReplica(b, testenv.Replica{Logger: recorder.Logger()},
		"--controllers=*", "--watch-namespaces="+ns, "--usage-source=off", "--resync-interval="+badInputResync.String())
	started := time.Now()
	defer m.Stop()
	// Every reader recorded, every malformed object seen: the phase starts from a steady state.
	testenv.Eventually(b, 3*time.Minute, func() error {
		if n := seen.recorded(); n < readers {
			return fmt.Errorf("%d of %d readers recorded", n, readers)
		}
		return nil
	})
	testenv.WaitQuiet(b, testenv.InProcess, testenv.Quiet{Controllers: []string{"myapp", "configmapwatcher-deployments", "verticalscaler"},
		Idle: true, For: 2 * time.Second, Interval: 500 * time.Millisecond, Timeout: 3 * time.Minute})

	began := time.Now()
	next := 0
	for i := range 2 * ops {
		if i%2 == 0 {
			name := fmt.Sprintf("app-%d", i/2)
			seen.start("MyApp/" + name)
			app := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}
			if err := c.Create(ctx, app); err != nil {
				b.Fatal(err)
			}
		} else {
			name := fmt.Sprintf("reader-%d", (i/2)%readers)
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
				b.Fatal(err)
			}
			cm.Data["A"] = fmt.Sprint(i)
			seen.start("Deployment/" + name)
			if err := c.Update(ctx, cm); err != nil {
				b.Fatal(err)
			}
		}
		if len(objects) > 0 {
			if err := objects[next%len(objects)].Change(ctx, c); err != nil {
				b.Fatal(err)
			}
			next++
		}
		time.Sleep(150 * time.Millisecond)
	}
	testenv.Eventually(b, 2*time.Minute, func() error {
		if n := seen.pending(); n > 0 {
			return fmt.Errorf("%d operations not done yet", n)
		}
		return nil
	})
	// Past the next periodic resync, so that a malformed object said again at a resync shows.
	time.Sleep(max(0, 20*time.Second-time.Since(began)))
	testenv.WaitQuiet(b, testenv.InProcess, testenv.Quiet{Controllers: []string{"myapp", "configmapwatcher-deployments"},
		Idle: true, For: 2 * time.Second, Interval: 500 * time.Millisecond, Timeout: 2 * time.Minute})
	m.Stop()

	result := phaseResult{converge: seen.latencies("MyApp/"), roll: seen.latencies("Deployment/")}
	if extra == withMalformed {
		result.eventsPerChange, result.extraReconciles = malformedPace(b, ns, objects, recorder.Records(), time.Since(started))
	}
	return result
}

// badInputResync is the periodic resync of the bad-input phases: several in each, so that a
// warning said again at a resync shows.
const badInputResync = 15 * time.Second

// readerDeployment is a Deployment, opted in, that takes key A of the ConfigMap of its name.
func readerDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{v1alpha1.ReloadAnnotation: "true"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "registry.example.com/app:v1",
				Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "A"}}}},
			}}}},
		},
	}
}

// malformedPace returns the most warning Events of one malformed object per change of it, and
// the most reconciles of one beyond what its changes, the periodic resyncs over lifetime, the
// manager's first look and, for a taken name, a retry a minute bring. It fails the benchmark
// when an object got no Event or more than one per change, or was reconciled more often.
func malformedPace(b *testing.B, ns string, objects []*testenv.Malformed, records []testenv.ReconcileRecord, lifetime time.Duration) (events, extra float64) {
	b.Helper()
	warnings, err := testenv.Warnings(context.Background(), env.Client, ns)
	if err != nil {
		b.Fatal(err)
	}
	perObject := map[string]int{}
	for _, r := range records {
		perObject[r.Controller+" "+r.Name]++
	}
	failures := 0
	for _, o := range objects {
		got := warnings[o.WarningKey()]
		if (got == 0 || got > o.Changes) && failures < 10 {
			failures++
			b.Errorf("malformed %s %s got its %s Event %d times for %d changes, want between 1 and %d", o.Kind, o.Object.GetName(), o.Reason, got, o.Changes, o.Changes)
		}
		events = max(events, float64(got)/float64(o.Changes))
		allowed := o.Changes + 1 + int(lifetime/badInputResync)
		if o.Reason == v1alpha1.ReasonDeploymentConflict {
			allowed += int(lifetime/time.Minute) + 1
		}
		beyond := perObject[o.Controller+" "+o.Object.GetName()] - allowed
		if beyond > 0 && failures < 10 {
			failures++
			b.Errorf("malformed %s %s was reconciled %d times more than its %d changes, the resyncs and retries allow", o.Kind, o.Object.GetName(), beyond, o.Changes)
		}
		extra = max(extra, float64(beyond))
	}
	return events, extra
}

// latencyWatch times operations: each starts when the benchmark sends it and ends when a watch
// of ns sees its effect (a MyApp's status observing its generation; a Deployment's new config
// hash).
type latencyWatch struct {
	mu sync.Mutex
	// inFlight holds when each operation not yet seen done was sent, by "Kind/name".
	inFlight map[string]time.Time
	// took holds the milliseconds of the operations done, by kind ("MyApp/").
	took      map[string][]float64
	hashes    map[string]string
	baselines map[string]bool
}

func watchLatencies(b *testing.B, ns string) *latencyWatch {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	w := &latencyWatch{inFlight: map[string]time.Time{}, took: map[string][]float64{}, hashes: map[string]string{}, baselines: map[string]bool{}}
	informers, err := cache.New(env.Config, cache.Options{Scheme: controllers.NewScheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	for obj, seen := range map[client.Object]func(any){&v1alpha1.MyApp{}: w.myApp, &appsv1.Deployment{}: w.deployment} {
		informer, err := informers.GetInformer(ctx, obj)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) { seen(o) }}); err != nil {
			b.Fatal(err)
		}
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		b.Fatal("the latency watch did not sync")
	}
	return w
}

// start notes that the operation on key ("Kind/name") was sent; one still in flight keeps its
// start.
func (w *latencyWatch) start(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.inFlight[key]; !ok {
		w.inFlight[key] = time.Now()
	}
}

// done ends the operation on key, if one is in flight.
func (w *latencyWatch) done(kind, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if at, ok := w.inFlight[kind+name]; ok {
		w.took[kind] = append(w.took[kind], float64(time.Since(at).Microseconds())/1000)
		delete(w.inFlight, kind+name)
	}
}

// pending is the number of operations in flight.
func (w *latencyWatch) pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.inFlight)
}

// recorded is the number of readers the configmapwatcher has recorded.
func (w *latencyWatch) recorded() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.baselines)
}

// latencies returns the p50 and p90 of the operations of kind.
func (w *latencyWatch) latencies(kind string) latencies {
	w.mu.Lock()
	defer w.mu.Unlock()
	xs := slices.Sorted(slices.Values(w.took[kind]))
	if len(xs) == 0 {
		return latencies{}
	}
	return latencies{p50: xs[len(xs)/2], p90: xs[len(xs)*9/10]}
}

func (w *latencyWatch) myApp(obj any) {
	if app, ok := obj.(*v1alpha1.MyApp); ok && app.Status.ObservedGeneration == app.Generation {
		w.done("MyApp/", app.Name)
	}
}

func (w *latencyWatch) deployment(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	hash := d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]
	w.mu.Lock()
	changed := hash != w.hashes[d.Name]
	w.hashes[d.Name] = hash
	if strings.HasPrefix(d.Name, "reader-") && d.Annotations[v1alpha1.ConfigStateAnnotation] != "" {
		w.baselines[d.Name] = true
	}
	w.mu.Unlock()
	if changed {
		w.done("Deployment/", d.Name)
	}
}
