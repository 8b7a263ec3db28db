// Package config_test checks that what is generated into config/ and apis/ from markers is
// current: run `make generate manifests` after changing an API type or an RBAC marker.
package config_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// controllerGen returns the controller-gen binary `make test` passes in, or skips the test when
// run outside make without one.
func controllerGen(t *testing.T) string {
	t.Helper()
	gen := os.Getenv("CONTROLLER_GEN")
	if gen == "" {
		gen = filepath.Join("..", "bin", "controller-gen")
	}
	if _, err := os.Stat(gen); err != nil {
		t.Skipf("controller-gen not found at %s: `make test` builds it", gen)
	}
	abs, err := filepath.Abs(gen)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// generate runs controller-gen from the module root.
func generate(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(controllerGen(t), args...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("controller-gen %v: %v\n%s", args, err, exitStderr(err))
	}
	return out
}

func exitStderr(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}

// sameDir fails the test for each file that differs between the generated and committed dirs.
func sameDir(t *testing.T, generated, committed string) {
	t.Helper()
	files, err := os.ReadDir(generated)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("controller-gen wrote nothing to %s", generated)
	}
	for _, f := range files {
		want, err := os.ReadFile(filepath.Join(generated, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(committed, f.Name()))
		if err != nil {
			t.Errorf("%s is not committed: run `make manifests`", filepath.Join(committed, f.Name()))
			continue
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s is stale: run `make manifests` (-generated +committed):\n%s", filepath.Join(committed, f.Name()), diff)
		}
	}
}

func TestCRDsAreCurrent(t *testing.T) {
	dir := t.TempDir()
	generate(t, "crd", "paths=./apis/v1alpha1/...", "output:crd:artifacts:config="+dir)
	sameDir(t, dir, "crd/bases")
}

func TestVPACRDsAreCurrent(t *testing.T) {
	dir := t.TempDir()
	generate(t, "crd:allowDangerousTypes=true", "paths=./apis/vpa/...", "output:crd:artifacts:config="+dir)
	sameDir(t, dir, "crd/vpa")
}

func TestRBACIsCurrent(t *testing.T) {
	dir := t.TempDir()
	generate(t, "rbac:roleName=switchboard-manager", "paths=./controllers/...", "output:rbac:artifacts:config="+dir)
	sameDir(t, dir, "rbac")
}

// TestComponentRBACIsCurrent checks each component's ClusterRole against the markers of its
// controller's package alone.
func TestComponentRBACIsCurrent(t *testing.T) {
	for _, name := range components(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			generate(t, "rbac:roleName=switchboard-"+name, "paths=./controllers/"+name+"/...", "output:rbac:artifacts:config="+dir)
			sameDir(t, dir, filepath.Join("components", name, "rbac"))
		})
	}
}

// TestComponentCRDsAreCopies checks that the CRDs a component carries are the generated ones.
func TestComponentCRDsAreCopies(t *testing.T) {
	copies, err := filepath.Glob(filepath.Join("components", "*", "crd", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(copies) == 0 {
		t.Fatal("no component carries a CRD")
	}
	for _, path := range copies {
		want, err := os.ReadFile(filepath.Join("crd", "bases", filepath.Base(path)))
		if err != nil {
			t.Errorf("%s copies no generated CRD: %v", path, err)
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s is stale: run `make manifests` (-generated +committed):\n%s", path, diff)
		}
	}
}

// components lists the directories of config/components, one per controller.
func components(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("components")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatal("no components in config/components")
	}
	return names
}

func TestDeepCopyIsCurrent(t *testing.T) {
	want := generate(t, "object", "paths=./apis/v1alpha1/...", "output:object:stdout")
	got, err := os.ReadFile(filepath.Join("..", "apis", "v1alpha1", "zz_generated.deepcopy.go"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("apis/v1alpha1/zz_generated.deepcopy.go is stale: run `make generate` (-generated +committed):\n%s", diff)
	}
}
