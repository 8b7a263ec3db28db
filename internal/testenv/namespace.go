package testenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Namespace creates a namespace whose name is prefix followed by a suffix the API server
// generates (GenerateName), and returns its name: tests, subtests and repeated benchmark runs
// (-count) never share one, whatever they leave behind.
//
// The namespace is not deleted when the test ends. envtest runs no namespace controller, so a
// deleted namespace stays Terminating with every object still in it: deleting would only add
// API server requests (in the process a benchmark measures) and free nothing. The end-to-end
// tests throw their whole cluster away. A test or benchmark that needs its objects gone (from
// a cache it measures, say) deletes those objects itself.
func Namespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace %s...: %v", prefix, err)
	}
	return ns.Name
}

// Namespace is Namespace with the admin client of the control plane.
func (e *Env) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	return Namespace(t, e.Client, prefix)
}
