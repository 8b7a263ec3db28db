package overlays_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/switchboard/internal/testenv"
)

// TestCSIIntegrationComponent builds the configmapwatcher overlay with config/csi-integration
// and checks that the component adds the flag and the permission to read the Secrets Store CSI
// driver's objects, the rule the chart adds with controllers.configmapwatcher.csiIntegration,
// and nothing else. It builds a copy of config/, where an overlay of the two is written:
// kustomize takes no absolute paths.
func TestCSIIntegrationComponent(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config")
	copyTree(t, "..", config)
	overlay := filepath.Join(config, "overlays", "csi-integration-test")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../configmapwatcher\ncomponents:\n- ../../csi-integration\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	without := testenv.Kustomize(t, filepath.Join(config, "overlays", "configmapwatcher"))
	with := testenv.Kustomize(t, overlay)

	wantArgs := append(managerContainer(t, without).Args, "--enable-csi-integration")
	if diff := cmp.Diff(wantArgs, managerContainer(t, with).Args); diff != "" {
		t.Errorf("the manager's args (-want +got):\n%s", diff)
	}
	rulesOf := func(objs []*unstructured.Unstructured) []rbacv1.PolicyRule {
		for _, r := range find[rbacv1.ClusterRole](t, objs, "ClusterRole") {
			if r.Name == "switchboard-configmapwatcher" {
				return r.Rules
			}
		}
		t.Fatal("no ClusterRole switchboard-configmapwatcher")
		return nil
	}
	wantRules := append(rulesOf(without), rbacv1.PolicyRule{
		APIGroups: []string{"secrets-store.csi.x-k8s.io"},
		Resources: []string{"secretproviderclasses", "secretproviderclasspodstatuses"},
		Verbs:     []string{"get", "list", "watch"},
	})
	if diff := cmp.Diff(wantRules, rulesOf(with)); diff != "" {
		t.Errorf("the configmapwatcher's ClusterRole (-want +got):\n%s", diff)
	}
	if len(with) != len(without) {
		t.Errorf("%d objects with the component, %d without: want the same objects", len(with), len(without))
	}
}

// copyTree copies the files under from to to.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
