package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/manifests"
)

// The admission policies the components ship, with their bindings, relative to the module
// root: myapp's sets the MyApp finalizer at creation, the verticalscaler's gives new Pods the
// recommended resources.
var (
	finalizerPolicyFile = filepath.Join("config", "components", "myapp", "finalizer_policy.yaml")
	// PodResourcesPolicyFile is the verticalscaler's.
	PodResourcesPolicyFile = filepath.Join("config", "components", "verticalscaler", "pod_resources_policy.yaml")
)

// BindFinalizerPolicy installs the myapp component's finalizer policy as `kubectl apply -k
// config/default` does, with its binding limited to namespace ns, so that other tests, and a
// benchmark's phases that stand for a controller installed without it, run without it. It waits
// until the API server sets the finalizer on a MyApp created in ns (a dry-run create: the
// policy takes effect a moment after it is created, and the API server answers a create with
// 503 until it knows the MyApp schema). The returned function removes the binding; it runs when
// the test ends too.
func (e *Env) BindFinalizerPolicy(t testing.TB, ns string) func() {
	t.Helper()
	return e.BindAdmissionPolicy(t, finalizerPolicyFile, ns, func(ctx context.Context) error { return FinalizerSetAtCreation(ctx, e.Client, ns) })
}

// BindAdmissionPolicy installs the MutatingAdmissionPolicy of file (relative to the module root,
// with its binding) as `kubectl apply -k` does, with the binding limited to namespace ns and
// named for it, and waits until ready says it takes effect (nil: no wait). The returned function
// removes the binding; it runs when the test ends too.
func (e *Env) BindAdmissionPolicy(t testing.TB, file, ns string, ready func(context.Context) error) func() {
	t.Helper()
	ctx := context.Background()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	policy, binding, err := ReadAdmissionPolicy(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	err = e.Client.Create(ctx, policy)
	switch {
	case meta.IsNoMatchError(err):
		// Kubernetes 1.34 and 1.35 (K8S_VERSION): what the test checks does not exist there;
		// the manager's fallback without it is tested on every minor.
		t.Skipf("the API server serves no %s (Kubernetes before 1.36), which %s needs", policy.GetAPIVersion()+" "+policy.GetKind(), file)
	case err != nil && !apierrors.IsAlreadyExists(err):
		t.Fatalf("creating the policy of %s: %v", file, err)
	}
	binding.SetName(binding.GetName() + "-" + ns)
	selector := map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}}
	if err := unstructured.SetNestedField(binding.Object, selector, "spec", "matchResources", "namespaceSelector"); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, binding); err != nil {
		t.Fatalf("binding the policy of %s to %s: %v", file, ns, err)
	}
	unbind := func() {
		if err := e.Client.Delete(ctx, binding); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing the binding of %s to %s: %v", file, ns, err)
		}
	}
	t.Cleanup(unbind)
	if ready != nil {
		Poll(t, time.Minute, 100*time.Millisecond, func() error { return ready(ctx) })
	}
	return unbind
}

// FinalizerSetAtCreation says whether the API server sets the MyApp finalizer on a MyApp
// created in ns, as the myapp component's finalizer policy asks, by a server-side dry run of a
// create. Until the policy takes effect (a moment after it is applied) the error says which
// finalizers the MyApp got; until the API server has read the schema of a new CRD, it is the
// API server's 503.
func FinalizerSetAtCreation(ctx context.Context, c client.Client, ns string) error {
	probe := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "finalizer-policy-probe"},
		Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}
	if err := c.Create(ctx, probe, client.DryRunAll); err != nil {
		return err
	}
	if !slices.Contains(probe.Finalizers, v1alpha1.MyAppFinalizer) {
		return fmt.Errorf("a MyApp created in %s gets the finalizers %v", ns, probe.Finalizers)
	}
	return nil
}

// ReadAdmissionPolicy reads a MutatingAdmissionPolicy and its binding from the file at path, as
// a component of config/ holds them.
func ReadAdmissionPolicy(path string) (policy, binding *unstructured.Unstructured, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	objs, err := manifests.Decode(data)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	for _, obj := range objs {
		switch obj.GetKind() {
		case "MutatingAdmissionPolicy":
			policy = obj
		case "MutatingAdmissionPolicyBinding":
			binding = obj
		}
	}
	if policy == nil || binding == nil {
		return nil, nil, fmt.Errorf("%s holds no MutatingAdmissionPolicy and MutatingAdmissionPolicyBinding", path)
	}
	return policy, binding, nil
}
