package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// argoRolloutsModule is the module whose Rollout type and clientset Reloader's suites use. Its
// module zip ships the Rollout's CustomResourceDefinition (manifests/crds/rollout-crd.yaml), so
// the CRD installed is the one of the very version the suites were built against.
const argoRolloutsModule = "github.com/argoproj/argo-rollouts"

// rolloutCRDPath is where the module keeps the Rollout's CustomResourceDefinition.
var rolloutCRDPath = filepath.Join("manifests", "crds", "rollout-crd.yaml")

// argoRollouts returns the Rollout CRD of the argo-rollouts module the checkout requires: what
// Reloader's suites look for before they run their Argo Rollouts specs (the argo suite, and
// the ArgoRollout entries of core).
func argoRollouts(ctx context.Context, reloaderDir string, modFlags []string) (crd string, err error) {
	moduleDir, err := moduleDir(ctx, reloaderDir, modFlags, argoRolloutsModule)
	if err != nil {
		return "", err
	}
	crd = filepath.Join(moduleDir, rolloutCRDPath)
	if _, err := os.Stat(crd); err != nil {
		return "", fmt.Errorf("the Rollout CRD of %s: %w", argoRolloutsModule, err)
	}
	return crd, nil
}

// crdDir makes dir a directory of the CRDs to install: the manifests of fromDir (a directory,
// or empty) and the files. envtest installs the CRDs of one directory.
func crdDir(dir, fromDir string, files []string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if fromDir != "" {
		from, err := manifestFiles(fromDir)
		if err != nil {
			return err
		}
		files = append(from, files...)
	}
	for _, f := range files {
		to := filepath.Join(dir, filepath.Base(f))
		if _, err := os.Stat(to); err == nil {
			return fmt.Errorf("two CRD files named %s: %s and another", filepath.Base(f), f)
		}
		if err := copyFile(f, to); err != nil {
			return err
		}
	}
	return nil
}

// manifestFiles returns the files of dir that envtest installs CRDs from.
func manifestFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && isManifest(e.Name()) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files, nil
}

// moduleDir returns the directory of module in the module cache, as the build of the checkout
// (with modFlags) resolves it: the build has downloaded it already.
func moduleDir(ctx context.Context, dir string, modFlags []string, module string) (string, error) {
	args := append(append([]string{"list"}, modFlags...), "-m", "-f", "{{.Dir}}", module)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s in %s: %w", strings.Join(args, " "), dir, err)
	}
	found := strings.TrimSpace(string(out))
	if found == "" {
		return "", fmt.Errorf("%s is not in the module cache: go mod download %s in %s fetches it", module, module, dir)
	}
	return found, nil
}

// isManifest says whether name is a file envtest installs CRDs from.
func isManifest(name string) bool {
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}
