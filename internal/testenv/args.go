package testenv

import (
	"bytes"
	"flag"
	"testing"

	"github.com/example/switchboard/controllers"
)

// ManagerOptions parses args as the manager does, with its own flags and every controller's,
// then makes the checks the manager makes before it starts; it fails the test where the manager
// would refuse them. The manifests' tests use it on the args their Deployments carry.
func ManagerOptions(t testing.TB, args []string) (*controllers.Options, controllers.Selection) {
	t.Helper()
	table := controllers.Table()
	opts := controllers.NewOptions()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	opts.BindFlags(fs, table)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the manager refuses its args %q: %v", args, err)
	}
	selection, err := opts.Resolve(table)
	if err != nil {
		t.Fatalf("the manager refuses its args %q: %v", args, err)
	}
	return opts, selection
}
