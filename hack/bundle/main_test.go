package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/example/switchboard/internal/manifests"
)

// root is the module root, from this package's directory.
var root = filepath.Join("..", "..")

// committedBundle reads the committed bundle's files by path relative to bundle/.
func committedBundle(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, dir := range []string{"manifests", "metadata"} {
		entries, err := os.ReadDir(filepath.Join(root, "bundle", dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(root, "bundle", dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			files[filepath.Join(dir, e.Name())] = data
		}
	}
	return files
}

// csv returns the committed ClusterServiceVersion.
func csv(t *testing.T, files map[string][]byte) *unstructured.Unstructured {
	t.Helper()
	data, ok := files[filepath.Join("manifests", packageName+".clusterserviceversion.yaml")]
	if !ok {
		t.Fatal("bundle/manifests has no ClusterServiceVersion: run `make bundle`")
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.UnmarshalStrict(data, &obj.Object); err != nil {
		t.Fatalf("ClusterServiceVersion: %v", err)
	}
	return obj
}

// TestBundleIsCurrent regenerates the bundle from the kustomize output, as `make bundle` does,
// and compares it with the committed one.
func TestBundleIsCurrent(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not found: the bundle is generated from `kubectl kustomize`")
	}
	render := func(dir string) []*unstructured.Unstructured {
		out, err := exec.Command(kubectl, "kustomize", filepath.Join(root, "config", dir)).Output()
		if err != nil {
			t.Fatalf("kubectl kustomize config/%s: %v", dir, err)
		}
		objs, err := manifests.Decode(out)
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	committed := committedBundle(t)
	version, _, _ := unstructured.NestedString(csv(t, committed).Object, "spec", "version")
	generated, err := Build(render("default"), render("samples"), Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(names(generated), names(committed)); diff != "" {
		t.Errorf("bundle files (-generated +committed); run `make bundle`:\n%s", diff)
	}
	for name, want := range generated {
		if got, ok := committed[name]; ok {
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("bundle/%s is stale; run `make bundle` (-generated +committed):\n%s", name, diff)
			}
		}
	}
}

func names(files map[string][]byte) []string {
	var out []string
	for name := range files {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// TestBundleIsWellFormed checks the committed bundle the way OLM reads it.
func TestBundleIsWellFormed(t *testing.T) {
	files := committedBundle(t)
	obj := csv(t, files)
	spec := obj.Object["spec"].(map[string]any)

	if obj.GetAPIVersion() != "operators.coreos.com/v1alpha1" || obj.GetKind() != "ClusterServiceVersion" {
		t.Errorf("CSV is a %s %s", obj.GetAPIVersion(), obj.GetKind())
	}
	version, _ := spec["version"].(string)
	if version == "" || obj.GetName() != packageName+".v"+version {
		t.Errorf("CSV name %q and version %q: want name %s.v<version>", obj.GetName(), version, packageName)
	}
	for _, field := range []string{"displayName", "description"} {
		if s, _ := spec[field].(string); strings.TrimSpace(s) == "" {
			t.Errorf("CSV spec.%s is empty", field)
		}
	}

	modes := map[string]bool{}
	for _, m := range spec["installModes"].([]any) {
		mode := m.(map[string]any)
		modes[mode["type"].(string)] = mode["supported"].(bool)
	}
	wantModes := map[string]bool{"OwnNamespace": true, "SingleNamespace": true, "MultiNamespace": false, "AllNamespaces": true}
	if diff := cmp.Diff(wantModes, modes); diff != "" {
		t.Errorf("install modes (-want +got):\n%s", diff)
	}

	strategy, _, _ := unstructured.NestedString(obj.Object, "spec", "install", "strategy")
	deployments, _, _ := unstructured.NestedSlice(obj.Object, "spec", "install", "spec", "deployments")
	clusterPermissions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "install", "spec", "clusterPermissions")
	if strategy != "deployment" || len(deployments) != 1 || len(clusterPermissions) == 0 {
		t.Errorf("install: strategy %q, %d deployments, %d clusterPermissions; want deployment, 1, some", strategy, len(deployments), len(clusterPermissions))
	}

	// Every owned CRD is in the bundle, and every CRD in the bundle is the generated one.
	owned, _, _ := unstructured.NestedSlice(obj.Object, "spec", "customresourcedefinitions", "owned")
	var ownedNames []string
	for _, o := range owned {
		ownedNames = append(ownedNames, o.(map[string]any)["name"].(string))
	}
	bases, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var baseNames []string
	for _, path := range bases {
		want := readObject(t, path)
		baseNames = append(baseNames, want.GetName())
		data, ok := files[filepath.Join("manifests", filepath.Base(path))]
		if !ok {
			t.Errorf("bundle/manifests lacks %s", filepath.Base(path))
			continue
		}
		got := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &got.Object); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Object, got.Object); diff != "" {
			t.Errorf("bundle/manifests/%s differs from config/crd/bases (-bases +bundle):\n%s", filepath.Base(path), diff)
		}
	}
	sort.Strings(ownedNames)
	sort.Strings(baseNames)
	if diff := cmp.Diff(baseNames, ownedNames); diff != "" {
		t.Errorf("owned CRDs (-config/crd/bases +CSV):\n%s", diff)
	}

	var examples []map[string]any
	almExamples, _, _ := unstructured.NestedString(obj.Object, "metadata", "annotations", "alm-examples")
	if err := json.Unmarshal([]byte(almExamples), &examples); err != nil || len(examples) == 0 {
		t.Errorf("alm-examples %q: want a JSON array of examples (%v)", almExamples, err)
	}

	var annotations struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(files[filepath.Join("metadata", "annotations.yaml")], &annotations); err != nil {
		t.Fatalf("metadata/annotations.yaml: %v", err)
	}
	for key, want := range map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
		"operators.operatorframework.io.bundle.package.v1":   packageName,
	} {
		if got := annotations.Annotations[key]; got != want {
			t.Errorf("metadata/annotations.yaml %s = %q, want %q", key, got, want)
		}
	}
}

func readObject(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return obj
}

// minimalManifests are the fewest objects Build makes a bundle of: a ServiceAccount, the
// Deployment running as it, and a CRD.
const minimalManifests = `apiVersion: v1
kind: ServiceAccount
metadata: {name: sa, namespace: ns}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ns}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      serviceAccountName: sa
      containers: [{name: manager, image: i}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  names: {kind: Thing, plural: things}
  versions: [{name: v1, storage: true, served: true}]
`

func TestBuildRefusesWhatABundleCannotCarry(t *testing.T) {
	tests := []struct {
		name    string
		extra   string
		wantErr string
	}{
		{name: "complete"},
		{name: "a ConfigMap", extra: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", wantErr: "a bundle cannot carry this kind"},
		{name: "a binding to a user", extra: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {kind: ClusterRole, name: r, apiGroup: rbac.authorization.k8s.io}\nsubjects: [{kind: User, name: u}]\n", wantErr: "only bindings to the ServiceAccount sa"},
		{name: "a binding to a missing role", extra: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {kind: ClusterRole, name: r, apiGroup: rbac.authorization.k8s.io}\nsubjects: [{kind: ServiceAccount, name: sa, namespace: ns}]\n", wantErr: "no ClusterRole r"},
		{name: "a second Deployment", extra: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d2}\n", wantErr: "more than one Deployment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := manifests.Decode([]byte(minimalManifests + "---\n" + tt.extra))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Build(objs, nil, Options{Version: "1.0.0"})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Build: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Build error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestBuildLeavesOutTheFinalizerPolicy: the myapp component's admission policy is installed by
// kustomize but not by OLM, and leaving it out of the bundle is not an error.
func TestBuildLeavesOutTheFinalizerPolicy(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "config", "components", "myapp", "finalizer_policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	stream := minimalManifests + "---\n" + string(data)
	objs, err := manifests.Decode([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Build(objs, nil, Options{Version: "1.0.0"})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	for name, content := range files {
		if bytes.Contains(content, []byte("MutatingAdmissionPolicy")) {
			t.Errorf("bundle/%s carries the finalizer policy", name)
		}
	}
}
