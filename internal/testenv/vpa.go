package testenv

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// VPAVersion is the Vertical Pod Autoscaler release whose own CRDs the tests install: the one
// test/vpacompare compares the recommender with (its go.mod requires it).
const VPAVersion = "v1.8.1"

// VPAModule is the Go module of the Vertical Pod Autoscaler, whose zip holds its CRDs.
const VPAModule = "k8s.io/autoscaler/vertical-pod-autoscaler"

// InstallVPACRDs installs the Vertical Pod Autoscaler's own CRDs (VerticalPodAutoscaler and
// VerticalPodAutoscalerCheckpoint) of release VPAVersion, as its release ships them
// (deploy/vpa-v1-crd-gen.yaml), and waits until they are served. They come from the Go module
// cache (`go mod download`, from the module proxy the first time), so that the manager's module
// neither requires the VPA's module nor holds a copy of its CRDs. Installing them again is a
// no-op.
func (e *Env) InstallVPACRDs(t testing.TB) {
	t.Helper()
	dir, err := ModuleDir(VPAModule, VPAVersion)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(dir, "deploy", "vpa-v1-crd-gen.yaml")}, ErrorIfPathMissing: true,
	}); err != nil {
		t.Fatalf("installing the CRDs of VPA %s: %v", VPAVersion, err)
	}
}

// ModuleDir is where the Go module cache holds module at version, downloaded if need be.
func ModuleDir(module, version string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+version).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, info.Error)
	}
	return info.Dir, nil
}
