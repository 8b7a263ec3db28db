package apply_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/controllers/internal/apply"
	"github.com/example/switchboard/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env))
}

// writeMode is one way of writing a new object to the API server.
type writeMode struct {
	name  string
	write func(ctx context.Context, c client.Client, obj object) error
}

// object is one object of the benchmark, as an apply configuration and as the typed object a
// create sends.
type object struct {
	applied apply.Object
	typed   client.Object
}

var writeModes = []writeMode{
	{"create", func(ctx context.Context, c client.Client, obj object) error {
		return c.Create(ctx, obj.typed, client.FieldOwner("bench"))
	}},
	// What a typed apply sends by default: the API server decodes the body a second time,
	// strictly, to report unknown and duplicate fields.
	{"apply", func(ctx context.Context, c client.Client, obj object) error {
		body, err := json.Marshal(obj.applied)
		if err != nil {
			return err
		}
		return c.Patch(ctx, obj.typed, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner("bench"), client.ForceOwnership)
	}},
	// What apply.IfChanged sends.
	{"apply-validation-off", func(ctx context.Context, c client.Client, obj object) error {
		_, err := apply.IfChanged(ctx, c, "bench", nil, obj.applied, obj.typed.DeepCopyObject().(client.Object))
		return err
	}},
}

// BenchmarkWriteCost measures the API server's CPU per new Deployment and per new Service,
// written by a plain create, by a server-side apply, and by a server-side apply with field
// validation off (what apply.IfChanged sends). The modes take turns, in a rotated order, in each
// of several rounds, so that a drift of the API server's cost over the run reaches every mode
// alike; each reports its median over the rounds. The objects are those of a MyApp: a
// Deployment of one container with a port, an environment variable and probes, and a Service.
func BenchmarkWriteCost(b *testing.B) {
	ctx := context.Background()
	perRound := testenv.BenchSetting("SWITCHBOARD_BENCH_WRITES", 200)
	rounds := testenv.BenchSetting("SWITCHBOARD_BENCH_WRITE_ROUNDS", 3)
	c := env.UnthrottledClient(b)
	for _, kind := range []string{"deployment", "service"} {
		b.Run(kind, func(b *testing.B) {
			cpu := map[string][]float64{}
			for range b.N {
				for round := range rounds {
					for _, mode := range testenv.Rotated(writeModes, round) {
						ns := env.Namespace(b, "cost-")
						perCall, err := env.APIServerCPUPerCall(ctx, perRound, func(i int) error {
							return mode.write(ctx, c, newObject(kind, ns, fmt.Sprintf("app-%d", i)))
						})
						if err != nil {
							b.Fatalf("%s: %v", mode.name, err)
						}
						cpu[mode.name] = append(cpu[mode.name], perCall)
					}
				}
			}
			for _, mode := range writeModes {
				b.ReportMetric(testenv.Median(cpu[mode.name]), mode.name+"-apiserver-cpu-ms/op")
			}
			b.ReportMetric(testenv.Median(cpu["create"])/testenv.Median(cpu["apply-validation-off"]), "create/apply-validation-off")
			b.ReportMetric(testenv.Median(cpu["apply-validation-off"])/testenv.Median(cpu["apply"]), "apply-validation-off/apply")
		})
	}
}

// newObject returns the Deployment or the Service of a MyApp called name in ns.
func newObject(kind, ns, name string) object {
	labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "switchboard"}
	if kind == "service" {
		applied := corev1ac.Service(name, ns).WithLabels(labels).WithSpec(corev1ac.ServiceSpec().
			WithSelector(labels).
			WithPorts(corev1ac.ServicePort().WithName("http").WithPort(80).WithTargetPort(intstr.FromInt32(8080))))
		typed := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		return object{applied: applied, typed: typed}
	}
	probe := func() *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/").WithPort(intstr.FromString("http")))
	}
	applied := appsv1ac.Deployment(name, ns).WithLabels(labels).WithSpec(appsv1ac.DeploymentSpec().
		WithReplicas(2).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("app").WithImage("registry.example.com/app:v1").
				WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(8080)).
				WithEnv(corev1ac.EnvVar().WithName("LOG_LEVEL").WithValue("info")).
				WithReadinessProbe(probe()).WithLivenessProbe(probe())))))
	typedProbe := func() *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}}
	}
	typed := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1",
					Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Env:            []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}},
					ReadinessProbe: typedProbe(), LivenessProbe: typedProbe()}},
			}},
		}}
	return object{applied: applied, typed: typed}
}
