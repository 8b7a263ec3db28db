package helm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// TestChartPackageIsTheChart runs `make chart-package`, which packs the chart with tar for a
// release, and loads the package with Helm's loader, as `helm install switchboard-X.Y.Z.tgz`
// does: the same name and version, and the same files as Helm loads from the directory (so
// .helmignore is applied as Helm applies it).
func TestChartPackageIsTheChart(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not found")
	}
	pkg := filepath.Join(t.TempDir(), "switchboard.tgz")
	cmd := exec.Command("make", "--no-print-directory", "chart-package", "CHART_PACKAGE="+pkg)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = withoutMakeVariables(os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make chart-package: %v\n%s", err, out)
	}
	packed, err := loader.Load(pkg)
	if err != nil {
		t.Fatalf("Helm's loader refuses the package: %v", err)
	}
	dir := loadChart(t)
	if packed.Metadata.Name != dir.Metadata.Name || packed.Metadata.Version != dir.Metadata.Version || packed.Metadata.AppVersion != dir.Metadata.AppVersion {
		t.Errorf("package is %s %s (app %s), want %s %s (app %s)", packed.Metadata.Name, packed.Metadata.Version, packed.Metadata.AppVersion,
			dir.Metadata.Name, dir.Metadata.Version, dir.Metadata.AppVersion)
	}
	if diff := cmp.Diff(fileNames(dir), fileNames(packed)); diff != "" {
		t.Errorf("files of the package (-directory +package):\n%s", diff)
	}
}

// fileNames lists the chart's files as Helm loaded them, templates and the rest.
func fileNames(c *chart.Chart) []string {
	var names []string
	for _, f := range c.Raw {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// withoutMakeVariables drops the variables a make running this test passes to its children, so
// that the make the test runs computes its own.
func withoutMakeVariables(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		key, _, _ := strings.Cut(kv, "=")
		switch key {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "DIST", "CHART_PACKAGE":
			return true
		}
		return false
	})
}
