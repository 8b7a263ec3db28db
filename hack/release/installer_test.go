package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// kustomizeDefault returns `kubectl kustomize config/default`, what `make build-installer` feeds
// the installer; the test is skipped without kubectl, as config/overlays's are.
func kustomizeDefault(t *testing.T) []byte {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not found: the installer is made from `kubectl kustomize config/default`")
	}
	out, err := exec.Command(kubectl, "kustomize", filepath.Join("..", "..", "config", "default")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/default: %v", err)
	}
	return out
}

// objects decodes YAML documents into plain values.
func objects(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []map[string]any
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatal(err)
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
}

func TestInstaller(t *testing.T) {
	input := kustomizeDefault(t)
	built := buildTestImage(t, t.TempDir())
	_, digest, err := readLayout(built.layout)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runRelease(t, bytes.NewReader(input), "installer", "--layout="+built.layout, "--image="+testName)
	if code != 0 {
		t.Fatalf("release installer: exit %d\n%s", code, stderr)
	}
	pinned := testName + "@" + digest.String()
	if !strings.Contains(stdout, "# The image: "+pinned+"\n") {
		t.Errorf("the installer's header does not name the image %s:\n%.300s", pinned, stdout)
	}
	if !strings.Contains(stdout, "\n# Needs Kubernetes 1.36 or later") {
		t.Errorf("the installer's header does not say it needs Kubernetes 1.36 for its admission policies:\n%.300s", stdout)
	}
	in, out := objects(t, input), objects(t, []byte(stdout))

	// CRDs first, then everything else in kustomize's order.
	var crds, others []map[string]any
	for _, obj := range in {
		if obj["kind"] == "CustomResourceDefinition" {
			crds = append(crds, obj)
		} else {
			others = append(others, obj)
		}
	}
	if len(crds) == 0 {
		t.Fatal("config/default has no CRD")
	}
	want := append(crds, others...)

	// The manager's image pinned by digest, nothing else changed.
	images := 0
	for _, obj := range out {
		if obj["kind"] != "Deployment" {
			continue
		}
		for _, c := range obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any) {
			c := c.(map[string]any)
			if c["name"] == "manager" {
				images++
				if c["image"] != pinned {
					t.Errorf("the manager's image %v, want %s", c["image"], pinned)
				}
				c["image"] = "ghcr.io/example/switchboard:v0.1.0" // config/manager's, to compare the rest
			}
		}
	}
	if images != 1 {
		t.Errorf("%d manager containers, want 1", images)
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("the installer against config/default, CRDs first (-want +got):\n%s", diff)
	}

	t.Run("digest given", func(t *testing.T) {
		image := "registry.example.com/switchboard@sha256:" + strings.Repeat("a", 64)
		code, stdout, stderr := runRelease(t, bytes.NewReader(input), "installer", "--image="+image)
		if code != 0 || !strings.Contains(stdout, "image: "+image+"\n") {
			t.Errorf("exit %d; the image given by digest is not used as given:\n%s", code, stderr)
		}
	})

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, image, input string
			code               int
			want               string
		}{
			{"no tag nor digest", "registry.example.com/switchboard", string(input), 2, `IMG="registry.example.com/switchboard" has neither a tag nor a digest`},
			{"no image", "", string(input), 2, "no image given"},
			{"bad digest", "registry.example.com/switchboard@sha256:abc", string(input), 2, `IMG="registry.example.com/switchboard@sha256:abc"`},
			{"no manager Deployment", testName, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", 1, "no Deployment has a container manager"},
			{"not manifests", testName, "- a\n- b\n", 1, "document 1 is not a Kubernetes object"},
			{"nothing", testName, "", 1, "no manifests on the input"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, stdout, stderr := runRelease(t, strings.NewReader(tc.input), "installer", "--layout="+built.layout, "--image="+tc.image)
				if code != tc.code || !strings.Contains(stderr, tc.want) || stdout != "" {
					t.Errorf("exit %d, want %d with %q and no output:\n%s%s", code, tc.code, tc.want, stderr, stdout)
				}
			})
		}
	})
}
