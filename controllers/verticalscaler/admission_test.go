package verticalscaler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/compare"
	"github.com/example/switchboard/internal/testenv"
)

// newPodFromTemplate creates a Pod from d's template, as its ReplicaSet would, and returns it as
// the API server admitted it.
func newPodFromTemplate(t *testing.T, d *appsv1.Deployment) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, GenerateName: d.Name + "-", Labels: d.Spec.Template.Labels},
		Spec: *d.Spec.Template.Spec.DeepCopy()}
	if err := env.Client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// TestNewPodsStartAtTheRecommendedSize checks the verticalscaler's admission policy
// (config/components/verticalscaler/pod_resources_policy.yaml) with the controller: in
// InPlaceOrRecreate the API server gives each new Pod of the target the recommendation (limits
// scaled as the template's), and leaves other Pods alone; the Deployment's template is never
// written, so another field manager re-applying the original manifest changes nothing, and
// running and new Pods keep the recommended size.
func TestNewPodsStartAtTheRecommendedSize(t *testing.T) {
	env.StartManager(t, updating...)
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	env.BindAdmissionPolicy(t, testenv.PodResourcesPolicyFile, ns, nil)
	original := corev1.ResourceRequirements{Requests: list("100m", "100Mi"), Limits: list("200m", "")}
	d := newDeployment(t, ns, "web", original)
	running := runningPod(t, ns, "web", "web-0", list("100m", "100Mi"), "cpu=500m,memory=300Mi")
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeInPlaceOrRecreate)
	testenv.Eventually(t, timeout, func() error {
		if err := get(vs); err != nil {
			return err
		}
		if len(vs.Status.PodResources) != 1 {
			return fmt.Errorf("podResources %v, want the container's", vs.Status.PodResources)
		}
		return nil
	})
	// The recommendation as the template's container would carry it: the CPU limit keeps its
	// ratio of 2 to the request.
	want := corev1.ResourceRequirements{Requests: vs.Status.PodResources[0].Requests, Limits: vs.Status.PodResources[0].Limits}
	if cpu := want.Limits.Cpu().MilliValue(); cpu != 2*want.Requests.Cpu().MilliValue() {
		t.Errorf("podResources %v, want the CPU limit twice the request", want)
	}

	// A new Pod of the Deployment starts at it, once the policy takes effect.
	testenv.Eventually(t, timeout, func() error {
		pod := newPodFromTemplate(t, d)
		if got := pod.Spec.Containers[0].Resources; !equality.Semantic.DeepEqual(got, want) {
			return fmt.Errorf("a new Pod got %v, want %v", got, want)
		}
		return nil
	})
	// A Pod the target's selector does not select is left alone.
	other := d.DeepCopy()
	other.Spec.Template.Labels = map[string]string{"app": "other"}
	if got := newPodFromTemplate(t, other).Spec.Containers[0].Resources; !equality.Semantic.DeepEqual(got, original) {
		t.Errorf("a Pod of another workload got %v, want its own %v", got, original)
	}

	// The running Pod is resized in place; the template is never written.
	testenv.Eventually(t, timeout, func() error {
		if err := get(running); err != nil {
			return err
		}
		if got := running.Spec.Containers[0].Resources.Requests; !equality.Semantic.DeepEqual(got, want.Requests) {
			return fmt.Errorf("the running Pod requests %v, want %v", got, want.Requests)
		}
		return nil
	})
	running.Status.ContainerStatuses[0].Resources = running.Spec.Containers[0].Resources.DeepCopy()
	if err := env.Client.Status().Update(ctx, running); err != nil {
		t.Fatal(err)
	}
	before := d.DeepCopy()
	if err := get(d); err != nil || d.Generation != before.Generation {
		t.Fatalf("the Deployment changed (generation %d, was %d; %v)", d.Generation, before.Generation, err)
	}

	// Argo CD applies the original manifest again: nothing drifted, nothing changes.
	manifest := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: *before.Spec.DeepCopy()}
	manifest.Spec.Template.Spec.Containers[0].Resources = original
	body, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	applied := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	if err := env.Client.Patch(ctx, applied, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner("argocd"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	if applied.Generation != before.Generation {
		t.Errorf("re-applying the original manifest changed the Deployment: generation %d, was %d", applied.Generation, before.Generation)
	}
	if err := get(running); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Requests, running.Spec.Containers[0].Resources.Requests, compare.Quantities); diff != "" {
		t.Errorf("the running Pod after the re-apply (-want +got):\n%s", diff)
	}
	if got := newPodFromTemplate(t, applied).Spec.Containers[0].Resources; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("a new Pod after the re-apply got %v, want %v", got, want)
	}
}

// TestAdmissionKeepsPodsValid: a request the policy would give that exceeds a limit the Pod
// keeps (RequestsOnly, and a Pod whose limit differs from the template's) is left out, so that
// the Pod is still created; a container the Pod lacks is not added.
func TestAdmissionKeepsPodsValid(t *testing.T) {
	env.StartManager(t, updating...)
	ns := env.Namespace(t, "vs-")
	env.BindAdmissionPolicy(t, testenv.PodResourcesPolicyFile, ns, nil)
	d := newDeployment(t, ns, "web", corev1.ResourceRequirements{Requests: list("100m", "100Mi")})
	runningPod(t, ns, "web", "web-0", list("100m", "100Mi"), "cpu=500m,memory=300Mi")
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeInitial)
	waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionTrue, v1alpha1.ReasonAppliedAtAdmission)
	want := vs.Status.PodResources[0].Requests
	testenv.Eventually(t, timeout, func() error {
		if got := newPodFromTemplate(t, d).Spec.Containers[0].Resources.Requests; !equality.Semantic.DeepEqual(got, want) {
			return fmt.Errorf("a new Pod requests %v, want %v", got, want)
		}
		return nil
	})
	// This Pod keeps a CPU limit of 200m, below the recommended request: it is created, with
	// its own requests.
	limited := d.DeepCopy()
	limited.Spec.Template.Spec.Containers[0].Resources.Limits = list("200m", "")
	pod := newPodFromTemplate(t, limited)
	if got := pod.Spec.Containers[0].Resources.Requests; !equality.Semantic.DeepEqual(got, list("100m", "100Mi")) {
		t.Errorf("a Pod whose limit the recommendation exceeds requests %v, want its own", got)
	}
	// A Pod whose container has another name gets nothing, and no container "app".
	renamed := d.DeepCopy()
	renamed.Spec.Template.Spec.Containers[0].Name = "main"
	if got := newPodFromTemplate(t, renamed).Spec.Containers; len(got) != 1 || got[0].Name != "main" {
		t.Errorf("a Pod without container app has containers %v, want its own only", got)
	}
}

// TestNewPodsFitTheNamespaceLimitRange: what the admission policy gives new Pods stays within
// the namespace's LimitRange, as the VPA keeps it: the request whose limit, in the template's
// ratio, is the LimitRange's max, so that the API server admits the Pod. A change of the
// LimitRange reaches the controller.
func TestNewPodsFitTheNamespaceLimitRange(t *testing.T) {
	env.StartManager(t, updating...)
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	env.BindAdmissionPolicy(t, testenv.PodResourcesPolicyFile, ns, nil)
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "max"}, Spec: corev1.LimitRangeSpec{
		Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: list("300m", "")}}}}
	if err := env.Client.Create(ctx, lr); err != nil {
		t.Fatal(err)
	}
	d := newDeployment(t, ns, "web", corev1.ResourceRequirements{Requests: list("100m", "100Mi"), Limits: list("150m", "")})
	runningPod(t, ns, "web", "web-0", list("100m", "100Mi"), "cpu=500m,memory=300Mi")
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeInitial)
	podCPU := func(request, limit string) {
		t.Helper()
		testenv.Eventually(t, timeout, func() error {
			if err := get(vs); err != nil {
				return err
			}
			if len(vs.Status.PodResources) != 1 {
				return fmt.Errorf("podResources %v, want the container's", vs.Status.PodResources)
			}
			got := vs.Status.PodResources[0]
			if got.Requests.Cpu().Cmp(resource.MustParse(request)) != 0 || got.Limits.Cpu().Cmp(resource.MustParse(limit)) != 0 {
				return fmt.Errorf("podResources request CPU %s, limit %s; want %s and %s", got.Requests.Cpu(), got.Limits.Cpu(), request, limit)
			}
			if rec := vs.Status.Recommendation.ContainerRecommendations[0].Target.Cpu(); rec.Cmp(resource.MustParse(request)) <= 0 {
				return fmt.Errorf("the recommended CPU %s is not above the capped %s: the test shows nothing", rec, request)
			}
			return nil
		})
		testenv.Eventually(t, timeout, func() error {
			got := newPodFromTemplate(t, d).Spec.Containers[0].Resources
			if got.Requests.Cpu().Cmp(resource.MustParse(request)) != 0 || got.Limits.Cpu().Cmp(resource.MustParse(limit)) != 0 {
				return fmt.Errorf("a new Pod requests CPU %s, limit %s; want %s and %s", got.Requests.Cpu(), got.Limits.Cpu(), request, limit)
			}
			return nil
		})
	}
	// The template's limit is 1.5 times its request, and the max 300m.
	podCPU("200m", "300m")

	lr.Spec.Limits[0].Max = list("450m", "")
	lr.Spec.Limits[0].Default = nil
	lr.Spec.Limits[0].DefaultRequest = nil
	if err := env.Client.Update(ctx, lr); err != nil {
		t.Fatal(err)
	}
	podCPU("300m", "450m")
}

// TestInitialSaysWhetherNewPodsAreSized: in Initial, Applied says the admission policy sizes new
// Pods where the API server serves MutatingAdmissionPolicy (Kubernetes 1.36 and later), and that
// nothing does where it does not (K8S_VERSION=1.34): never a claim the cluster cannot keep.
func TestInitialSaysWhetherNewPodsAreSized(t *testing.T) {
	env.StartManager(t, updating...)
	ns := env.Namespace(t, "vs-")
	newDeployment(t, ns, "web", corev1.ResourceRequirements{Requests: list("100m", "100Mi")})
	runningPod(t, ns, "web", "web-0", list("100m", "100Mi"), "cpu=500m,memory=300Mi")
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeInitial)
	if testenv.ServesAdmissionPolicies(t, env.Config) {
		waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionTrue, v1alpha1.ReasonAppliedAtAdmission)
	} else {
		waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionFalse, v1alpha1.ReasonAdmissionPolicyUnavailable)
	}
}
