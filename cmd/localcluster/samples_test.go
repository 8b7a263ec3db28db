package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSamples checks that the samples parse and hold what `make run` and docs/getting-started.md
// promise: a ConfigMap, a MyApp taking its environment from it, a VerticalScaler naming that
// MyApp's Deployment, a Deployment opted in with Reloader's annotation that takes its
// environment from a Secret, and a Deployment whose Pods a VerticalScaler resizes in place.
func TestSamples(t *testing.T) {
	data, err := readKustomization(filepath.Join("..", "..", "config", "samples"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{"kind: ConfigMap", "name: sample-config", "kind: MyApp", "- configMapName: sample-config", "kind: VerticalScaler", "deploymentName: sample",
		"kind: Secret", "name: sample-credentials", "name: sample-worker", "reloader.stakater.com/auto: \"true\"", "secretRef:",
		"name: resized", "updateMode: InPlaceOrRecreate"} {
		if !strings.Contains(text, want) {
			t.Errorf("samples lack %q:\n%s", want, text)
		}
	}
}

func TestReadKustomization(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		t.Helper()
		dir := t.TempDir()
		for name, content := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	t.Run("resources in order, separated", func(t *testing.T) {
		dir := write(t, map[string]string{
			"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- b.yaml\n- a.yaml\n",
			"a.yaml":             "kind: A",
			"b.yaml":             "kind: B\n",
		})
		got, err := readKustomization(dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff("---\nkind: B\n---\nkind: A\n", string(got)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	for name, tt := range map[string]struct {
		files   map[string]string
		wantErr string
	}{
		"no kustomization": {files: map[string]string{"a.yaml": "kind: A"}, wantErr: "no such file"},
		"patches":          {files: map[string]string{"kustomization.yaml": "resources: [a.yaml]\npatches: []\n", "a.yaml": "kind: A"}, wantErr: "only apiVersion, kind and resources"},
		"no resources":     {files: map[string]string{"kustomization.yaml": "kind: Kustomization\n"}, wantErr: "lists no resources"},
		"a directory":      {files: map[string]string{"kustomization.yaml": "resources: [base]\n", "base/kustomization.yaml": "resources: []"}, wantErr: "is not a file"},
		"missing file":     {files: map[string]string{"kustomization.yaml": "resources: [a.yaml]\n"}, wantErr: "no such file"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := readKustomization(write(t, tt.files))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
