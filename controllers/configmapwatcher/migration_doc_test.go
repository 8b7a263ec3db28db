package configmapwatcher

import (
	"flag"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// reloaderV1421Flags are Stakater Reloader v1.4.21's flags, as its
// internal/pkg/util/util.go ConfigureReloaderFlags registers them: the list ReloaderFlags must
// cover.
var reloaderV1421Flags = []string{
	"auto-reload-all", "configmap-annotation", "secret-annotation", "auto-annotation", "ignore-annotation",
	"configmap-auto-annotation", "secret-auto-annotation", "auto-search-annotation", "search-match-annotation",
	"pause-deployment-annotation", "pause-deployment-time-annotation", "log-format", "log-level", "webhook-url",
	"resources-to-ignore", "ignored-workload-types", "namespaces", "namespaces-to-ignore", "namespace-selector",
	"resource-label-selector", "is-Argo-Rollouts", "reload-strategy", "reload-on-create", "reload-on-delete",
	"enable-ha", "sync-after-restart", "enable-pprof", "pprof-addr", "enable-csi-integration",
}

// TestReloaderFormsCoverReloader: ReloaderFlags is Reloader v1.4.21's whole set of flags, each
// one the configmapwatcher accepts under Reloader's name (those of the manager's settings are
// the manager's: controllers' TestReloaderFlagsOfTheManager); a supported flag is bound by
// Options, an unsupported one only accepted. make docs writes the migration page's tables from
// these (hack/docgen), and its test fails when they are stale.
func TestReloaderFormsCoverReloader(t *testing.T) {
	var names []string
	for _, f := range ReloaderFlags {
		names = append(names, f.Name)
	}
	if diff := cmp.Diff(reloaderV1421Flags, names); diff != "" {
		t.Errorf("ReloaderFlags against Reloader v1.4.21's flags (-want +got):\n%s", diff)
	}
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o := NewOptions()
	o.AddFlags(fs)
	for _, f := range ReloaderFlags {
		if !f.Manager && fs.Lookup(f.Name) == nil {
			t.Errorf("Reloader's flag --%s is not a flag of the configmapwatcher: its arguments would stop it", f.Name)
		}
		if _, accepted := o.reloader.values[f.Name]; accepted == (f.Support == Supported) || f.Manager && fs.Lookup(f.Name) != nil {
			t.Errorf("--%s: supported %v, but accepted without effect %v", f.Name, f.Support == Supported, accepted)
		}
	}
}
