package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/testenv"
)

// Short leader election timing for the tests (the Lease stores whole seconds): a leader stops
// within the renew deadline of its last renewal, another replica may start a lease duration
// after it last saw one.
const (
	testLeaseDuration = 3 * time.Second
	testRenewDeadline = 2 * time.Second
	testRetryPeriod   = 250 * time.Millisecond
)

// replica is one manager of a test that runs several as one installation.
type replica struct {
	id       string
	manager  *testenv.Manager
	recorder *testenv.ReconcileRecorder
	// cut fails every Lease request of the replica while set: a network partition between it
	// and the Leases, while its other requests (its controllers' writes) still go through.
	cut atomic.Bool
}

// leaseCutter fails the Lease requests of its replica while the replica is cut off.
type leaseCutter struct {
	next http.RoundTripper
	cut  *atomic.Bool
}

func (l leaseCutter) RoundTrip(r *http.Request) (*http.Response, error) {
	if l.cut.Load() && strings.Contains(r.URL.Path, "/apis/coordination.k8s.io/") {
		return nil, errors.New("cut off from the Leases by the test")
	}
	return l.next.RoundTrip(r)
}

// startReplicas starts n managers with a Lease per controller in leaseNamespace, each with its
// own identity (prefix0, prefix1, ...), reconcile record and connection, and args; perReplica,
// when not nil, adds the flags of replica i.
//
// A test whose replicas watch only its own namespace (--watch-namespaces) and which reads only
// their reconcile records, never the process's shared metrics, runs in parallel with the others
// like it (t.Parallel): that halves this package's time. Tests with a manager over every
// namespace stay sequential, so none of them sees another test's objects.
func startReplicas(t *testing.T, prefix string, n int, leaseNamespace string, perReplica func(i int) []string, args ...string) []*replica {
	t.Helper()
	base := []string{
		"--leader-elect", "--leader-elect-scope=controller", "--leader-election-namespace=" + leaseNamespace,
		"--leader-elect-lease-duration=" + testLeaseDuration.String(),
		"--leader-elect-renew-deadline=" + testRenewDeadline.String(),
		"--leader-elect-retry-period=" + testRetryPeriod.String(),
		"--usage-source=off",
	}
	replicas := make([]*replica, n)
	for i := range replicas {
		r := &replica{id: fmt.Sprintf("%s%d", prefix, i), recorder: testenv.NewReconcileRecorder(ctrl.Log)}
		all := append(slices.Clone(base), args...)
		if perReplica != nil {
			all = append(all, perReplica(i)...)
		}
		r.manager = env.StartReplica(t, testenv.Replica{
			Identity:      r.id,
			Logger:        r.recorder.Logger(),
			WrapTransport: func(next http.RoundTripper) http.RoundTripper { return leaseCutter{next: next, cut: &r.cut} },
		}, all...)
		replicas[i] = r
	}
	return replicas
}

// holders returns the holder of each controller's Lease in ns ("" when free or missing); the
// manager's Lease is named as it is, controllers.LeaderElectionID.
func holders(t *testing.T, ns string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range names {
		lease := controllers.LeaseNamePrefix + name
		if name == controllers.LeaderElectionID {
			lease = name
		}
		out[name] = leaseHolders(t, ns, lease)[lease]
	}
	return out
}

// waitHeld waits until every named Lease has a holder other than not, and returns the holders.
func waitHeld(t *testing.T, ns string, timeout time.Duration, not string, names ...string) map[string]string {
	t.Helper()
	var got map[string]string
	testenv.Eventually(t, timeout, func() error {
		got = holders(t, ns, names...)
		for _, name := range names {
			if got[name] == "" || got[name] == not {
				return fmt.Errorf("holders %v", got)
			}
		}
		return nil
	})
	return got
}

var allControllers = []string{"myapp", "verticalscaler", "configmapwatcher"}

// TestOneWriterPerController runs three replicas with a Lease per controller while every
// controller reconciles all the time (a periodic resync every second), and forces the Leases to
// move every way they can: taken by someone else, deleted, the leader cut off from the Leases
// while it can still write everything else, the leader stopped. From each replica's record of
// its reconciles, no two replicas ever reconcile for one controller at once; and what the
// controllers own still converges.
func TestOneWriterPerController(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := env.Namespace(t, "replicas-")
	const apps = 8
	createWorkload(t, ns, apps)
	replicas := startReplicas(t, "r", 3, ns, nil, "--watch-namespaces="+ns, "--resync-interval=1s")
	byID := map[string]*replica{}
	for _, r := range replicas {
		byID[r.id] = r
	}
	start := waitHeld(t, ns, 30*time.Second, "", allControllers...)
	t.Logf("leaders at start: %v", start)
	waitConverged(t, ns, apps, 1)
	time.Sleep(2 * time.Second)

	// 1. Another holder takes the myapp Lease (not a replica: an operator, a bug).
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: controllers.LeaseNamePrefix + "myapp"}, l); err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.AcquireTime = new("thief"), &now, &now
		return env.Client.Update(ctx, l)
	})
	if err != nil {
		t.Fatal(err)
	}
	stolen := time.Now()
	after := waitHeld(t, ns, 15*time.Second, "thief", "myapp")
	t.Logf("myapp Lease taken by a thief from %s; %s leads it after the thief's lease expired", start["myapp"], after["myapp"])
	time.Sleep(2 * time.Second)

	// 2. The verticalscaler Lease is deleted: its holder recreates it and keeps leading.
	before := holders(t, ns, "verticalscaler")["verticalscaler"]
	for range 3 {
		if err := env.Client.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: controllers.LeaseNamePrefix + "verticalscaler"}}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	if got := waitHeld(t, ns, 10*time.Second, "", "verticalscaler")["verticalscaler"]; got != before {
		t.Errorf("the verticalscaler Lease moved from %s to %s after being deleted; its holder should have recreated it", before, got)
	}

	// 3. The configmapwatcher's leader is cut off from the Leases, not from anything else: it
	// must stop its workers before another replica may start them.
	cutID := holders(t, ns, "configmapwatcher")["configmapwatcher"]
	byID[cutID].cut.Store(true)
	after = waitHeld(t, ns, 20*time.Second, cutID, "configmapwatcher")
	t.Logf("configmapwatcher: %s cut off from the Leases, %s took over", cutID, after["configmapwatcher"])
	time.Sleep(2 * time.Second)
	byID[cutID].cut.Store(false)

	// 4. The myapp leader stops (a rollout): it hands the Lease over once its workers stopped.
	stopID := holders(t, ns, "myapp")["myapp"]
	byID[stopID].manager.Stop()
	after = waitHeld(t, ns, 20*time.Second, stopID, "myapp")
	t.Logf("myapp: %s stopped, %s took over", stopID, after["myapp"])

	// Everything still converges: a new spec for every MyApp.
	bumpReplicas(t, ns, apps, 2)
	waitConverged(t, ns, apps, 2)
	time.Sleep(2 * time.Second)

	for _, name := range allControllers {
		checkOneWriter(t, name, replicas)
	}
	// While the thief held the myapp Lease nobody reconciled for myapp: its leader stopped at
	// its next renewal, and the others waited for the thief's Lease to expire.
	quietFrom, quietTo := stolen.Add(time.Second), stolen.Add(testLeaseDuration-500*time.Millisecond)
	for _, r := range replicas {
		for _, rec := range r.recorder.Records() {
			if rec.Controller == "myapp" && rec.End.After(quietFrom) && rec.Start.Before(quietTo) {
				t.Errorf("%s reconciled %s for myapp at %s, %s after the thief took the Lease", r.id, rec.Name, rec.Start.Format("15:04:05.000"), rec.Start.Sub(stolen).Round(time.Millisecond))
			}
		}
	}
}

// createWorkload creates, in ns, a ConfigMap and n MyApps taking their environment from it (so
// that the configmapwatcher watches their Deployments), and a VerticalScaler per MyApp.
func createWorkload(t *testing.T, ns string, n int) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"LEVEL": "info"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		app := &v1alpha1.MyApp{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080,
				EnvFrom: []v1alpha1.ConfigMapEnvSource{{ConfigMapName: "settings"}}},
		}
		vs := &v1alpha1.VerticalScaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.VerticalScalerSpec{DeploymentName: name, UpdateMode: v1alpha1.UpdateModeOff},
		}
		for _, obj := range []client.Object{app, vs} {
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// bumpReplicas sets spec.replicas of every MyApp of ns.
func bumpReplicas(t *testing.T, ns string, n int, replicas int32) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		app := &v1alpha1.MyApp{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("app-%d", i)}, app); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(app.DeepCopy())
		app.Spec.Replicas = replicas
		if err := env.Client.Patch(ctx, app, patch); err != nil {
			t.Fatal(err)
		}
	}
}

// waitConverged waits until the n MyApps of ns have their generation observed and Deployments
// with replicas replicas, recorded by the configmapwatcher (its config state, the baseline it
// rolls nothing for), and every VerticalScaler found its Deployment.
func waitConverged(t *testing.T, ns string, n int, replicas int32) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, 60*time.Second, func() error {
		for i := range n {
			key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("app-%d", i)}
			app := &v1alpha1.MyApp{}
			if err := env.Client.Get(ctx, key, app); err != nil {
				return err
			}
			if app.Status.ObservedGeneration != app.Generation {
				return fmt.Errorf("MyApp %s: generation %d observed %d", key.Name, app.Generation, app.Status.ObservedGeneration)
			}
			d := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, key, d); err != nil {
				return err
			}
			if d.Spec.Replicas == nil || *d.Spec.Replicas != replicas || d.Annotations[v1alpha1.ConfigStateAnnotation] == "" {
				return fmt.Errorf("Deployment %s: replicas %v, config state %q", key.Name, d.Spec.Replicas, d.Annotations[v1alpha1.ConfigStateAnnotation])
			}
			vs := &v1alpha1.VerticalScaler{}
			if err := env.Client.Get(ctx, key, vs); err != nil {
				return err
			}
			if c := findCondition(vs.Status.Conditions, v1alpha1.ConditionTargetFound); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("VerticalScaler %s: TargetFound %+v", key.Name, c)
			}
		}
		return nil
	})
}

// term is a stretch of one replica reconciling for one controller.
type term struct {
	replica     string
	first, last time.Time
	reconciles  int
}

// checkOneWriter fails the test when two replicas reconciled for controller (a lease group:
// every row of it) at overlapping times, and logs who reconciled when.
func checkOneWriter(t *testing.T, controller string, replicas []*replica) {
	t.Helper()
	type record struct {
		testenv.ReconcileRecord
		replica string
	}
	var all []record
	for _, r := range replicas {
		for _, rec := range r.recorder.Records() {
			if leaseGroup(rec.Controller) == controller {
				all = append(all, record{rec, r.id})
			}
		}
	}
	if len(all) == 0 {
		t.Errorf("%s: no reconciles recorded", controller)
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Start.Before(all[j].Start) })
	lastEnd := map[string]time.Time{}
	var terms []term
	overlaps := 0
	for _, rec := range all {
		for other, end := range lastEnd {
			if other != rec.replica && end.After(rec.Start) {
				overlaps++
				if overlaps <= 5 {
					t.Errorf("%s: %s began reconciling %s/%s at %s, %s before %s's last reconcile ended",
						controller, rec.replica, rec.Namespace, rec.Name, rec.Start.Format("15:04:05.000"), end.Sub(rec.Start), other)
				}
			}
		}
		if rec.End.After(lastEnd[rec.replica]) {
			lastEnd[rec.replica] = rec.End
		}
		// A replica's reconciles more than a resync interval and a half apart are two terms.
		if n := len(terms); n == 0 || terms[n-1].replica != rec.replica || rec.Start.Sub(terms[n-1].last) > 1500*time.Millisecond {
			terms = append(terms, term{replica: rec.replica, first: rec.Start})
		}
		terms[len(terms)-1].last = rec.End
		terms[len(terms)-1].reconciles++
	}
	var lines []string
	for i, tm := range terms {
		gap := ""
		if i > 0 {
			gap = fmt.Sprintf(" (%s after the previous term's last)", tm.first.Sub(terms[i-1].last).Round(time.Millisecond))
		}
		lines = append(lines, fmt.Sprintf("%s %s-%s %d reconciles%s", tm.replica, tm.first.Format("15:04:05.000"), tm.last.Format("15:04:05.000"), tm.reconciles, gap))
	}
	t.Logf("%s: %d reconciles by %d replicas in %d terms:\n  %s", controller, len(all), len(slices.Compact(sortedReplicas(terms))), len(terms), strings.Join(lines, "\n  "))
	if overlaps > 0 {
		t.Errorf("%s: %d reconciles overlapped another replica's", controller, overlaps)
	}
}

func sortedReplicas(terms []term) []string {
	var ids []string
	for _, tm := range terms {
		ids = append(ids, tm.replica)
	}
	sort.Strings(ids)
	return ids
}

// TestStandbysAreReadyAndSayWhoLeads: with two replicas, every controller is led by one; the
// other is a warm standby. Both are ready, and each readiness line says which role the replica
// has; the HTTP trigger of the standby answers 503 naming the leader, and the leader's queues.
func TestStandbysAreReadyAndSayWhoLeads(t *testing.T) {
	ns := env.Namespace(t, "standby-")
	probes := []string{testenv.FreeAddress(t), testenv.FreeAddress(t)}
	triggers := []*testenv.Trigger{testenv.NewTrigger(t), testenv.NewTrigger(t)}
	replicas := startReplicas(t, "r", 2, ns, func(i int) []string {
		return append([]string{"--health-probe-bind-address=" + probes[i]}, triggers[i].Args...)
	}, "--watch-namespaces="+ns)
	leaders := waitHeld(t, ns, 30*time.Second, "", allControllers...)

	for i, r := range replicas {
		// One readiness check per controller; the Lease is its group's (the configmapwatcher's
		// four rows share one).
		want := map[string]string{}
		for _, c := range controllers.Table() {
			switch {
			case !c.EnabledByDefault:
				continue
			case c.Optional:
				// Idle without its CRD (Argo Rollouts', the VPA's), which this package's
				// control plane does not install.
				gvk := c.For.GetObjectKind().GroupVersionKind()
				want[c.Name] = controllers.RoleIdle + fmt.Sprintf("the API server does not serve %s %s (is its CRD installed?); the manager looks again every minute", gvk.GroupVersion(), gvk.Kind)
				continue
			}
			want[c.Name] = controllers.RoleStandby
			if leaders[leaseGroup(c.Name)] == r.id {
				want[c.Name] = controllers.RoleLeading
			}
		}
		// A replica that has just written itself into a Lease starts leading a moment later,
		// once it has checked the Lease of the other election scope.
		testenv.Eventually(t, 10*time.Second, func() error {
			if diff := cmp.Diff(want, readyRoles(t, probes[i])); diff != "" {
				return fmt.Errorf("%s: /readyz?verbose roles (-want +got, leaders %v):\n%s", r.id, leaders, diff)
			}
			return nil
		})
		for name, role := range want {
			resp, err := http.Get("http://" + probes[i] + "/readyz/" + name)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != "ok: "+role {
				t.Errorf("%s: /readyz/%s answered %d %q, want 200 %q", r.id, name, resp.StatusCode, body, "ok: "+role)
			}
		}

		triggers[i].WaitServing(t)
		// A standby names the leader as it last read the Lease: on a busy machine its first read
		// may come a retry period after it reports its role.
		testenv.Eventually(t, 10*time.Second, func() error {
			code, body, err := triggers[i].Post("myapp", testenv.TriggerToken, testenv.TriggerTarget(ns, "none"))
			switch {
			case err != nil:
				return err
			case leaders["myapp"] == r.id && code != http.StatusAccepted:
				return fmt.Errorf("%s leads myapp: its trigger answered %d %s, want 202", r.id, code, body)
			case leaders["myapp"] != r.id && (code != http.StatusServiceUnavailable || !strings.Contains(body, leaders["myapp"])):
				return fmt.Errorf("%s is a standby for myapp: its trigger answered %d %s, want 503 naming %s", r.id, code, body, leaders["myapp"])
			}
			return nil
		})
	}
}

// readyRoles reads /readyz?verbose at addr once it answers 200, and returns each check's role.
func readyRoles(t *testing.T, addr string) map[string]string {
	t.Helper()
	roles := map[string]string{}
	testenv.Eventually(t, 30*time.Second, func() error {
		resp, err := http.Get("http://" + addr + "/readyz?verbose")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %d: %s", resp.StatusCode, body)
		}
		for _, line := range strings.Split(string(body), "\n") {
			if rest, ok := strings.CutPrefix(line, "[+]"); ok {
				name, role, _ := strings.Cut(rest, " ok: ")
				roles[name] = role
			}
		}
		return nil
	})
	return roles
}

// TestLeasesSpreadAcrossReplicas starts three replicas together, again and again, and counts how
// many controllers each leads: the head start a replica gives the others for every Lease it
// holds spreads the three controllers, one each most of the time.
func TestLeasesSpreadAcrossReplicas(t *testing.T) {
	runs := testenv.BenchSetting("SWITCHBOARD_SPREAD_RUNS", 5)
	spreads := map[string]int{}
	for range runs {
		ns := env.Namespace(t, "spread-")
		replicas := startReplicas(t, "r", 3, ns, nil, "--watch-namespaces="+ns)
		leaders := waitHeld(t, ns, 30*time.Second, "", allControllers...)
		counts := map[string]int{}
		for _, id := range leaders {
			counts[id]++
		}
		var spread []int
		for _, r := range replicas {
			spread = append(spread, counts[r.id])
		}
		sort.Sort(sort.Reverse(sort.IntSlice(spread)))
		key := fmt.Sprint(spread)
		spreads[key]++
		if spread[0] == 3 {
			t.Errorf("one replica took every Lease: %v", leaders)
		}
		for _, r := range replicas {
			r.manager.Stop()
		}
	}
	t.Logf("Leases led per replica (most first) over %d starts of 3 replicas with 3 controllers: %v", runs, spreads)
}

// TestScopeSwitchRollout rolls replicas from one Lease for the manager to a Lease per
// controller and back, as a Deployment rollout would (new replicas start before old ones stop):
// a replica of one scope takes no Lease while one of the other scope leads, so no controller
// ever runs on two replicas at once.
func TestScopeSwitchRollout(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t, "rollout-")
	const apps = 4
	createWorkload(t, ns, apps)
	args := []string{"--watch-namespaces=" + ns, "--resync-interval=1s"}

	// One replica elected for the whole manager leads everything.
	old := startReplicas(t, "manager-scope-", 1, ns, nil, append(slices.Clone(args), "--leader-elect-scope=manager")...)
	waitConverged(t, ns, apps, 1)
	// Replicas with a Lease per controller start beside it, and must wait.
	next := startReplicas(t, "controller-scope-", 2, ns, nil, args...)
	time.Sleep(3 * testRetryPeriod * 4)
	if got := holders(t, ns, allControllers...); !maps.Equal(got, map[string]string{"myapp": "", "verticalscaler": "", "configmapwatcher": ""}) {
		t.Errorf("per-controller replicas took Leases while the manager-scope replica led: %v", got)
	}
	// The old replica goes: the new ones take over.
	old[0].manager.Stop()
	waitHeld(t, ns, 20*time.Second, "", allControllers...)
	bumpReplicas(t, ns, apps, 2)
	waitConverged(t, ns, apps, 2)

	// And back: a manager-scope replica waits for the per-controller ones to go.
	back := startReplicas(t, "manager-scope-again-", 1, ns, nil, append(slices.Clone(args), "--leader-elect-scope=manager")...)
	time.Sleep(3 * testRetryPeriod * 4)
	if got := holders(t, ns, controllers.LeaderElectionID)[controllers.LeaderElectionID]; got != "" {
		t.Errorf("the manager-scope replica took the manager's Lease while per-controller replicas led: holder %s", got)
	}
	for _, r := range next {
		r.manager.Stop()
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		if got := holders(t, ns, controllers.LeaderElectionID)[controllers.LeaderElectionID]; got == "" {
			return fmt.Errorf("the manager's Lease is not held yet")
		}
		return nil
	})
	bumpReplicas(t, ns, apps, 3)
	waitConverged(t, ns, apps, 3)

	all := append(append(old, next...), back...)
	for _, name := range allControllers {
		checkOneWriter(t, name, all)
	}
}

// TestFixedNamesRollout renames an installation's Leases as the chart's upgrade does, in either
// scope: two replicas of an earlier version hold the Leases of the fixed names, and two new ones
// start beside them with --leader-elect-resource-name and the prefix of the installation's
// replicas' identities (their Pods' names). While an old replica runs, the new ones take no
// Lease, and they are ready, as standbys, so that the rollout goes on; the old ones go one at a
// time, the second taking over from the first. Then the new ones lead, and delete the Leases of
// the fixed names. No controller ever runs on two replicas at once.
func TestFixedNamesRollout(t *testing.T) {
	t.Parallel()
	for _, scope := range []string{controllers.ScopeManager, controllers.ScopeController} {
		t.Run(scope, func(t *testing.T) {
			ns := env.Namespace(t, "rename-")
			const apps = 3
			createWorkload(t, ns, apps)
			args := []string{"--watch-namespaces=" + ns, "--resync-interval=1s", "--leader-elect-scope=" + scope}
			old := startReplicas(t, "sb-controller-manager-5d4f8-", 2, ns, nil, args...)
			waitConverged(t, ns, apps, 1)

			probes := []string{testenv.FreeAddress(t), testenv.FreeAddress(t)}
			next := startReplicas(t, "sb-controller-manager-7c9b6-", 2, ns, func(i int) []string {
				return []string{"--health-probe-bind-address=" + probes[i]}
			}, append(slices.Clone(args), "--leader-elect-resource-name=sb", "--leader-elect-fixed-names-holder-prefix=sb-controller-manager-")...)
			renamed := []string{"sb"}
			if scope == controllers.ScopeController {
				renamed = []string{"sb-myapp", "sb-verticalscaler", "sb-configmapwatcher"}
			}
			for i, r := range next {
				for name, role := range readyRoles(t, probes[i]) {
					if role == controllers.RoleLeading {
						t.Errorf("%s leads %s while the replicas of the fixed names run", r.id, name)
					}
				}
			}
			bumpReplicas(t, ns, apps, 2)
			waitConverged(t, ns, apps, 2)
			old[0].manager.Stop()
			time.Sleep(testLeaseDuration)
			if got := leaseHolders(t, ns, renamed...); slices.ContainsFunc(slices.Collect(maps.Values(got)), func(h string) bool { return h != "" }) {
				t.Errorf("new replicas took Leases while a replica of the fixed names ran: %v", got)
			}
			old[1].manager.Stop()
			testenv.Eventually(t, 30*time.Second, func() error {
				if got := leaseHolders(t, ns, renamed...); slices.Contains(slices.Collect(maps.Values(got)), "") {
					return fmt.Errorf("the renamed Leases are not all held yet: %v", got)
				}
				return nil
			})
			fixed := controllers.FixedLeaseNames(controllers.Table(), "sb")
			testenv.Eventually(t, 30*time.Second, func() error {
				for _, name := range fixed {
					err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &coordinationv1.Lease{})
					if !apierrors.IsNotFound(err) {
						return fmt.Errorf("the Lease %s of the fixed names is still there: %v", name, err)
					}
				}
				return nil
			})
			bumpReplicas(t, ns, apps, 3)
			waitConverged(t, ns, apps, 3)
			for _, name := range allControllers {
				checkOneWriter(t, name, append(old, next...))
			}
		})
	}
}

// leaseHolders returns the holder of each named Lease in ns ("" when free or missing).
func leaseHolders(t *testing.T, ns string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range names {
		l := &coordinationv1.Lease{}
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, l)
		switch {
		case apierrors.IsNotFound(err):
			out[name] = ""
		case err != nil:
			t.Fatal(err)
		case l.Spec.HolderIdentity != nil:
			out[name] = *l.Spec.HolderIdentity
		default:
			out[name] = ""
		}
	}
	return out
}

// TestReelectedLeaderResumesFromTheCheckpoint: a replica that led the verticalscaler, lost its
// Lease and leads it again resumes the usage history from the checkpoint the leader in between
// wrote, not from its own older memory, which would overwrite that checkpoint. Replica a sees
// low CPU usage; b, leading while a is cut off from the Leases, sees high usage; a, leading
// again, sees low usage again, so only b's checkpoint can tell it of the high: its first
// checkpoint must hold it.
func TestReelectedLeaderResumesFromTheCheckpoint(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t, "reelected-")
	const low, high = "cpu=100m,memory=100Mi", "cpu=2,memory=100Mi"
	pod := newSizedWeb(t, ns, low)
	args := []string{"--controllers=verticalscaler", "--watch-namespaces=" + ns, "--resync-interval=0",
		"--usage-source=pod-annotations", "--usage-interval=200ms", "--checkpoint-interval=1s"}
	anyHistory := func(*v1alpha1.VerticalScalerCheckpoint, *v1alpha1.ContainerCheckpoint) error { return nil }

	// a starts alone, so it leads; b starts as its standby.
	a := startReplicas(t, "a", 1, ns, nil, args...)[0]
	waitHeld(t, ns, 30*time.Second, "", "verticalscaler")
	b := startReplicas(t, "b", 1, ns, nil, args...)[0]
	_, fromA := waitCheckpoint(t, ns, anyHistory)

	// b leads while a is cut off from the Leases, and sees high usage from then on.
	a.cut.Store(true)
	if got := waitHeld(t, ns, 20*time.Second, a.id, "verticalscaler")["verticalscaler"]; got != b.id {
		t.Fatalf("the verticalscaler Lease went from %s to %s, want %s", a.id, got, b.id)
	}
	setUsage(t, pod, high)
	_, fromB := waitCheckpoint(t, ns, func(_ *v1alpha1.VerticalScalerCheckpoint, c *v1alpha1.ContainerCheckpoint) error {
		if topBucket(c.CPU) <= topBucket(fromA.CPU) {
			return fmt.Errorf("top CPU bucket %d, not above a's %d yet", topBucket(c.CPU), topBucket(fromA.CPU))
		}
		return nil
	})
	if !fromB.FirstSampleTime.Equal(fromA.FirstSampleTime) {
		t.Errorf("b's history starts at %v, want a's checkpointed start %v", fromB.FirstSampleTime, fromA.FirstSampleTime)
	}

	// a leads again, and sees low usage again. Until a's first checkpoint, the status must never
	// go back to a recommendation from fewer samples than b's: a report a's poller made in its
	// first term would be one (and a reconcile at the start of a's new term would write it).
	setUsage(t, pod, low)
	bSamples := waitStatusSamples(t, ns, fromB.Samples)
	fewest := watchFewestStatusSamples(t, ns)
	a.cut.Store(false)
	b.cut.Store(true)
	if got := waitHeld(t, ns, 20*time.Second, b.id, "verticalscaler")["verticalscaler"]; got != a.id {
		t.Fatalf("the verticalscaler Lease went from %s to %s, want %s", b.id, got, a.id)
	}
	// b stopped before a took the Lease: a checkpoint written from now on is a's.
	taken, _ := waitCheckpoint(t, ns, anyHistory)
	_, first := waitCheckpoint(t, ns, func(cp *v1alpha1.VerticalScalerCheckpoint, _ *v1alpha1.ContainerCheckpoint) error {
		if cp.ResourceVersion == taken.ResourceVersion {
			return errors.New("not written since a took the Lease")
		}
		return nil
	})
	if got := fewest(); got < bSamples {
		t.Errorf("after a took the Lease back, the status showed a recommendation from %d samples, fewer than b's %d: a report from a's earlier term", got, bSamples)
	}
	t.Logf("CPU samples and top bucket: a's checkpoint %d, %d; b's %d, %d; a's first when leading again %d, %d",
		fromA.Samples, topBucket(fromA.CPU), fromB.Samples, topBucket(fromB.CPU), first.Samples, topBucket(first.CPU))
	// The top bucket is what tells: a's older memory, never having seen the high usage, stops
	// at the low bucket, whereas its sample count can outgrow b's checkpoint's.
	if topBucket(first.CPU) < topBucket(fromB.CPU) || first.Samples <= fromB.Samples {
		t.Errorf("a's first checkpoint when leading again holds %d CPU samples up to bucket %d; want b's history (%d samples, up to bucket %d) and more",
			first.Samples, topBucket(first.CPU), fromB.Samples, topBucket(fromB.CPU))
	}
}

// newSizedWeb creates in ns the Deployment "web", its Pod "web-0", whose container "app" reports
// usage to the pod-annotations usage source, and the VerticalScaler "web" of it in Off mode. It
// returns the Pod.
func newSizedWeb(t *testing.T, ns, usage string) *corev1.Pod {
	t.Helper()
	labels := map[string]string{"app": "web"}
	container := corev1.Container{Name: "app", Image: "registry.example.com/app:v1"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0", Labels: labels,
			Annotations: map[string]string{v1alpha1.UsageAnnotationPrefix + "app": usage}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container}},
	}
	objs := []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{container}}},
		}},
		pod,
		&v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web", UpdateMode: v1alpha1.UpdateModeOff}},
	}
	for _, obj := range objs {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	return pod
}

// TestReleasedLeaseHandsOverEveryRead: a leader of the verticalscaler that stops gracefully
// writes, before it releases the Lease, the checkpoint of every history that changed since its
// last one, here every read but the first (the interval is an hour); the replica that takes
// the Lease over recommends from all of them.
func TestReleasedLeaseHandsOverEveryRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := env.Namespace(t, "released-")
	pod := newSizedWeb(t, ns, "cpu=300m,memory=200Mi")
	args := []string{"--controllers=verticalscaler", "--watch-namespaces=" + ns, "--resync-interval=0",
		"--usage-source=pod-annotations", "--usage-interval=200ms", "--checkpoint-interval=1h"}
	a := startReplicas(t, "a", 1, ns, nil, args...)[0]
	waitHeld(t, ns, 30*time.Second, "", "verticalscaler")
	b := startReplicas(t, "b", 1, ns, nil, args...)[0]
	waitStatusSamples(t, ns, 1)
	// A few more reads, then none: a's history stops at n samples, which a fresh status says.
	time.Sleep(2 * time.Second)
	delete(pod.Annotations, v1alpha1.UsageAnnotationPrefix+"app")
	if err := env.Client.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	clearStatus(t, ns)
	n := waitStatusSamples(t, ns, 5)
	_, before := waitCheckpoint(t, ns, func(*v1alpha1.VerticalScalerCheckpoint, *v1alpha1.ContainerCheckpoint) error { return nil })
	if before.Samples >= n {
		t.Fatalf("the checkpoint holds %d samples before the stop, want fewer than %d: the interval is an hour", before.Samples, n)
	}

	a.manager.Stop()
	if got := waitHeld(t, ns, 20*time.Second, a.id, "verticalscaler")["verticalscaler"]; got != b.id {
		t.Fatalf("the verticalscaler Lease went to %s, want %s", got, b.id)
	}
	_, after := waitCheckpoint(t, ns, func(*v1alpha1.VerticalScalerCheckpoint, *v1alpha1.ContainerCheckpoint) error { return nil })
	if after.Samples != n {
		t.Errorf("after a released the Lease the checkpoint holds %d samples, want all %d", after.Samples, n)
	}
	clearStatus(t, ns)
	if got := waitStatusSamples(t, ns, 1); got != n {
		t.Errorf("b recommends from %d samples, want all %d of a's reads", got, n)
	}
}

// clearStatus clears the status of the VerticalScaler "web" of ns: the leader's poller then
// reports afresh what its history says.
func clearStatus(t *testing.T, ns string) {
	t.Helper()
	vs := &v1alpha1.VerticalScaler{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, vs); err != nil {
		t.Fatal(err)
	}
	vs.Status = v1alpha1.VerticalScalerStatus{}
	if err := env.Client.Status().Update(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
}

// statusSamples returns the samples behind the status recommendation of container "app" of the
// VerticalScaler "web" of ns; 0 without one.
func statusSamples(ctx context.Context, ns string) (int64, error) {
	vs := &v1alpha1.VerticalScaler{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, vs); err != nil {
		return 0, err
	}
	if vs.Status.Recommendation == nil {
		return 0, nil
	}
	for _, r := range vs.Status.Recommendation.ContainerRecommendations {
		if r.ContainerName == "app" {
			return r.Samples, nil
		}
	}
	return 0, nil
}

// waitStatusSamples waits until the status recommendation comes from at least atLeast samples,
// and returns how many.
func waitStatusSamples(t *testing.T, ns string, atLeast int64) int64 {
	t.Helper()
	var n int64
	testenv.Eventually(t, 20*time.Second, func() error {
		var err error
		if n, err = statusSamples(context.Background(), ns); err != nil {
			return err
		}
		if n < atLeast {
			return fmt.Errorf("status recommendation from %d samples, want at least %d", n, atLeast)
		}
		return nil
	})
	return n
}

// watchFewestStatusSamples reads the status recommendation every 10 ms (a stale one lasts for a
// reconcile and a poll, a few hundred ms) until the returned function is called, which returns
// the fewest samples seen.
func watchFewestStatusSamples(t *testing.T, ns string) func() int64 {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	fewest := int64(math.MaxInt64)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if n, err := statusSamples(ctx, ns); err == nil {
				fewest = min(fewest, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	t.Cleanup(stop)
	return func() int64 {
		stop()
		<-done
		return fewest
	}
}

// setUsage sets the usage pod reports to the pod-annotations usage source for its container
// "app".
func setUsage(t *testing.T, pod *corev1.Pod, usage string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Annotations[v1alpha1.UsageAnnotationPrefix+"app"] = usage
		return env.Client.Update(context.Background(), pod)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitCheckpoint waits until the checkpoint of the VerticalScaler "web" of ns exists with a
// history of container "app" that passes check, and returns both.
func waitCheckpoint(t *testing.T, ns string, check func(*v1alpha1.VerticalScalerCheckpoint, *v1alpha1.ContainerCheckpoint) error) (*v1alpha1.VerticalScalerCheckpoint, *v1alpha1.ContainerCheckpoint) {
	t.Helper()
	var cp *v1alpha1.VerticalScalerCheckpoint
	var history *v1alpha1.ContainerCheckpoint
	testenv.Eventually(t, 20*time.Second, func() error {
		cp, history = &v1alpha1.VerticalScalerCheckpoint{}, nil
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, cp); err != nil {
			return err
		}
		for i := range cp.Status.Containers {
			if cp.Status.Containers[i].Name == "app" {
				history = &cp.Status.Containers[i]
			}
		}
		if history == nil || history.Samples == 0 {
			return fmt.Errorf("no history of container app: %+v", cp.Status)
		}
		return check(cp, history)
	})
	return cp, history
}

// topBucket is the index of the highest bucket of h with some weight; -1 when h is empty.
func topBucket(h v1alpha1.HistogramCheckpoint) int {
	for i := len(h.Weights) - 1; i >= 0; i-- {
		if h.Weights[i] > 0 {
			return int(h.FirstBucket) + i
		}
	}
	return -1
}

// leaseGroup returns the group whose Lease decides where the named controller runs: its Group in
// the table (the configmapwatcher's four rows share one), or its own name.
func leaseGroup(name string) string {
	for _, c := range controllers.Table() {
		if c.Name == name && c.Group != "" {
			return c.Group
		}
	}
	return name
}

// TestConfigMapWatcherLeaderChangeRollsOnlyWhatChanged moves the configmapwatcher's Lease from
// one replica to another while one ConfigMap's data and another's labels change, at a moment no
// replica leads: the new leader rolls the workload of the first, once, and writes nothing to the
// others, whose Pods already run with their data.
func TestConfigMapWatcherLeaderChangeRollsOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := env.Namespace(t, "cmw-leader-")
	names := []string{"data", "labels", "same"}
	for _, name := range names {
		labels := map[string]string{"app": name}
		objs := []client.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": "v1"}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Annotations: map[string]string{v1alpha1.ReloadAnnotation: "true"}}, Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1", EnvFrom: []corev1.EnvFromSource{
						{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}}}}},
			}},
		}
		for _, obj := range objs {
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	deployments := func() map[string]appsv1.Deployment {
		list := &appsv1.DeploymentList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		out := map[string]appsv1.Deployment{}
		for _, d := range list.Items {
			out[d.Name] = d
		}
		return out
	}
	group := leaseGroup("configmapwatcher")
	probe := testenv.FreeAddress(t)
	args := []string{"--controllers=configmapwatcher", "--watch-namespaces=" + ns, "--resync-interval=0"}
	first := startReplicas(t, "first", 1, ns, func(int) []string { return []string{"--health-probe-bind-address=" + probe} }, args...)[0]
	waitHeld(t, ns, 30*time.Second, "", group)
	second := startReplicas(t, "second", 1, ns, nil, args...)[0]
	var baseline map[string]appsv1.Deployment
	testenv.Eventually(t, 30*time.Second, func() error {
		baseline = deployments()
		for _, name := range names {
			if baseline[name].Annotations[v1alpha1.ConfigStateAnnotation] == "" {
				return fmt.Errorf("Deployment %s has no baseline yet", name)
			}
		}
		return nil
	})

	// Neither replica can take the Lease now; once the first has stopped leading, nobody runs
	// the configmapwatcher while the sources change.
	second.cut.Store(true)
	first.cut.Store(true)
	testenv.Eventually(t, 20*time.Second, func() error {
		for name, role := range readyRoles(t, probe) {
			// The optional rows idle without their CRDs, leader or not.
			idle := strings.HasPrefix(role, controllers.RoleIdle)
			if strings.HasPrefix(name, group) && role != controllers.RoleStandby && !idle {
				return fmt.Errorf("%s is %s for %s", first.id, role, name)
			}
		}
		return nil
	})
	edit := func(name string, change func(*corev1.ConfigMap)) {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		change(cm)
		if err := env.Client.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	edit("data", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"k": "v2"} })
	edit("labels", func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"changed": "labels-only"} })

	second.cut.Store(false)
	if got := waitHeld(t, ns, 20*time.Second, first.id, group)[group]; got != second.id {
		t.Fatalf("the %s Lease went to %s, want %s", group, got, second.id)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		if d := deployments()["data"]; d.Generation == baseline["data"].Generation {
			return errors.New(`the Deployment of the changed ConfigMap has not rolled yet`)
		}
		return nil
	})
	// Time for a second roll or a stray write to show.
	time.Sleep(3 * time.Second)
	now := deployments()
	if got, want := now["data"].Generation, baseline["data"].Generation+1; got != want {
		t.Errorf("the Deployment of the changed ConfigMap is at generation %d, want %d: one roll", got, want)
	}
	for _, name := range []string{"labels", "same"} {
		if now[name].ResourceVersion != baseline[name].ResourceVersion {
			t.Errorf("Deployment %s was written after the leader change, though its data did not change:\nbefore %v\nafter  %v",
				name, baseline[name].Annotations, now[name].Annotations)
		}
	}
}
