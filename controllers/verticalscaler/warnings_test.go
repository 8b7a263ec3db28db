package verticalscaler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// TestMissingContainerSaidOncePerChange: a policy naming a container the Deployment lacks gets a
// warning Event besides its Ready condition, once: not again at every periodic resync (here
// every second), nor from the next manager, which reads the condition; a policy naming another
// missing container is said again.
func TestMissingContainerSaidOncePerChange(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	newDeployment(t, ns, "web", corev1.ResourceRequirements{})
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeOff, v1alpha1.ContainerPolicy{ContainerName: "ghost"})
	// notes returns the notes of the ContainerNotFound warnings about vs, each as many times as
	// it was said.
	notes := func() []string {
		t.Helper()
		var list eventsv1.EventList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range list.Items {
			if e.Reason != v1alpha1.ReasonContainerNotFound || e.Regarding.Name != vs.Name || e.Type != corev1.EventTypeWarning {
				continue
			}
			out = append(out, e.Note)
			if e.Series != nil {
				for range e.Series.Count - 1 {
					out = append(out, e.Note)
				}
			}
		}
		return out
	}
	waitSaid := func(n int, container string) {
		t.Helper()
		testenv.Eventually(t, timeout, func() error {
			got := notes()
			if len(got) < n || !strings.Contains(got[len(got)-1]+strings.Join(got, ""), `"`+container+`"`) {
				return fmt.Errorf("warnings %q, want %d naming %q", got, n, container)
			}
			return nil
		})
	}
	args := []string{"--controllers=verticalscaler", "--resync-interval=1s", "--usage-source=off"}
	first := env.StartManager(t, args...)
	waitCondition(t, vs, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonContainerNotFound)
	waitSaid(1, "ghost")
	time.Sleep(3 * time.Second) // three resyncs
	first.Stop()
	env.StartManager(t, args...)
	time.Sleep(2 * time.Second)
	if got := notes(); len(got) != 1 {
		t.Errorf("the missing container was said %d times through resyncs and a restart, want once: %q", len(got), got)
	}

	if err := get(vs); err != nil {
		t.Fatal(err)
	}
	vs.Spec.ContainerPolicies[0].ContainerName = "phantom"
	if err := env.Client.Update(ctx, vs); err != nil {
		t.Fatal(err)
	}
	waitSaid(2, "phantom")
	time.Sleep(2 * time.Second)
	if got := notes(); len(got) != 2 {
		t.Errorf("warnings %q after the policy named another missing container, want two", got)
	}
}
