package controllers

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/example/switchboard/sources"
)

// testTable has a controller that "*" leaves off and that works through another, a group of
// three of which one is off by default and works through another of the group (as the real
// table's verticalpodautoscaler through the verticalscaler), and a controller with a default
// number of workers.
var testTable = []Controller{
	{Name: "alpha", EnabledByDefault: true},
	{Name: "beta", EnabledByDefault: true, DefaultWorkers: 3},
	{Name: "gamma", EnabledByDefault: false, Requires: []string{"alpha"}},
	{Name: "grp-one", Group: "grp", EnabledByDefault: true},
	{Name: "grp-two", Group: "grp", EnabledByDefault: true},
	{Name: "grp-off", Group: "grp", EnabledByDefault: false, Requires: []string{"grp-one"}},
}

func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		items   string
		want    []string
		wantErr []string // substrings of the error
	}{
		{items: "*", want: []string{"alpha", "beta", "grp-one", "grp-two"}},
		{items: "alpha", want: []string{"alpha"}},
		{items: "alpha,gamma", want: []string{"alpha", "gamma"}},
		{items: "gamma", wantErr: []string{"gamma works through alpha, which is not enabled"}},
		{items: "*,gamma,-alpha", wantErr: []string{"gamma works through alpha"}},
		{items: "*,gamma", want: []string{"alpha", "beta", "gamma", "grp-one", "grp-two"}},
		{items: "*,-alpha", want: []string{"beta", "grp-one", "grp-two"}},
		{items: "-alpha,*", want: []string{"beta", "grp-one", "grp-two"}},
		{items: "alpha,alpha", want: []string{"alpha"}},
		{items: " beta , alpha ", want: []string{"alpha", "beta"}},
		// A group name enables the group's controllers that are enabled by default.
		{items: "grp", want: []string{"grp-one", "grp-two"}},
		{items: "grp,grp-off", want: []string{"grp-one", "grp-two", "grp-off"}},
		{items: "*,grp-off", want: []string{"alpha", "beta", "grp-one", "grp-two", "grp-off"}},
		{items: "grp-off", wantErr: []string{"grp-off works through grp-one, which is not enabled"}},
		{items: "*,grp-off,-grp-one", wantErr: []string{"grp-off works through grp-one"}},
		{items: "*,-grp", want: []string{"alpha", "beta"}},
		{items: "*,-grp-two", want: []string{"alpha", "beta", "grp-one"}},
		{items: "grp,-grp-one", want: []string{"grp-two"}},
		{items: "-grp,grp-one", want: []string{"grp-one"}},
		{items: "grp-two", want: []string{"grp-two"}},
		{items: "grp,-grp", wantErr: []string{`"grp" is both enabled and disabled`}},
		{items: "-alpha", wantErr: []string{"enables no controller", "known controllers: alpha, beta, gamma, grp-one, grp-two, grp-off",
			"groups: grp (grp-one, grp-two, grp-off)", "disabled by default: gamma, grp-off"}},
		{items: "", wantErr: []string{"empty controller name", "known controllers"}},
		{items: "*,,beta", wantErr: []string{"empty controller name"}},
		{items: "*,-alpha,-beta,-grp", wantErr: []string{"enables no controller"}},
		{items: "nope", wantErr: []string{`unknown controller "nope"`, "known controllers: alpha, beta, gamma, grp-one, grp-two, grp-off", "groups: grp"}},
		{items: "grp-three", wantErr: []string{`unknown controller "grp-three"`}},
		{items: "*,-nope", wantErr: []string{`unknown controller "nope"`}},
		{items: "alpha,-alpha", wantErr: []string{`"alpha" is both enabled and disabled`}},
		{items: "-", wantErr: []string{"empty controller name"}},
	} {
		t.Run(tc.items, func(t *testing.T) {
			got, err := Select(testTable, strings.Split(tc.items, ","))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Select(%q) = %v, want an error", tc.items, Selection{Controllers: got}.Names())
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Select(%q): %v", tc.items, err)
			}
			if diff := cmp.Diff(tc.want, Selection{Controllers: got}.Names()); diff != "" {
				t.Errorf("Select(%q) (-want +got):\n%s", tc.items, diff)
			}
		})
	}
}

func TestParseConcurrency(t *testing.T) {
	for _, tc := range []struct {
		value   string
		want    map[string]int
		wantErr string
	}{
		{value: "", want: map[string]int{"beta": 3}},
		{value: "alpha=4", want: map[string]int{"alpha": 4, "beta": 3}},
		{value: "alpha=4, beta=2", want: map[string]int{"alpha": 4, "beta": 2}},
		{value: "beta=1", want: map[string]int{"beta": 1}},
		{value: "alpha", wantErr: `"alpha" is not name=workers`},
		{value: "=4", wantErr: `"=4" is not name=workers`},
		{value: "nope=1", wantErr: `unknown controller "nope"`},
		{value: "alpha=0", wantErr: "from 1 to 1000"},
		{value: "alpha=-2", wantErr: "from 1 to 1000"},
		{value: "alpha=x", wantErr: "from 1 to 1000"},
		{value: "alpha=1001", wantErr: "from 1 to 1000"},
		{value: "alpha=1,alpha=2", wantErr: `"alpha" is given twice`},
		{value: "grp=4", want: map[string]int{"beta": 3, "grp-one": 4, "grp-two": 4, "grp-off": 4}},
		{value: "grp=4,grp-two=1", want: map[string]int{"beta": 3, "grp-one": 4, "grp-two": 1, "grp-off": 4}},
		{value: "grp-two=1, grp=4", want: map[string]int{"beta": 3, "grp-one": 4, "grp-two": 1, "grp-off": 4}},
		{value: "grp=1,grp=2", wantErr: `"grp" is given twice`},
		{value: "grp=0", wantErr: "from 1 to 1000"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			got, err := ParseConcurrency(testTable, tc.value)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseConcurrency(%q) error = %v, want one containing %q", tc.value, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTableIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Table() {
		if seen[c.Name] {
			t.Errorf("controller %q listed twice", c.Name)
		}
		seen[c.Name] = true
		if c.For == nil || c.New == nil {
			t.Errorf("controller %q has no primary kind or no reconciler", c.Name)
		}
		for _, w := range c.Watches {
			if err := w.validate(); err != nil {
				t.Errorf("controller %q: %v", c.Name, err)
			}
		}
		own := map[sources.Name]bool{}
		for _, p := range c.Producers {
			own[p.Source] = true
			if !slices.Contains(c.Sources, p.Source) {
				t.Errorf("controller %q produces source %s but does not consume it", c.Name, p.Source)
			}
		}
		for _, name := range c.Sources {
			if name != sources.Periodic && name != sources.HTTPTrigger && !own[name] {
				t.Errorf("controller %q consumes source %s, which neither is shared nor has a producer in its row", c.Name, name)
			}
		}
		watched := map[string]bool{}
		for _, obj := range c.watchedObjects() {
			watched[kindOf(obj)] = true
		}
		for _, obj := range c.ReadsManagedFieldsOf {
			// The cache keeps managed fields per watched kind; reading them of another kind
			// would find none.
			if !watched[kindOf(obj)] {
				t.Errorf("controller %q reads the managed fields of %s, which it does not watch", c.Name, kindOf(obj))
			}
		}
	}
	for _, c := range Table() {
		for _, needed := range c.Requires {
			if !seen[needed] {
				t.Errorf("controller %q requires %q, which is not in the table", c.Name, needed)
			}
		}
	}
	if diff := cmp.Diff([]string{"myapp", "verticalscaler", "verticalpodautoscaler", "configmapwatcher-deployments", "configmapwatcher-statefulsets",
		"configmapwatcher-daemonsets", "configmapwatcher-cronjobs", "configmapwatcher-jobs", "configmapwatcher-rollouts"}, Selection{Controllers: Table()}.Names()); diff != "" {
		t.Errorf("table rows (-want +got):\n%s", diff)
	}
}

// TestWatchValidation: a watch states exactly what its How uses.
func TestWatchValidation(t *testing.T) {
	mapFunc := func(client.Reader) handler.MapFunc { return nil }
	d := &appsv1.Deployment{}
	for _, tc := range []struct {
		name    string
		watch   Watch
		wantErr string
	}{
		{"owns", Watch{Object: d, How: Owns}, ""},
		{"owns with a map", Watch{Object: d, How: Owns, Map: mapFunc}, "has a map function"},
		{"maps", Watch{Object: d, How: Maps, Map: mapFunc}, ""},
		{"maps without a map", Watch{Object: d, How: Maps}, "needs a map function"},
		{"uncached without a source", Watch{Object: d, How: Uncached}, "needs a source"},
		{"uncached with predicates", Watch{Object: d, How: Uncached, Predicates: []predicate.Predicate{predicate.GenerationChangedPredicate{}}}, "needs a source"},
		{"optional informer without a source", Watch{Object: d, How: OptionalInformer}, "(optional, cached) needs a source"},
		{"unknown", Watch{Object: d, How: "watches"}, `unknown way of watching "watches"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.watch.validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("validate() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
