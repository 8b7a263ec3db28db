package suiterun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/switchboard/internal/manifests"
)

func TestSuites(t *testing.T) {
	known := []string{"core", "flags"}
	got, err := Suites(" flags, ,core", known)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"flags", "core"}, got); diff != "" {
		t.Errorf("Suites (-want +got):\n%s", diff)
	}
	for _, list := range []string{"", ",", "core,argo"} {
		if _, err := Suites(list, known); err == nil {
			t.Errorf("Suites(%q) gave no error", list)
		}
	}
}

func TestLockDirTakesTheDirectoryOnce(t *testing.T) {
	dir := t.TempDir()
	first, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockDir(dir); err == nil {
		t.Fatalf("a second run could take %s", filepath.Base(dir))
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := LockDir(dir)
	if err != nil {
		t.Fatalf("after the first run ended: %v", err)
	}
	_ = again.Close()
}

func TestWithoutStage(t *testing.T) {
	dir := t.TempDir()
	stages := filepath.Join(dir, "stages.yaml")
	stage := func(name string) string {
		return "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: " + name + "\nspec:\n  next:\n    statusTemplate: |\n      phase: {{ .x | Quote }}\n"
	}
	if err := os.WriteFile(stages, []byte(stage("pod-ready")+"---\n"+stage("pod-complete")+"---\n"+stage("pod-delete")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := WithoutStage(stages, "pod-complete", filepath.Join(dir))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := manifests.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range docs {
		names = append(names, d.GetName())
		if tmpl, _, _ := unstructured.NestedString(d.Object, "spec", "next", "statusTemplate"); tmpl != "phase: {{ .x | Quote }}\n" {
			t.Errorf("Stage %s's template %q: want it as it was", d.GetName(), tmpl)
		}
	}
	if diff := cmp.Diff([]string{"pod-ready", "pod-delete"}, names); diff != "" {
		t.Errorf("Stages (-want +got):\n%s", diff)
	}
	if _, err := WithoutStage(stages, "pod-missing", dir); err == nil {
		t.Error("a Stage that is not there: no error")
	}
}
