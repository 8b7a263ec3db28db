package faultproxy

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/testenv"
)

// TestRecordsARealAPIServersAnswers writes through the proxy to kube-apiserver as the manager's
// clients do, a Lease with client-go's typed client (protobuf) and a MyApp with
// controller-runtime's (JSON), and checks what the records read of the answers: the created
// object's name, its resourceVersion, the Lease's holder.
func TestRecordsARealAPIServersAnswers(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	p, err := Start(Options{Name: "replica-0", Upstream: env.Config})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	cfg := p.ClientConfig(p.Address())
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	holder := "replica-0_abcd"
	lease, err := clientset.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "switchboard-myapp"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	app := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	want := []Write{
		{Client: "replica-0", Code: 201, ResourceVersion: lease.ResourceVersion, Holder: holder,
			Request: Request{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: "default", Name: "switchboard-myapp"}},
		{Client: "replica-0", Code: 201, ResourceVersion: app.ResourceVersion,
			Request: Request{Verb: "create", Group: "app.example.com", Resource: "myapps", Namespace: "default", Name: "web"}},
	}
	if diff := cmp.Diff(want, p.Writes(), cmpopts.IgnoreFields(Write{}, "Sent", "Answered")); diff != "" {
		t.Errorf("writes recorded (-want +got):\n%s", diff)
	}
}
