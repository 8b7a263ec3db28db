package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/faultproxy"
	"github.com/example/switchboard/internal/testenv"
	"github.com/example/switchboard/test/reliability/churn"
	"github.com/example/switchboard/test/reliability/runinfo"
)

// Leader election timing of the chaos run, as in the e2e failover tests: short, so that Leases
// move often. A partition lasts three lease durations.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// settings size a chaos run.
type settings struct {
	name string
	// chaos is how long the faults, kills and churn last.
	chaos time.Duration
	// stepEvery is the time between two churn operations.
	stepEvery time.Duration
	// killEvery is the mean time between two kills of a replica.
	killEvery time.Duration
	// resetEvery is the mean time between two connection resets of a replica.
	resetEvery time.Duration
	// partitionEvery is the time between two partitions of the myapp leader.
	partitionEvery time.Duration
	// malformed is the number of malformed objects (a quarter of each kind).
	malformed int
	churn     churn.Config
}

var runs = map[string]settings{
	// The short run keeps `make test-e2e` within CI's budget: about four minutes.
	"short": {name: "short", chaos: 90 * time.Second, stepEvery: 500 * time.Millisecond, killEvery: 40 * time.Second,
		resetEvery: 15 * time.Second, partitionEvery: 60 * time.Second, malformed: 20,
		churn: churn.Config{ConfigMaps: 3, Secrets: 2, Readers: 4, Apps: 12, StableApps: 6, ScaledEvery: 3}},
	"full": {name: "full", chaos: 10 * time.Minute, stepEvery: 400 * time.Millisecond, killEvery: 45 * time.Second,
		resetEvery: 15 * time.Second, partitionEvery: 150 * time.Second, malformed: 1000,
		churn: churn.Config{ConfigMaps: 4, Secrets: 3, Readers: 8, Apps: 30, StableApps: 10, ScaledEvery: 3}},
}

// hostile is what every replica's API server does during the chaos.
var hostile = faultproxy.Faults{
	Latency:         faultproxy.LogNormal{Median: 5 * time.Millisecond, P99: 300 * time.Millisecond, Max: 3 * time.Second},
	TooManyRequests: 0.03, RetryAfter: time.Second,
	InternalError: 0.01, Unavailable: 0.01,
	WatchCut: 20 * time.Second,
}

// TestChaos runs the three controllers on three replicas with a Lease per controller
// (config/overlays/ha), each replica behind its own hostile road to the API server, while the
// churn goes on, replicas are killed at random and the myapp leader is cut off for longer than
// its Lease; then the faults stop. It checks the invariants during and after, and writes a
// report. SWITCHBOARD_CHAOS=short or full selects the size; SWITCHBOARD_CHAOS_SEED repeats a
// run; SWITCHBOARD_CHAOS_DIR keeps the report and the managers' logs.
func TestChaos(t *testing.T) {
	s, ok := runs[os.Getenv("SWITCHBOARD_CHAOS")]
	if !ok {
		t.Skip("the chaos run runs with `make test-chaos` (SWITCHBOARD_CHAOS=full) or `make test-e2e` (short)")
	}
	runinfo.LogErrors()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SWITCHBOARD_CHAOS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("SWITCHBOARD_CHAOS_SEED: %v", err)
		}
	}
	dir := os.Getenv("SWITCHBOARD_CHAOS_DIR")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("chaos run %s, seed %d (SWITCHBOARD_CHAOS_SEED=%d repeats the choices), logs in %s", s.name, seed, seed, dir)
	ctx := context.Background()
	random := rand.New(rand.NewPCG(seed, 0xc4a05))
	rep := &report{settings: s, seed: seed, commit: runinfo.Commit(), loadStart: runinfo.LoadAverage(), began: time.Now()}

	binary := testenv.BuildBinary(t, ".")
	c := testenv.StartLocalCluster(t, 2)
	args := append(c.Deploy(t, "overlays/ha"),
		"--leader-elect-lease-duration="+leaseDuration.String(),
		"--leader-elect-renew-deadline="+renewDeadline.String(),
		"--leader-elect-retry-period="+retryPeriod.String(),
		"--metrics-secure=false", "--zap-log-level=debug",
		// Usage read every 10 s and checkpointed every 30 s, so that Leases move between
		// checkpoints and the history has something to lose.
		"--usage-interval=10s", "--checkpoint-interval=30s")
	_, serviceAccount := c.ServiceAccountKubeconfig(t)
	ns := testenv.Namespace(t, c.Admin, "chaos-")
	seen := observe(t, c.Config, ns)

	rs := newReplicas(t, 3, binary, args, serviceAccount, dir, seed)
	for i := range 3 {
		if _, err := rs.start(i); err != nil {
			t.Fatal(err)
		}
	}
	waitLed(t, rs)

	cfg := s.churn
	cfg.Namespace, cfg.Seed = ns, seed
	load := churn.New(c.Admin, cfg)
	if err := load.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	bad := newBadInput(c.Admin, ns, s.malformed)
	if err := bad.create(ctx); err != nil {
		t.Fatal(err)
	}

	// The chaos: faults on, churn, kills, resets, partitions, until s.chaos has passed.
	if err := rs.setFaults(hostile); err != nil {
		t.Fatal(err)
	}
	chaosCtx, stopChaos := context.WithTimeout(ctx, s.chaos)
	var wg sync.WaitGroup
	var errs errList
	wg.Go(func() { errs.add(churnLoop(chaosCtx, load, bad, s)) })
	wg.Go(func() { errs.add(killLoop(chaosCtx, t, rs, random, s, rep)) })
	wg.Go(func() { errs.add(resetLoop(chaosCtx, rs, random, s)) })
	wg.Go(func() { errs.add(partitionLoop(chaosCtx, rs, s, rep)) })
	wg.Wait()
	stopChaos()
	if err := errs.err(); err != nil {
		t.Fatalf("the chaos stopped: %v", err)
	}
	if err := rs.setFaults(faultproxy.Faults{}); err != nil {
		t.Fatal(err)
	}
	rep.chaosEnded = time.Now()
	// A replica that was down at the end comes back, as its Deployment would bring it back.
	if err := rs.startMissing(); err != nil {
		t.Fatal(err)
	}

	// After the faults: everything converges and the controllers go quiet.
	var violations []Violation
	violations = append(violations, waitConverged(t, c.Admin, ns, load)...)
	waitQuiet(t, rs)
	rep.converged = time.Now()

	// None missed: a new configmapwatcher leader checks every workload again, as a restart
	// would; it must roll none, since every change was rolled already.
	before := seen.rollsOf()
	if err := moveLease(ctx, t, rs, "configmapwatcher-deployments"); err != nil {
		t.Fatal(err)
	}
	waitQuiet(t, rs)
	violations = append(violations, rolledSince(before, seen.rollsOf(), "after the configmapwatcher's Lease moved with nothing changed: a change missed until a replay")...)

	// Exactly once, without faults: each source changed once more, alone.
	exactlyOnce := changeEachSourceOnce(t, load, seen)
	violations = append(violations, exactlyOnce...)
	rep.exactlyOnceKeys = len(load.UsedKeys(stableUses(load)))

	// The record of everything.
	rolls, samples := seen.seen()
	uses := stableUses(load)
	violations = append(violations, CheckRolls(rolls, load.Changes(), uses)...)
	violations = append(violations, CheckSamples(samples)...)
	violations = append(violations, CheckOneWriter(rs.writes(), controllers.LeaseNamePrefix, SwitchboardWrites(testenv.ManagerNamespace))...)
	reconciles, panics := rs.reconciles()
	hot, most := CheckHotLoops(reconciles, 10*time.Second, hotLoopLimit)
	violations = append(violations, hot...)
	for _, crash := range rs.crashed() {
		violations = append(violations, Violation{InvariantNoCrash, crash})
	}
	for _, p := range panics {
		violations = append(violations, Violation{InvariantNoCrash, p})
	}
	badViolations, badFigures := bad.check(ctx, reconciles, rs)
	violations = append(violations, badViolations...)

	rep.ops, rep.changes, rep.rolls, rep.reconciles, rep.mostInWindow = load.Ops(), len(load.Changes()), len(rolls), len(reconciles), most
	rep.http, rep.tcp = rs.stats()
	rep.writes = len(rs.writes())
	rep.terms = termsPerGroup(rs.writes())
	scalers := map[string]bool{}
	for _, s := range samples {
		scalers[s.Scaler] = true
	}
	rep.recommendations, rep.scalers = len(samples), len(scalers)
	rep.processes = len(rs.all)
	rep.badInput = badFigures
	rep.violations = violations
	rep.loadEnd = runinfo.LoadAverage()
	if err := rep.write(dir); err != nil {
		t.Error(err)
	}
	t.Log(rep.summary())
	for i, v := range violations {
		if i == 50 {
			t.Errorf("... and %d violations more (report in %s)", len(violations)-50, dir)
			break
		}
		t.Error(v)
	}
}

// hotLoopLimit is the most reconciles of one object by one replica for one controller in 10 s:
// far above what changes, retries with backoff and Deployment status updates bring, far below
// a reconcile that requeues itself (hundreds a second).
const hotLoopLimit = 60

// errList collects the errors of the chaos's goroutines.
type errList struct {
	mu   sync.Mutex
	errs []error
}

func (e *errList) add(err error) {
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		e.mu.Lock()
		e.errs = append(e.errs, err)
		e.mu.Unlock()
	}
}

func (e *errList) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.errs...)
}

// sleep waits d, or returns ctx's error when it ends first.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// jitter returns d times a random factor between 0.5 and 1.5.
func jitter(r *rand.Rand, d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + r.Float64()))
}

// churnLoop makes a churn operation every stepEvery, and changes the malformed objects once, at
// the middle of the chaos.
func churnLoop(ctx context.Context, load *churn.Churn, bad *badInput, s settings) error {
	middle := time.Now().Add(s.chaos / 2)
	changed := false
	for {
		if err := sleep(ctx, s.stepEvery); err != nil {
			return err
		}
		if err := churnStep(ctx, load.Step); err != nil {
			return err
		}
		if !changed && time.Now().After(middle) {
			changed = true
			if err := churnStep(ctx, bad.change); err != nil {
				return err
			}
		}
	}
}

// churnStep runs one step of the churn to its end even when the chaos window closes during it:
// the window stops the loop between steps. Cutting a step short with the window's deadline
// would fail it with errors that do not all wrap the context's (client-go's rate limiter
// refuses, before the deadline, a wait that would outlast it), and would leave the step half
// done for the convergence checks. churnStepTimeout bounds a step that hangs.
func churnStep(ctx context.Context, step func(context.Context) error) error {
	stepCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), churnStepTimeout)
	defer cancel()
	return step(stepCtx)
}

// churnStepTimeout is far above one step's few requests to the API server, which the faults
// do not touch (the test's client talks to it directly).
const churnStepTimeout = time.Minute

// killLoop kills a replica at random about every killEvery, and starts its next process a few
// seconds later, as a Deployment would replace a Pod.
func killLoop(ctx context.Context, t *testing.T, rs *replicas, random *rand.Rand, s settings, rep *report) error {
	for {
		if err := sleep(ctx, jitter(random, s.killEvery)); err != nil {
			return err
		}
		i := random.IntN(len(rs.current))
		p, err := rs.kill(i)
		if err != nil {
			return err
		}
		if p != nil {
			rep.kills++
			t.Logf("killed %s", p.name)
		}
		if err := sleep(ctx, time.Duration(2+random.IntN(4))*time.Second); err != nil {
			// The replica comes back after the chaos.
			return err
		}
		if _, err := rs.start(i); err != nil {
			return err
		}
	}
}

// resetLoop resets the connections of a live replica about every resetEvery, for a second.
func resetLoop(ctx context.Context, rs *replicas, random *rand.Rand, s settings) error {
	for {
		if err := sleep(ctx, jitter(random, s.resetEvery)); err != nil {
			return err
		}
		live := rs.Live()
		if len(live) == 0 {
			continue
		}
		chain := live[random.IntN(len(live))].chain
		if err := chain.Reset(); err != nil {
			return err
		}
		time.Sleep(time.Second)
		if err := chain.EndReset(); err != nil {
			return err
		}
	}
}

// partitionLoop cuts the replica that leads myapp off for three lease durations, every
// partitionEvery, from the first third of the chaos on: its Lease expires while it has writes
// in flight, another replica takes over, and the cut-off one must have stopped writing by then.
func partitionLoop(ctx context.Context, rs *replicas, s settings, rep *report) error {
	if err := sleep(ctx, s.chaos/3); err != nil {
		return err
	}
	for {
		if leader := rs.leaders(ctx)["myapp"]; leader != nil {
			if err := leader.chain.Partition(); err != nil {
				return err
			}
			rep.partitioned = append(rep.partitioned, leader.name)
			// Not cut short by the end of the chaos: a partition always outlives the Lease.
			time.Sleep(3 * leaseDuration)
			if err := leader.chain.Heal(); err != nil {
				return err
			}
		}
		if err := sleep(ctx, s.partitionEvery); err != nil {
			return err
		}
	}
}

// waitLed waits until every replica is ready and each controller group is led.
func waitLed(t *testing.T, rs *replicas) {
	t.Helper()
	testenv.Poll(t, 3*time.Minute, time.Second, func() error {
		for _, p := range rs.Live() {
			if err := p.proc.Ready(context.Background()); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
		leaders := rs.leaders(context.Background())
		for _, name := range []string{"myapp", "verticalscaler", "configmapwatcher-deployments"} {
			if leaders[name] == nil {
				return fmt.Errorf("no replica leads %s yet", name)
			}
		}
		return nil
	})
}

// waitQuiet waits until the myapp and configmapwatcher controllers of every replica have had
// empty queues and idle workers, and reconciled nothing, for 10 s. (The verticalscaler is not
// waited for: its usage poller brings it news whenever kwok's emulated usage moves.)
func waitQuiet(t *testing.T, rs *replicas) {
	t.Helper()
	quiet := testenv.Quiet{Controllers: []string{"myapp", "configmapwatcher-deployments"}, Idle: true, For: 10 * time.Second, Timeout: 5 * time.Minute}
	// A replica that exited by itself serves no metrics again: stop waiting and say why it
	// is gone, rather than time out on its refused connections.
	ctx, crashed := context.WithCancelCause(context.Background())
	defer crashed(nil)
	_, err := quiet.Wait(ctx, func(ctx context.Context) (map[string]testenv.Reading, error) {
		all := map[string]testenv.Reading{}
		for _, p := range rs.Live() {
			if exited, err := p.proc.Exited(); exited {
				crashed(fmt.Errorf("%s exited by itself (%v); its last lines:\n%s", p.name, err, lastLines(p.proc.Output(), 3)))
				return nil, context.Cause(ctx)
			}
			readings, err := p.proc.ControllerMetrics(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			for name, r := range readings {
				sum := all[name]
				sum.Reconciles += r.Reconciles
				sum.Depth += r.Depth
				sum.Active += r.Active
				all[name] = sum
			}
		}
		return all, nil
	})
	if cause := context.Cause(ctx); cause != nil && err != nil {
		err = cause
	}
	if err != nil {
		t.Fatalf("the controllers did not go quiet after the chaos: %v", err)
	}
}

// lastLines returns the last n lines of output.
func lastLines(output string, n int) string {
	lines := strings.Split(strings.TrimRight(output, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// moveLease kills the replica that leads controller and starts its next process, and waits
// until another replica leads it and has replayed what it owns.
func moveLease(ctx context.Context, t *testing.T, rs *replicas, controller string) error {
	leader := rs.leaders(ctx)[controller]
	if leader == nil {
		return fmt.Errorf("no replica leads %s", controller)
	}
	if _, err := rs.kill(leader.replica); err != nil {
		return err
	}
	if _, err := rs.start(leader.replica); err != nil {
		return err
	}
	testenv.Poll(t, time.Minute, 500*time.Millisecond, func() error {
		if p := rs.leaders(ctx)[controller]; p == nil || p == leader {
			return fmt.Errorf("no new leader of %s yet", controller)
		}
		return nil
	})
	return nil
}

// rolledSince reports the workloads that rolled between two counts.
func rolledSince(before, after map[string]int, why string) []Violation {
	var out []Violation
	for workload, n := range after {
		if n > before[workload] {
			out = append(out, Violation{InvariantRolls, fmt.Sprintf("%s rolled %d times %s", workload, n-before[workload], why)})
		}
	}
	return out
}

// stableUses is the keys taken by the workloads that lived through the whole run.
func stableUses(load *churn.Churn) map[string][]churn.SourceKey {
	out := map[string][]churn.SourceKey{}
	for workload, keys := range load.Uses() {
		if load.Stable(workload) {
			out[workload] = keys
		}
	}
	return out
}

// changeEachSourceOnce changes one key of every source used by a stable workload, one source at
// a time, and checks that each workload taking that key rolls exactly once and no other rolls.
func changeEachSourceOnce(t *testing.T, load *churn.Churn, seen *observer) []Violation {
	t.Helper()
	uses := stableUses(load)
	var out []Violation
	for _, source := range load.UsedKeys(uses) {
		before := seen.rollsOf()
		if err := load.ChangeKey(context.Background(), source); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{}
		for workload, keys := range uses {
			for _, k := range keys {
				if k == source {
					want[workload] = 1
				}
			}
		}
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			done := true
			after := seen.rollsOf()
			for workload := range want {
				if after[workload] == before[workload] {
					done = false
				}
			}
			if done {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		// Time for a second roll, or a stray one, to show: without faults a roll takes tens of
		// milliseconds.
		time.Sleep(3 * time.Second)
		after := seen.rollsOf()
		for workload := range uses {
			if got := after[workload] - before[workload]; got != want[workload] {
				out = append(out, Violation{InvariantRolls, fmt.Sprintf("after the faults, %s %s key %s changed alone: %s rolled %d times, want %d",
					source.Kind, source.Name, source.Key, workload, got, want[workload])})
			}
		}
	}
	return out
}

// waitConverged waits until every live MyApp has converged (its generation observed, its
// Deployment with its image and replicas, its Service) and every deleted one has left nothing
// behind, and returns what still is not so after five minutes.
func waitConverged(t *testing.T, c client.Client, ns string, load *churn.Churn) []Violation {
	t.Helper()
	var problems []Violation
	deadline := time.Now().Add(5 * time.Minute)
	for {
		problems = convergence(context.Background(), c, ns, load)
		if len(problems) == 0 || time.Now().After(deadline) {
			return problems
		}
		time.Sleep(2 * time.Second)
	}
}

// convergence says which MyApps have not converged, or left something behind.
func convergence(ctx context.Context, c client.Client, ns string, load *churn.Churn) []Violation {
	var apps v1alpha1.MyAppList
	var deployments appsv1.DeploymentList
	var services corev1.ServiceList
	for _, list := range []client.ObjectList{&apps, &deployments, &services} {
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return []Violation{{InvariantConverged, err.Error()}}
		}
	}
	byName := map[string]v1alpha1.MyApp{}
	for _, a := range apps.Items {
		byName[a.Name] = a
	}
	owned := map[string][]string{} // MyApp uid -> what it controls
	for _, d := range deployments.Items {
		if ref := metav1.GetControllerOf(&d); ref != nil && ref.Kind == "MyApp" {
			owned[string(ref.UID)] = append(owned[string(ref.UID)], "Deployment "+d.Name)
		}
	}
	for _, s := range services.Items {
		if ref := metav1.GetControllerOf(&s); ref != nil && ref.Kind == "MyApp" {
			owned[string(ref.UID)] = append(owned[string(ref.UID)], "Service "+s.Name)
		}
	}
	deploymentsByName := map[string]appsv1.Deployment{}
	for _, d := range deployments.Items {
		deploymentsByName[d.Name] = d
	}
	var out []Violation
	live, deleted := load.Apps()
	for _, name := range live {
		a, ok := byName[name]
		switch {
		case !ok:
			out = append(out, Violation{InvariantConverged, fmt.Sprintf("MyApp %s is gone, though never deleted", name)})
			continue
		case a.Status.ObservedGeneration != a.Generation:
			out = append(out, Violation{InvariantConverged, fmt.Sprintf("MyApp %s: generation %d, observed %d", name, a.Generation, a.Status.ObservedGeneration)})
		}
		if got := owned[string(a.UID)]; len(got) != 2 || got[0] != "Deployment "+name || got[1] != "Service "+name {
			out = append(out, Violation{InvariantConverged, fmt.Sprintf("MyApp %s controls %v, want exactly its Deployment and its Service", name, got)})
			continue
		}
		d := deploymentsByName[name]
		if image := d.Spec.Template.Spec.Containers[0].Image; image != a.Spec.Image || d.Spec.Replicas == nil || *d.Spec.Replicas != a.Spec.Replicas {
			out = append(out, Violation{InvariantConverged, fmt.Sprintf("MyApp %s wants %s × %d, its Deployment runs %s × %v", name, a.Spec.Image, a.Spec.Replicas, image, d.Spec.Replicas)})
		}
	}
	for _, name := range deleted {
		if a, ok := byName[name]; ok {
			out = append(out, Violation{InvariantConverged, fmt.Sprintf("deleted MyApp %s is still there (finalizers %v)", name, a.Finalizers)})
		}
		for _, what := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, what); !apierrors.IsNotFound(err) {
				out = append(out, Violation{InvariantConverged, fmt.Sprintf("deleted MyApp %s left its %T behind (%v)", name, what, err)})
			}
		}
	}
	return out
}
