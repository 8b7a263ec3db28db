package scale_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BenchmarkServiceCreates measures what the API server spends on creating a Service when
// SWITCHBOARD_BENCH_SCALE_SERVICES Services (default 1,000, 10,000 and 30,000) exist, each
// size on a fresh control plane, with no manager at all: myapp's time per MyApp grows faster
// than linear because each MyApp's Service costs the API server more the more Services exist
// (docs/performance.md#scale), and this shows that cost alone. It creates n - n/10 Services
// (in parallel, as the other scale benchmarks create their objects), then times the last n/10:
// the wall time and the API server's CPU time per Service there, at n. Two kinds of Service:
// clusterip (the API server allocates each an address of --service-cluster-ip-range, a /16 as
// on most clusters) and headless (clusterIP: None: nothing to allocate), so that what the
// allocation costs stands out. With SWITCHBOARD_BENCH_PROFILE_DIR set, the API server's CPU
// profile over 20 s of the last creates is written there, one file per size and kind.
func BenchmarkServiceCreates(b *testing.B) {
	sizes := sizes(b, "SWITCHBOARD_BENCH_SCALE_SERVICES", []int{1000, 10000, 30000}, []int{20, 40})
	for _, kind := range []string{"clusterip", "headless"} {
		var smallest float64
		for i, n := range sizes {
			b.Run(fmt.Sprintf("kind=%s/services=%d", kind, n), func(b *testing.B) {
				for b.Loop() {
					perService := measureServiceCreates(b, kind, n)
					switch {
					case i == 0:
						smallest = perService
					case i == len(sizes)-1 && smallest > 0:
						b.ReportMetric(perService/smallest, "x-ms/service-vs-smallest")
					}
				}
			})
		}
	}
}

// measureServiceCreates creates n Services of kind on a fresh control plane, reports the
// figures of the last n/10 and returns their wall time per Service, in milliseconds.
func measureServiceCreates(b *testing.B, kind string, n int) float64 {
	b.Helper()
	cl := newCluster(b)
	ns := cl.env.Namespace(b, "services-")
	last := max(n/10, 1)
	service := func(i int) []client.Object {
		name := fmt.Sprintf("svc-%05d", i)
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
		if kind == "headless" {
			s.Spec.ClusterIP = corev1.ClusterIPNone
		}
		return []client.Object{s}
	}
	cl.create(b, n-last, service)

	profiled := cl.profileAPIServer(b, fmt.Sprintf("apiserver-%s-%d.pprof", kind, n))
	cpu, began := cl.apiServerCPU(b), time.Now()
	cl.create(b, last, func(i int) []client.Object { return service(n - last + i) })
	took, cpuMs := time.Since(began), (cl.apiServerCPU(b)-cpu)*1000
	<-profiled

	perService := took.Seconds() * 1000 / float64(last)
	b.ReportMetric(float64(n), "services")
	b.ReportMetric(perService, "ms/service")
	b.ReportMetric(cpuMs/float64(last), "apiserver-cpu-ms/service")
	b.Logf("%s: the last %d of %d Services took %.2f ms each, the API server's CPU %.2f ms each", kind, last, n, perService, cpuMs/float64(last))
	return perService
}

// profileSeconds is how long the API server's CPU profile runs, from the last creates' start.
const profileSeconds = 20

// profileAPIServer starts the API server's CPU profile into SWITCHBOARD_BENCH_PROFILE_DIR/name
// when that is set; the channel is closed once it is written (at once when not set).
func (cl *cluster) profileAPIServer(b *testing.B, name string) <-chan struct{} {
	b.Helper()
	done := make(chan struct{})
	dir := os.Getenv("SWITCHBOARD_BENCH_PROFILE_DIR")
	if dir == "" {
		close(done)
		return done
	}
	cs, err := kubernetes.NewForConfig(cl.env.Config)
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 2*profileSeconds*time.Second)
		defer cancel()
		raw, err := cs.RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(profileSeconds)).DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), raw, 0o644)
		}
		if err != nil {
			b.Errorf("profiling the API server: %v", err)
		}
	}()
	return done
}
