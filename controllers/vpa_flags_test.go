package controllers

import (
	"flag"
	"testing"

	"github.com/example/switchboard/controllers/verticalscaler"
)

// TestVPAFlagsOfTheManager: every manager flag the migration page's table gives for a flag of
// the VPA's components is one.
func TestVPAFlagsOfTheManager(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	NewOptions().BindFlags(fs, Table())
	for _, f := range verticalscaler.VPAFlags {
		if f.Manager != "" && fs.Lookup(f.Manager) == nil {
			t.Errorf("the VPA's --%s: --%s is not a flag of the manager", f.Name, f.Manager)
		}
	}
}
