package controllers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestGroupsOf: controllers that share a group key share one group, named by the key, in the
// table order of each group's first controller; the table's Group field will be that key.
func TestGroupsOf(t *testing.T) {
	rows := []Controller{{Name: "myapp"}, {Name: "cmw-deployments"}, {Name: "verticalscaler"}, {Name: "cmw-statefulsets"}}
	key := func(c Controller) string {
		if c.Name == "cmw-deployments" || c.Name == "cmw-statefulsets" {
			return "configmapwatcher"
		}
		return c.Name
	}
	var got [][]string
	for _, g := range groupsOf(rows, key) {
		names := []string{g.name}
		for _, c := range g.controllers {
			names = append(names, c.Name)
		}
		got = append(got, names)
	}
	want := [][]string{{"myapp", "myapp"}, {"configmapwatcher", "cmw-deployments", "cmw-statefulsets"}, {"verticalscaler", "verticalscaler"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups, each its name then its controllers (-want +got):\n%s", diff)
	}
}

// TestLeaseNames: the manager's Lease and one per group of the selected controllers, which is
// what the leader election Role must name.
func TestLeaseNames(t *testing.T) {
	want := []string{"switchboard.app.example.com", "switchboard-myapp", "switchboard-verticalscaler", "switchboard-configmapwatcher"}
	if diff := cmp.Diff(want, LeaseNames(Table(), "")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A shard's own names.
	want = []string{"switchboard-shard1", "switchboard-shard1-myapp", "switchboard-shard1-verticalscaler", "switchboard-shard1-configmapwatcher"}
	if diff := cmp.Diff(want, LeaseNames(Table(), "switchboard-shard1")); diff != "" {
		t.Errorf("with --leader-elect-resource-name=switchboard-shard1 (-want +got):\n%s", diff)
	}
}

// TestFixedLeaseNames: a manager that moves from the fixed names waits for those that are not
// its own, whatever its scope was before; with --leader-elect-resource-name=switchboard the
// groups' names stay what they were, and only the manager's Lease is another.
func TestFixedLeaseNames(t *testing.T) {
	for _, tc := range []struct {
		resourceName string
		want         []string
	}{
		{"reloader-switchboard", []string{"switchboard.app.example.com", "switchboard-myapp", "switchboard-verticalscaler", "switchboard-configmapwatcher"}},
		{"switchboard", []string{"switchboard.app.example.com"}},
		{"", nil},
	} {
		if diff := cmp.Diff(tc.want, FixedLeaseNames(Table(), tc.resourceName)); diff != "" {
			t.Errorf("with --leader-elect-resource-name=%q (-want +got):\n%s", tc.resourceName, diff)
		}
	}
}

// TestLeaderElectionFlags: the scope and timing are checked at start with client-go's rules.
func TestLeaderElectionFlags(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		ok     bool
	}{
		{"defaults", func(*Options) {}, true},
		{"per controller", func(o *Options) { o.LeaderElect, o.LeaderElectScope = true, ScopeController }, true},
		{"per controller without election", func(o *Options) { o.LeaderElectScope = ScopeController }, false},
		{"unknown scope", func(o *Options) { o.LeaderElectScope = "pod" }, false},
		{"renew deadline not after the jittered retry", func(o *Options) { o.RenewDeadline = 2 * o.RetryPeriod * 6 / 10 }, false},
		{"lease not longer than the renew deadline", func(o *Options) { o.LeaseDuration = o.RenewDeadline }, false},
		{"no retry period", func(o *Options) { o.RetryPeriod = 0 }, false},
		{"lease of a fraction of a second", func(o *Options) { o.LeaseDuration = 15500 * time.Millisecond }, false},
		{"a shard without Leases of its own", func(o *Options) { o.LeaderElect, o.WatchLabelSelector = true, "sharding.fluxcd.io/key=shard1" }, false},
		{"a shard with Leases of its own", func(o *Options) {
			o.LeaderElect, o.WatchLabelSelector, o.LeaderElectResourceName = true, "sharding.fluxcd.io/key=shard1", "switchboard-shard1"
		}, true},
		{"a shard without election", func(o *Options) { o.WatchLabelSelector = "sharding.fluxcd.io/key=shard1" }, true},
		{"a Lease name that is not one", func(o *Options) { o.LeaderElectResourceName = "Shard_1" }, false},
		{"moving from the fixed names", func(o *Options) {
			o.LeaderElect, o.LeaderElectResourceName, o.LeaderElectFixedNamesHolderPrefix = true, "reloader-switchboard", "reloader-switchboard-controller-manager-"
		}, true},
		{"moving from the fixed names to the fixed names", func(o *Options) {
			o.LeaderElect, o.LeaderElectFixedNamesHolderPrefix = true, "switchboard-controller-manager-"
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.change(o)
			if _, err := o.Resolve(Table()); (err == nil) != tc.ok {
				t.Errorf("Resolve() = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
