package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/example/switchboard/internal/faultproxy"
	"github.com/example/switchboard/test/reliability/churn"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func at(seconds float64) time.Time { return t0.Add(time.Duration(seconds * float64(time.Second))) }

// lease is a write of group's Lease by client as holder ("" releases it), answered at s.
func lease(client, group, holder string, s float64) faultproxy.Write {
	return faultproxy.Write{Client: client, Request: faultproxy.Request{Verb: "update", Group: "coordination.k8s.io", Resource: "leases",
		Namespace: "switchboard-system", Name: "switchboard-" + group}, Sent: at(s - 0.01), Answered: at(s), Code: 200, Holder: holder}
}

// write is an apply of a Deployment by client under fieldManager, sent at s.
func write(client, fieldManager string, s float64, code int) faultproxy.Write {
	return faultproxy.Write{Client: client, Request: faultproxy.Request{Verb: "apply", Group: "apps", Resource: "deployments",
		Namespace: "ns", Name: "web", FieldManager: fieldManager}, Sent: at(s), Answered: at(s + 0.01), Code: code}
}

// expect checks that got has one violation per entry of want, each containing it, in order.
func expect(t *testing.T, got []Violation, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d violations, want %d:\n%v", len(got), len(want), got)
	}
	for i, w := range want {
		if !strings.Contains(got[i].String(), w) {
			t.Errorf("violation %d is %q, want it to say %q", i, got[i], w)
		}
	}
}

func TestCheckOneWriter(t *testing.T) {
	attribute := SwitchboardWrites("switchboard-system")
	writes := []faultproxy.Write{
		write("r0", "myapp", 0.5, 200), // before anyone held the Lease
		lease("r0", "myapp", "r0_a", 1),
		write("r0", "myapp", 2, 200),
		lease("r0", "myapp", "r0_a", 3),
		write("r1", "myapp", 3.5, 500),            // refused: changed nothing
		write("r1", "configmapwatcher", 3.6, 200), // r1 holds no configmapwatcher Lease
		lease("r1", "myapp", "r1_b", 8),           // r0 was cut off; r1 takes over
		write("r0", "myapp", 8.5, 200),            // r0 still writing: the violation
		write("r1", "myapp", 9, 200),              // r1's term
		lease("r1", "myapp", "", 10),              // r1 releases
		write("r1", "myapp", 10.5, 200),           // after its release
		write("r2", "", 11, 200),                  // a write no group claims, by a replica leading nothing
		{Client: "r2", Request: faultproxy.Request{Verb: "create", Group: "events.k8s.io", Resource: "events", Namespace: "ns"}, Sent: at(12), Code: 201},
	}
	expect(t, CheckOneWriter(writes, "switchboard-", attribute),
		"r0 wrote deployments ns/web (apply, myapp) at 10:00:00.500 before anyone held the myapp Lease",
		"r1 wrote deployments ns/web (apply, configmapwatcher) at 10:00:03.600 before anyone held the configmapwatcher Lease",
		"r0 wrote deployments ns/web (apply, myapp) at 10:00:08.500, 500ms after r1 (r1_b) wrote the myapp Lease as its holder",
		"r1 wrote deployments ns/web (apply, myapp) at 10:00:10.500 after r1 released the myapp Lease at 10:00:10.000",
		"r2 wrote deployments ns/web (apply) at 10:00:11.000 while it held no Lease",
	)
}

func TestSwitchboardWrites(t *testing.T) {
	attribute := SwitchboardWrites("switchboard-system")
	for _, tc := range []struct {
		req  faultproxy.Request
		want string
	}{
		{faultproxy.Request{Group: "apps", Resource: "deployments", FieldManager: "verticalscaler", Verb: "apply"}, "verticalscaler"},
		{faultproxy.Request{Group: "app.example.com", Resource: "myapps", Subresource: "status", Verb: "patch"}, "myapp"},
		{faultproxy.Request{Group: "app.example.com", Resource: "verticalscalercheckpoints", FieldManager: "verticalscaler", Verb: "apply"}, "verticalscaler"},
		{faultproxy.Request{Group: "app.example.com", Resource: "verticalscalers", Subresource: "status", Verb: "patch"}, "verticalscaler"},
		{faultproxy.Request{Resource: "secrets", Namespace: "switchboard-system", Verb: "create"}, "configmapwatcher"},
		{faultproxy.Request{Group: "apps", Resource: "deployments", Verb: "patch"}, "myapp"},
		{faultproxy.Request{Group: "events.k8s.io", Resource: "events", Verb: "create"}, ""},
		{faultproxy.Request{Group: "coordination.k8s.io", Resource: "leases", Verb: "update"}, ""},
		{faultproxy.Request{Resource: "configmaps", Namespace: "ns", Verb: "update"}, AnyGroup},
	} {
		if got := attribute(faultproxy.Write{Request: tc.req}); got != tc.want {
			t.Errorf("%+v attributed to %q, want %q", tc.req, got, tc.want)
		}
	}
}

func change(kind, name, key string, sent float64) churn.Change {
	return churn.Change{Kind: kind, Name: name, Keys: []string{key}, Sent: at(sent), Answered: at(sent + 0.02)}
}

func TestCheckRolls(t *testing.T) {
	uses := map[string][]churn.SourceKey{
		"reader-0": {{Kind: "ConfigMap", Name: "config-0", Key: "A"}, {Kind: "Secret", Name: "secret-0", Key: "password"}},
		"reader-1": {{Kind: "ConfigMap", Name: "config-1", Key: "A"}},
		"reader-2": {{Kind: "ConfigMap", Name: "config-0", Key: "A"}},
		"reader-3": {{Kind: "ConfigMap", Name: "config-3", Key: "A"}},
	}
	changes := []churn.Change{
		change("ConfigMap", "config-0", "A", 1),
		change("ConfigMap", "config-0", "B", 2),                                 // a key none takes
		{Kind: "ConfigMap", Name: "config-1", Sent: at(2.5), Answered: at(2.6)}, // labels only
		change("Secret", "secret-0", "password", 5),
		change("Secret", "secret-0", "password", 5.01), // made together with the one before: one roll may cover both
		change("ConfigMap", "config-3", "A", 7),
	}
	rolls := []Roll{
		{Workload: "reader-0", At: at(1.5), Hash: "h1"},
		{Workload: "reader-0", At: at(6), Hash: "h2"}, // fine: one roll for the two password changes
		{Workload: "reader-1", At: at(3), Hash: "h3"}, // rolled for a label change
		{Workload: "reader-2", At: at(1.4), Hash: "h4"},
		{Workload: "reader-2", At: at(1.6), Hash: "h5"}, // rolled twice for one change
		{Workload: "reader-3", At: at(6.5), Hash: "h6"}, // before its change: and that change is missed
		{Workload: "other", At: at(2), Hash: "h7"},      // not checked
	}
	expect(t, CheckRolls(rolls, changes, uses),
		"reader-1 rolled at 10:00:03.000 (config hash h3) with no change of its keys at all: rolled twice, or for nothing",
		"reader-2 rolled at 10:00:01.600 (config hash h5) with the last change of its keys (ConfigMap config-0 [A] at 10:00:01.000) was already rolled",
		"reader-3 rolled at 10:00:06.500 (config hash h6) with no change of its keys at all",
		"reader-3 did not roll after the last change of its keys (ConfigMap config-3 [A] at 10:00:07.020): a change missed",
	)
}

func TestCheckSamples(t *testing.T) {
	seen := []SamplesSeen{
		{Scaler: "ns/web uid-1", Container: "app", At: at(1), Samples: 5},
		{Scaler: "ns/web uid-1", Container: "app", At: at(2), Samples: 7},
		{Scaler: "ns/web uid-1", Container: "sidecar", At: at(2), Samples: 3},
		{Scaler: "ns/web uid-1", Container: "app", At: at(3), Samples: 6},
		{Scaler: "ns/web uid-2", Container: "app", At: at(4), Samples: 1}, // recreated: starts over
		{Scaler: "ns/web uid-1", Container: "app", At: at(5), Samples: 9},
	}
	expect(t, CheckSamples(seen), "VerticalScaler ns/web uid-1 container app: a recommendation from 6 samples at 10:00:03.000, after one from 7 at 10:00:02.000")
}

func TestCheckHotLoops(t *testing.T) {
	var reconciles []Reconcile
	for i := range 30 {
		reconciles = append(reconciles, Reconcile{Replica: "r0", Controller: "myapp", Object: "ns/hot", At: at(float64(i) * 0.1)})
		reconciles = append(reconciles, Reconcile{Replica: "r0", Controller: "myapp", Object: "ns/calm", At: at(float64(i) * 2)})
	}
	violations, most := CheckHotLoops(reconciles, 10*time.Second, 20)
	expect(t, violations, "r0 reconciled ns/hot for myapp 30 times within 10s from 10:00:00.000 (at most 20 allowed)")
	if most != 30 {
		t.Errorf("most reconciles in a window %d, want 30", most)
	}
}
