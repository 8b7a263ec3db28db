package leases

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

const testNamespace = "leases"

// Short timing for tests: the Lease stores whole seconds.
func testConfig(client *fake.Clientset, identity string) Config {
	return Config{
		Client:        client.CoordinationV1(),
		Namespace:     testNamespace,
		Identity:      identity,
		LeaseDuration: 2 * time.Second,
		RenewDeadline: time.Second,
		RetryPeriod:   100 * time.Millisecond,
		Log:           logr.Discard(),
	}
}

func TestConfigValidate(t *testing.T) {
	good := testConfig(fake.NewClientset(), "a")
	for _, tc := range []struct {
		name   string
		change func(*Config)
		ok     bool
	}{
		{"good", func(*Config) {}, true},
		{"no identity", func(c *Config) { c.Identity = "" }, false},
		{"renew deadline not after the jittered retry", func(c *Config) { c.RenewDeadline = 110 * time.Millisecond }, false},
		{"lease not longer than the renew deadline", func(c *Config) { c.LeaseDuration = time.Second }, false},
		{"lease of a fraction of a second", func(c *Config) { c.LeaseDuration = 2500 * time.Millisecond }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.change(&c)
			if err := c.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestHeadStart: a replica waits one unit per group it leads beyond the least loaded replica it
// sees, counted from when it first saw the Lease free; after an expiry, replicas that each
// lead as many do not wait.
func TestHeadStart(t *testing.T) {
	r, err := NewReplica(testConfig(fake.NewClientset(), "me"))
	if err != nil {
		t.Fatal(err)
	}
	unit := r.headStartUnit()
	start := time.Unix(1000, 0)
	held := func(holder string, changed time.Time) observation {
		return observation{record: &rl.LeaderElectionRecord{HolderIdentity: holder, LeaseDurationSeconds: 2}, raw: []byte(holder), changed: changed}
	}
	for _, tc := range []struct {
		name string
		// others are the other groups: leading by this replica, or observed held.
		others map[string]*group
		record *rl.LeaderElectionRecord
		// observed is what this replica saw of the Lease itself.
		observed observation
		want     time.Duration
	}{
		{name: "missing, leads nothing", want: 0},
		{name: "missing, leads one", others: map[string]*group{"b": {leading: true}}, want: unit},
		{name: "missing, leads two", others: map[string]*group{"b": {leading: true}, "c": {leading: true}}, want: 2 * unit},
		{name: "missing, another group reserved", others: map[string]*group{"b": {reservedAt: start}}, want: unit},
		{name: "missing, a stale reservation", others: map[string]*group{"b": {reservedAt: start.Add(-3 * unit)}}, want: 0},
		{name: "released, leads one", others: map[string]*group{"b": {leading: true}},
			record: &rl.LeaderElectionRecord{LeaseDurationSeconds: 1}, want: unit},
		{name: "held by another", others: map[string]*group{"b": {leading: true}},
			record: &rl.LeaderElectionRecord{HolderIdentity: "x", LeaseDurationSeconds: 2}, observed: held("x", start), want: 0},
		{name: "expired, leads one, another replica leads one", others: map[string]*group{"b": {leading: true}, "c": {observed: held("y", start)}},
			record: &rl.LeaderElectionRecord{HolderIdentity: "x", LeaseDurationSeconds: 2}, observed: held("x", start.Add(-3*time.Second)), want: 0},
		{name: "expired, leads two, another replica leads one", others: map[string]*group{"b": {leading: true}, "c": {leading: true}, "d": {observed: held("y", start)}},
			record: &rl.LeaderElectionRecord{HolderIdentity: "x", LeaseDurationSeconds: 2}, observed: held("x", start.Add(-3*time.Second)), want: unit},
		{name: "expired, leads one, no other holder seen", others: map[string]*group{"b": {leading: true}},
			record: &rl.LeaderElectionRecord{HolderIdentity: "x", LeaseDurationSeconds: 2}, observed: held("x", start.Add(-3*time.Second)), want: unit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.groups = map[string]*group{"a": {observed: tc.observed}}
			for name, g := range tc.others {
				r.groups[name] = g
			}
			if got := r.headStart("a", tc.record, start); got != tc.want {
				t.Errorf("head start %s, want %s", got, tc.want)
			}
			// Half a unit later the wait is half a unit shorter: it counts from the first sight.
			if tc.want > 0 {
				if got := r.headStart("a", tc.record, start.Add(unit/2)); got != tc.want-unit/2 {
					t.Errorf("half a unit later: head start %s, want %s", got, tc.want-unit/2)
				}
			}
			if tc.want == 0 && tc.record != nil && tc.record.HolderIdentity == "x" && valid(tc.observed, start) {
				return
			}
			if tc.want == 0 && r.groups["a"].reservedAt.IsZero() {
				t.Errorf("a free Lease taken without a head start is not reserved")
			}
		})
	}
}

// runReplica runs r's election of group "g" with term in the background; stop cancels it and
// returns Run's error.
func runReplica(t *testing.T, r *Replica, term Term) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, "g", "lease-g", term) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				err = errors.New("Run did not return within 10s of its context's end")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// blockingTerm runs until its context ends, then takes linger to stop; it records when it ran.
type blockingTerm struct {
	linger  time.Duration
	running atomic.Bool
	mu      sync.Mutex
	stopped time.Time
}

func (b *blockingTerm) run(ctx context.Context) error {
	b.running.Store(true)
	<-ctx.Done()
	time.Sleep(b.linger)
	b.mu.Lock()
	b.stopped = time.Now()
	b.mu.Unlock()
	b.running.Store(false)
	return nil
}

func (b *blockingTerm) stoppedAt() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped
}

func lease(t *testing.T, client *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := client.CoordinationV1().Leases(testNamespace).Get(context.Background(), "lease-g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// steal writes lease-g with another holder, "thief", as a replica that took it would, and
// returns when the theft began. It sets stolenAt, which the tests' reactors read to refuse the
// leader's writes, before the thief's write: a renewal between the two would otherwise
// overwrite the thief on the fake, which has no resourceVersion check.
func steal(t *testing.T, client *fake.Clientset, stolenAt *atomic.Int64) time.Time {
	t.Helper()
	stolen := time.Now()
	stolenAt.Store(stolen.UnixNano())
	l := lease(t, client)
	l.Spec.HolderIdentity = new("thief")
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := client.CoordinationV1().Leases(testNamespace).Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return stolen
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestReleaseWaitsForTheTerm: on shutdown the Lease is released (so the next leader need not
// wait it out), but only once the term has stopped.
func TestReleaseWaitsForTheTerm(t *testing.T) {
	client := fake.NewClientset()
	var mu sync.Mutex
	var released time.Time
	client.PrependReactor("update", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		l := action.(clienttesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if holder(l) == "" {
			mu.Lock()
			released = time.Now()
			mu.Unlock()
		}
		return false, nil, nil
	})
	r, err := NewReplica(testConfig(client, "a"))
	if err != nil {
		t.Fatal(err)
	}
	term := &blockingTerm{linger: 300 * time.Millisecond}
	stop := runReplica(t, r, term.run)
	waitFor(t, 5*time.Second, "leading", func() bool { return r.Leading("g") && term.running.Load() })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if released.IsZero() {
		t.Fatalf("the Lease was not released; holder %q", holder(lease(t, client)))
	}
	if released.Before(term.stoppedAt()) {
		t.Errorf("released %s before the term stopped", term.stoppedAt().Sub(released))
	}
	if got := holder(lease(t, client)); got != "" {
		t.Errorf("holder after release %q", got)
	}
}

// TestAnotherHolderStopsTheTerm: when the Lease is taken from under the leader (written with
// another holder), its term stops at its next renewal, long before the Lease could expire; it
// then competes again and leads once the other holder's Lease has expired.
func TestAnotherHolderStopsTheTerm(t *testing.T) {
	client := fake.NewClientset()
	// The fake client has no optimistic concurrency: the leader's next renewal would simply
	// overwrite the thief's. A real API server refuses it (the resourceVersion moved on), and
	// the leader reads the Lease; make the fake refuse it the same way for a while.
	var stolenAt atomic.Int64
	client.PrependReactor("update", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		since := time.Since(time.Unix(0, stolenAt.Load()))
		if holder(action.(clienttesting.UpdateAction).GetObject().(*coordinationv1.Lease)) == "a" && stolenAt.Load() != 0 && since < 3*time.Second {
			return true, nil, errors.New("conflict")
		}
		return false, nil, nil
	})
	r, err := NewReplica(testConfig(client, "a"))
	if err != nil {
		t.Fatal(err)
	}
	term := &blockingTerm{}
	runReplica(t, r, term.run)
	waitFor(t, 5*time.Second, "leading", func() bool { return r.Leading("g") && term.running.Load() })

	stolen := steal(t, client, &stolenAt)
	waitFor(t, time.Second, "the term stopped", func() bool { return !term.stoppedAt().IsZero() })
	if took := term.stoppedAt().Sub(stolen); took > 500*time.Millisecond {
		t.Errorf("the term stopped %s after the Lease was taken; want within a few retry periods", took)
	}
	// The thief never renews: after its lease duration the replica leads again.
	waitFor(t, 6*time.Second, "leading again", func() bool { return r.Leading("g") && term.running.Load() })
	if got := holder(lease(t, client)); got != "a" {
		t.Errorf("holder %q, want a", got)
	}
}

// TestDeletedLeaseStaysWithItsHolder: a Lease deleted under its holder is recreated by the
// holder, and another replica does not take it meanwhile.
func TestDeletedLeaseStaysWithItsHolder(t *testing.T) {
	client := fake.NewClientset()
	a, err := NewReplica(testConfig(client, "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewReplica(testConfig(client, "b"))
	if err != nil {
		t.Fatal(err)
	}
	termA, termB := &blockingTerm{}, &blockingTerm{}
	runReplica(t, a, termA.run)
	waitFor(t, 5*time.Second, "a leading", func() bool { return a.Leading("g") && termA.running.Load() })
	runReplica(t, b, termB.run)
	waitFor(t, 5*time.Second, "b saw a's Lease", func() bool { return b.Holder("g") == "a" })

	for range 5 {
		if err := client.CoordinationV1().Leases(testNamespace).Delete(context.Background(), "lease-g", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(500 * time.Millisecond)
		for time.Now().Before(deadline) {
			if termB.running.Load() {
				t.Fatal("b started leading after the Lease was deleted under a")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(t, 2*time.Second, "a recreated the Lease", func() bool {
		l, err := client.CoordinationV1().Leases(testNamespace).Get(context.Background(), "lease-g", metav1.GetOptions{})
		return err == nil && holder(l) == "a"
	})
	if !termA.running.Load() {
		t.Error("a stopped leading")
	}
}

// TestTermThatOutlivesTheLeaseFailsRun: a term that does not stop when told must not go on
// beside the next leader unnoticed: Run fails once another replica could have taken over.
func TestTermThatOutlivesTheLeaseFailsRun(t *testing.T) {
	client := fake.NewClientset()
	var away atomic.Bool
	client.PrependReactor("*", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if away.Load() {
			return true, nil, errors.New("API server away")
		}
		return false, nil, nil
	})
	r, err := NewReplica(testConfig(client, "a"))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	stuck := func(ctx context.Context) error {
		<-ctx.Done()
		<-release
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, "g", "lease-g", stuck) }()
	waitFor(t, 5*time.Second, "leading", func() bool { return r.Leading("g") })
	// Renewals fail from now on.
	away.Store(true)
	failing := time.Now()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Run returned no error")
		}
		// The lease duration after the last renewal, which was before the failures began.
		if took := time.Since(failing); took > 3*time.Second {
			t.Errorf("Run failed %s after renewals began to fail; want within the lease duration and a retry", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not fail within 10s")
	}
}

// TestDefersToTheOtherScope: while a Lease of the other election scope is held, the replica
// takes no Lease; once it is released, it does.
func TestDefersToTheOtherScope(t *testing.T) {
	client := fake.NewClientset()
	now := metav1.NewMicroTime(time.Now())
	other := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "manager"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: new("old-replica"), LeaseDurationSeconds: new(int32(2)), RenewTime: &now, AcquireTime: &now},
	}
	if _, err := client.CoordinationV1().Leases(testNamespace).Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(client, "a")
	cfg.Defer = NewDeferral(client.CoordinationV1(), testNamespace, []string{"manager"})
	r, err := NewReplica(cfg)
	if err != nil {
		t.Fatal(err)
	}
	term := &blockingTerm{}
	runReplica(t, r, term.run)
	// The old replica keeps renewing.
	for range 10 {
		time.Sleep(100 * time.Millisecond)
		now := metav1.NewMicroTime(time.Now())
		other.Spec.RenewTime = &now
		if _, err := client.CoordinationV1().Leases(testNamespace).Update(context.Background(), other, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if term.running.Load() {
			t.Fatal("took a Lease while the other scope's was held")
		}
	}
	other.Spec.HolderIdentity = new("")
	if _, err := client.CoordinationV1().Leases(testNamespace).Update(context.Background(), other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "leading once the other scope's Lease was released", func() bool { return term.running.Load() })
}

// earlierNamesDeferral defers to the Leases "switchboard" and "switchboard-g" of the earlier
// names, whose holders starting "sb-" are ours, for a quiet period of two seconds.
func earlierNamesDeferral(client *fake.Clientset) *Deferral {
	ours := func(holder string) bool { return strings.HasPrefix(holder, "sb-") }
	return NewDeferral(client.CoordinationV1(), testNamespace, nil).
		WithEarlierNames([]string{"switchboard", "switchboard-g"}, ours, 2*time.Second, logr.Discard())
}

// newNamesReplica returns the replica sb-new-0 of an installation that moved to Leases of its
// own name, deferring to earlierNamesDeferral.
func newNamesReplica(t *testing.T, client *fake.Clientset) *Replica {
	t.Helper()
	cfg := testConfig(client, "sb-new-0")
	cfg.Defer = earlierNamesDeferral(client)
	r, err := NewReplica(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWaitsForEarlierNamesHeldByOurs: while a replica of the earlier names that is ours holds
// one of their Leases, the replica takes none; once that Lease is released, it still waits the
// quiet period, for another replica of the earlier names that may take it over, then leads and
// deletes the Lease.
func TestWaitsForEarlierNamesHeldByOurs(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	earlier := heldLease("switchboard-g", "sb-old-0")
	if _, err := client.CoordinationV1().Leases(testNamespace).Create(ctx, earlier, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	term := &blockingTerm{}
	runReplica(t, newNamesReplica(t, client), term.run)
	for range 10 {
		time.Sleep(100 * time.Millisecond)
		if _, err := client.CoordinationV1().Leases(testNamespace).Update(ctx, heldLease("switchboard-g", "sb-old-0"), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if term.running.Load() {
			t.Fatal("took a Lease while ours held one of the earlier names")
		}
	}
	released := time.Now()
	if _, err := client.CoordinationV1().Leases(testNamespace).Update(ctx, heldLease("switchboard-g", ""), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "leading once the earlier Lease was released and the quiet period passed", func() bool { return term.running.Load() })
	if waited := time.Since(released); waited < 2*time.Second {
		t.Errorf("led %s after the earlier Lease was released, within the quiet period of 2s", waited)
	}
	if _, err := client.CoordinationV1().Leases(testNamespace).Get(ctx, "switchboard-g", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the earlier Lease after the replica led: %v, want it deleted", err)
	}
}

// TestEarlierNamesOfAnotherInstallation: a Lease of the earlier names held by a replica that is
// not ours (another installation that still uses those names) keeps the replica waiting only
// for the quiet period from its start, and stays; without any Lease of the earlier names, the
// replica does not wait at all.
func TestEarlierNamesOfAnotherInstallation(t *testing.T) {
	t.Run("held by another", func(t *testing.T) {
		client := fake.NewClientset()
		ctx := context.Background()
		if _, err := client.CoordinationV1().Leases(testNamespace).Create(ctx, heldLease("switchboard", "other-0"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r := newNamesReplica(t, client)
		term := &blockingTerm{}
		started := time.Now()
		runReplica(t, r, term.run)
		waitFor(t, 5*time.Second, "leading beside another installation's Lease of the earlier names", func() bool { return term.running.Load() })
		if waited := time.Since(started); waited < 2*time.Second {
			t.Errorf("led %s after its start, within the quiet period of 2s", waited)
		}
		if l, err := client.CoordinationV1().Leases(testNamespace).Get(ctx, "switchboard", metav1.GetOptions{}); err != nil || holder(l) != "other-0" {
			t.Errorf("the other installation's Lease: %v, %v; want it held by other-0 still", l, err)
		}
	})
	t.Run("none", func(t *testing.T) {
		client := fake.NewClientset()
		term := &blockingTerm{}
		runReplica(t, newNamesReplica(t, client), term.run)
		waitFor(t, time.Second, "leading without any Lease of the earlier names", func() bool { return term.running.Load() })
	})
}

// heldLease is a Lease named name held by holder, renewed now, for two seconds.
func heldLease(name, holder string) *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Now())
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: new(holder), LeaseDurationSeconds: new(int32(2)), RenewTime: &now, AcquireTime: &now},
	}
}

// takenAtOnce makes the other scope's Lease other held by "old-replica" the moment this
// replica creates its Lease mine: the two scopes race, and the other scope's write lands first.
func takenAtOnce(client *fake.Clientset, mine, other string) {
	client.PrependReactor("create", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.(clienttesting.CreateAction).GetObject().(*coordinationv1.Lease).Name == mine {
			// The tracker directly: the fake clientset holds its own lock while reactors run.
			if err := client.Tracker().Add(heldLease(other, "old-replica")); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
}

// TestYieldsWhenBothScopesTakeAtOnce: a replica that took its group's Lease just as a replica of
// the other scope took its own gives its Lease back and never runs the term while the other
// holds; once the other releases, it leads.
func TestYieldsWhenBothScopesTakeAtOnce(t *testing.T) {
	client := fake.NewClientset()
	takenAtOnce(client, "lease-g", "manager")
	cfg := testConfig(client, "a")
	cfg.Defer = NewDeferral(client.CoordinationV1(), testNamespace, []string{"manager"})
	r, err := NewReplica(cfg)
	if err != nil {
		t.Fatal(err)
	}
	term := &blockingTerm{}
	runReplica(t, r, term.run)
	waitFor(t, 3*time.Second, "the group's Lease created", func() bool {
		_, err := client.CoordinationV1().Leases(testNamespace).Get(context.Background(), "lease-g", metav1.GetOptions{})
		return err == nil
	})
	// The other scope keeps renewing; this replica must not lead meanwhile.
	other := heldLease("manager", "old-replica")
	for range 10 {
		time.Sleep(100 * time.Millisecond)
		if term.running.Load() || r.Leading("g") {
			t.Fatal("ran the term while the other scope held its Lease")
		}
		if got := holder(lease(t, client)); got != "" {
			t.Fatalf("the group's Lease is held by %q while the other scope holds its own; want it given back", got)
		}
		if _, err := client.CoordinationV1().Leases(testNamespace).Update(context.Background(), heldLease("manager", "old-replica"), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	other.Spec.HolderIdentity = new("")
	if _, err := client.CoordinationV1().Leases(testNamespace).Update(context.Background(), other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "leading once the other scope's Lease was released", func() bool { return term.running.Load() })
}

// TestDeferringLock: the manager's lock waits to read its Lease while a group's Lease is held,
// and gives back a Lease it created just as a group's was taken.
func TestDeferringLock(t *testing.T) {
	client := fake.NewClientset()
	takenAtOnce(client, "manager", "lease-g")
	lock := NewDeferringLock(&rl.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: testNamespace, Name: "manager"},
		Client:     client.CoordinationV1(),
		LockConfig: rl.ResourceLockConfig{Identity: "m"},
	}, NewDeferral(client.CoordinationV1(), testNamespace, []string{"lease-g"}), 50*time.Millisecond, func(string, ...any) {})
	ctx := context.Background()

	now := metav1.NewTime(time.Now())
	if err := lock.Create(ctx, rl.LeaderElectionRecord{HolderIdentity: "m", LeaseDurationSeconds: 2, AcquireTime: now, RenewTime: now}); err == nil {
		t.Error("Create succeeded although a group's Lease was taken at once")
	}
	manager, err := client.CoordinationV1().Leases(testNamespace).Get(ctx, "manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := holder(manager); got != "" {
		t.Errorf("the manager's Lease is held by %q; want it given back", got)
	}

	// While the group's Lease is held, Get does not return.
	waiting, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, _, err := lock.Get(waiting); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get while a group's Lease is held = %v, want it to wait until its context ends", err)
	}
	// Released: Get reads the manager's Lease.
	if _, err := client.CoordinationV1().Leases(testNamespace).Update(ctx, heldLease("lease-g", ""), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lock.Get(ctx); err != nil {
		t.Errorf("Get once the group's Lease was released = %v", err)
	}
}

// TestLosingOneLeaseStopsOnlyItsGroup: a replica that leads two groups and loses one Lease
// stops that group's term only; the other group's term runs on, untouched, and so does Run.
func TestLosingOneLeaseStopsOnlyItsGroup(t *testing.T) {
	client := fake.NewClientset()
	// As in TestAnotherHolderStopsTheTerm: refuse the leader's renewals of the stolen Lease, as
	// a real API server would once the thief's write moved its resourceVersion on.
	var stolenAt atomic.Int64
	client.PrependReactor("update", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		l := action.(clienttesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if l.Name == "lease-g" && holder(l) == "a" && stolenAt.Load() != 0 {
			return true, nil, errors.New("conflict")
		}
		return false, nil, nil
	})
	r, err := NewReplica(testConfig(client, "a"))
	if err != nil {
		t.Fatal(err)
	}
	g, h := &blockingTerm{}, &blockingTerm{}
	runReplica(t, r, g.run)
	ctx, cancel := context.WithCancel(context.Background())
	hDone := make(chan error, 1)
	go func() { hDone <- r.Run(ctx, "h", "lease-h", h.run) }()
	t.Cleanup(func() {
		cancel()
		if err := <-hDone; err != nil {
			t.Errorf("Run of h: %v", err)
		}
	})
	waitFor(t, 5*time.Second, "leading both groups", func() bool {
		return r.Leading("g") && r.Leading("h") && g.running.Load() && h.running.Load()
	})

	steal(t, client, &stolenAt)
	waitFor(t, time.Second, "g's term stopped", func() bool { return !g.stoppedAt().IsZero() })
	// Past h's renew deadline: h renewed all along and its term never stopped.
	time.Sleep(1500 * time.Millisecond)
	if !h.running.Load() || !r.Leading("h") || !h.stoppedAt().IsZero() {
		t.Errorf("h: term running %v, leading %v, stopped at %v; want it untouched by g's loss", h.running.Load(), r.Leading("h"), h.stoppedAt())
	}
	select {
	case err := <-hDone:
		t.Errorf("Run of h returned %v when g lost its Lease", err)
		hDone <- err // for the cleanup, which waits for it
	default:
	}
	if r.Leading("g") {
		t.Error("still leading g while the thief holds its Lease")
	}
}
