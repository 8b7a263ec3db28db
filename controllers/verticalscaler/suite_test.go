package verticalscaler_test

import (
	"os"
	"testing"

	"github.com/example/switchboard/internal/testenv"
)

// env is the control plane shared by the tests of this package; each test starts its own
// manager with only the verticalscaler controller, through the same flags and table as main.go.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env))
}
