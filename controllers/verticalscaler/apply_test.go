package verticalscaler

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOffRequests(t *testing.T) {
	desired := map[string]corev1.ResourceRequirements{"app": {Requests: list("500m", "512Mi")}}
	container := func(res corev1.ResourceRequirements) []corev1.Container {
		return []corev1.Container{{Name: "app", Resources: res}, {Name: "sidecar"}}
	}
	for _, tc := range []struct {
		name    string
		current []corev1.Container
		want    bool
	}{
		{name: "no requests", current: container(corev1.ResourceRequirements{}), want: true},
		{name: "exact", current: container(corev1.ResourceRequirements{Requests: list("500m", "512Mi")}), want: false},
		{name: "within 10%", current: container(corev1.ResourceRequirements{Requests: list("460m", "560Mi")}), want: false},
		{name: "cpu 12% low", current: container(corev1.ResourceRequirements{Requests: list("440m", "512Mi")}), want: true},
		{name: "memory 20% high", current: container(corev1.ResourceRequirements{Requests: list("500m", "615Mi")}), want: true},
		{name: "a limit stands for a missing request", current: container(corev1.ResourceRequirements{Limits: list("500m", "512Mi")}), want: false},
		{name: "one resource missing", current: container(corev1.ResourceRequirements{Requests: list("500m", "")}), want: true},
		{name: "container without recommendation is ignored", current: []corev1.Container{{Name: "sidecar"}}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := offRequests(tc.current, desired); (len(got) > 0) != tc.want {
				t.Errorf("offRequests = %q, want some: %v", got, tc.want)
			}
		})
	}
}

func TestOffRequestsSayWhy(t *testing.T) {
	desired := map[string]corev1.ResourceRequirements{"app": {Requests: list("500m", "512Mi")}}
	got := offRequests([]corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: list("100m", "")}}}, desired)
	want := []string{"container app requests cpu 100m, recommended 500m", "container app requests no memory, recommended 512Mi"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestDesiredTemplateCarriesSidecars: a native sidecar's resources go to its entry of
// initContainers, a container's to containers; nothing else is sent.
func TestDesiredTemplateCarriesSidecars(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "migrate"}, {Name: "proxy", RestartPolicy: &always}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app"}}
	desired := map[string]corev1.ResourceRequirements{"app": {Requests: list("500m", "")}, "proxy": {Requests: list("50m", "")}}
	got, err := json.Marshal(TemplateKinds[0].Apply(d, desiredTemplate(&d.Spec.Template, desired)))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web","namespace":"ns"},"spec":{"template":{"spec":{` +
		`"initContainers":[{"name":"proxy","resources":{"requests":{"cpu":"50m"}}}],` +
		`"containers":[{"name":"app","resources":{"requests":{"cpu":"500m"}}}]}}}}`
	if string(got) != want {
		t.Errorf("apply configuration\n got %s\nwant %s", got, want)
	}
}

func TestUntilNextApply(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	for _, tc := range []struct {
		name string
		last *time.Time
		want time.Duration
	}{
		{name: "never applied", last: nil, want: 0},
		{name: "long ago", last: at(-time.Hour), want: 0},
		{name: "exactly the interval ago", last: at(-10 * time.Minute), want: 0},
		{name: "4 minutes ago", last: at(-4 * time.Minute), want: 6 * time.Minute},
		{name: "clock went back", last: at(time.Minute), want: 11 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := untilNextApply(tc.last, now, 10*time.Minute); got != tc.want {
				t.Errorf("untilNextApply = %s, want %s", got, tc.want)
			}
		})
	}
}
