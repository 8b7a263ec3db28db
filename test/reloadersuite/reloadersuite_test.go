package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/internal/manifests"
)

func TestParseHelmArgs(t *testing.T) {
	// The two command lines of Reloader's test/e2e/utils/helm.go.
	got, err := parseHelmArgs([]string{"upgrade", "--install", "reloader-abc", "/src/deployments/kubernetes/chart/reloader",
		"--namespace", "ns1", "--create-namespace", "--reset-values",
		"--set", "image.repository=ghcr.io/stakater/reloader", "--set", "image.tag=test", "--set", "image.pullPolicy=IfNotPresent",
		"--wait", "--timeout", "180s", "--set", "reloader.watchGlobally=false"})
	if err != nil {
		t.Fatal(err)
	}
	want := helmArgs{command: "upgrade", release: "reloader-abc", chart: "/src/deployments/kubernetes/chart/reloader", namespace: "ns1",
		sets:    []string{"image.repository=ghcr.io/stakater/reloader", "image.tag=test", "image.pullPolicy=IfNotPresent", "reloader.watchGlobally=false"},
		timeout: 180 * time.Second}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(helmArgs{})); diff != "" {
		t.Errorf("upgrade (-want +got):\n%s", diff)
	}
	got, err = parseHelmArgs([]string{"uninstall", "reloader-abc", "--namespace", "ns1", "--ignore-not-found", "--wait"})
	if err != nil {
		t.Fatal(err)
	}
	if got.command != "uninstall" || got.release != "reloader-abc" || got.namespace != "ns1" {
		t.Errorf("uninstall: got %+v", got)
	}
	for _, bad := range [][]string{
		nil,
		{"install", "x", "chart"},
		{"upgrade", "x", "chart"}, // without --install: an upgrade of nothing
		{"upgrade", "--install", "x", "chart", "--atomic"},
		{"upgrade", "--install", "x", "chart", "--set"},
		{"uninstall"},
	} {
		if _, err := parseHelmArgs(bad); err == nil {
			t.Errorf("parseHelmArgs(%q): no error", bad)
		}
	}
}

func TestProcessOf(t *testing.T) {
	optional := true
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "r-reloader"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		ServiceAccountName: "r-sa",
		Containers: []corev1.Container{
			{Name: "sidecar"},
			{
				Name:    "manager",
				Command: []string{"/manager"},
				Args:    []string{"--controllers=configmapwatcher", "--webhook-url=$(URL)", "--literal=$$(URL)", "--unknown=$(NOPE)"},
				Env: []corev1.EnvVar{
					{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hook"}, Key: "url"}}},
					{Name: "GONE", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "url", Optional: &optional}}},
					{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
					{Name: "GOMAXPROCS", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1")}}},
					{Name: "GREETING", Value: "in $(POD_NAMESPACE)"},
				},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi"), corev1.ResourceCPU: resource.MustParse("1500m")}},
			},
		},
	}}}}
	secrets := func(namespace, name, key string) (string, bool, error) {
		if namespace == "ns1" && name == "hook" && key == "url" {
			return "https://example.com/x", true, nil
		}
		return "", false, nil
	}
	got, err := processOf(d, "manager", "ns1", "r-reloader-0", secrets)
	if err != nil {
		t.Fatal(err)
	}
	want := processSpec{
		Args: []string{"--controllers=configmapwatcher", "--webhook-url=https://example.com/x", "--literal=$(URL)", "--unknown=$(NOPE)"},
		Env: []string{"POD_NAMESPACE=ns1", "POD_NAME=r-reloader-0", "URL=https://example.com/x", "GOMEMLIMIT=268435456",
			"GOMAXPROCS=2", "GREETING=in ns1"},
		ServiceAccount: "r-sa",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("processOf (-want +got):\n%s", diff)
	}

	d.Spec.Template.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "url"}}}}
	if _, err := processOf(d, "manager", "ns1", "p", secrets); err == nil {
		t.Error("a required Secret key that is missing: no error")
	}
	if _, err := processOf(d, "nope", "ns1", "p", secrets); err == nil {
		t.Error("a container that is not there: no error")
	}
}

func TestCRDDir(t *testing.T) {
	dir := t.TempDir()
	rollouts := filepath.Join(dir, "argo-rollouts", "rollout-crd.yaml")
	extra := filepath.Join(dir, "extra")
	for path, content := range map[string]string{
		rollouts: "kind: CustomResourceDefinition # rollouts\n",
		filepath.Join(extra, "secretproviderclasses.yaml"): "kind: CustomResourceDefinition # spc\n",
		filepath.Join(extra, "README.md"):                  "not a manifest\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "crds")
	if err := crdDir(out, extra, []string{rollouts}); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"rollout-crd.yaml", "secretproviderclasses.yaml"}, names); diff != "" {
		t.Errorf("CRDs (-want +got):\n%s", diff)
	}
	if err := crdDir(out, extra, []string{filepath.Join(extra, "secretproviderclasses.yaml")}); err == nil {
		t.Error("two files of one name: no error")
	}
}

// TestKwokConfigs checks that the ClusterExec given to kwok decodes as one object of kwok's.
func TestKwokConfigs(t *testing.T) {
	for name, data := range map[string]string{
		"vaultExecConfig": vaultExecConfig("/run/vault-secrets.json"),
	} {
		docs, err := manifests.Decode([]byte(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(docs) != 1 || docs[0].GetAPIVersion() != "kwok.x-k8s.io/v1alpha1" {
			t.Errorf("%s: want one object of kwok.x-k8s.io/v1alpha1:\n%s", name, data)
		}
	}
}

// TestVaultStandIn checks the Vault stand-in's commands and the versions the driver stand-in
// reports: a change of a value changes its object's version, a change of another key does not.
func TestVaultStandIn(t *testing.T) {
	store := vaultStore{path: filepath.Join(t.TempDir(), "vault.json")}
	objects := `- objectName: "api_key"
  secretPath: "secret/data/app"
  secretKey: "api_key"`
	versionOf := func() string {
		t.Helper()
		secrets, err := store.read()
		if err != nil {
			t.Fatal(err)
		}
		v, err := objectVersions(objects, secrets)
		if err != nil {
			t.Fatal(err)
		}
		return v[0].(map[string]any)["version"].(string)
	}
	run := func(args ...string) {
		t.Helper()
		if err := vaultCommand(store, args); err != nil {
			t.Fatalf("vault %v: %v", args, err)
		}
	}
	run("kv", "put", "secret/app", "api_key=v1", "other=a")
	first := versionOf()
	run("kv", "put", "secret/app", "api_key=v1", "other=b")
	if got := versionOf(); got != first {
		t.Errorf("another key changed: version %s, want %s", got, first)
	}
	run("kv", "put", "secret/app", "api_key=v2")
	if got := versionOf(); got == first {
		t.Errorf("the value changed and the version stayed %s", got)
	}
	run("kv", "metadata", "delete", "secret/app")
	run("kv", "metadata", "delete", "secret/app") // none is no error, as in Vault
	secrets, err := store.read()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := objectVersions(objects, secrets); err == nil {
		t.Error("a deleted secret: no error, want the mount to fail")
	}
	for _, bad := range [][]string{{"kv", "get", "secret/app"}, {"kv", "put", "secret/app", "novalue"}} {
		if err := vaultCommand(store, bad); err == nil {
			t.Errorf("vault %v: no error", bad)
		}
	}
}
