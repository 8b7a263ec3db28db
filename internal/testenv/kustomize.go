package testenv

import (
	"bytes"
	"os/exec"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/switchboard/internal/manifests"
)

// Kustomize renders the kustomization dir with `kubectl kustomize`, as users apply it, and
// returns its objects. It skips the test on a machine without kubectl.
func Kustomize(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not found: this test renders kustomizations with `kubectl kustomize`")
	}
	cmd := exec.Command(kubectl, "kustomize", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	objs, err := manifests.Decode(out)
	if err != nil {
		t.Fatalf("decoding the output of kubectl kustomize %s: %v", dir, err)
	}
	return objs
}
