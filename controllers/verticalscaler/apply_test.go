package verticalscaler

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
)

// recommendationOf is a recommendation for container "app" with the target 500m and 512Mi,
// the bounds [400m, 1] and [400Mi, 1Gi], resting on a history of the given length.
func recommendationOf(history time.Duration) *v1alpha1.Recommendation {
	first := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	last := metav1.NewTime(first.Add(history))
	return &v1alpha1.Recommendation{ContainerRecommendations: []v1alpha1.ContainerRecommendation{{ContainerName: "app",
		Target: list("500m", "512Mi"), LowerBound: list("400m", "400Mi"), UpperBound: list("1", "1Gi"),
		FirstSampleTime: &first, LastSampleTime: &last}}}
}

// TestOffRequests: a request is off when missing or outside the bounds, and within them only
// once the history spans a day and it is more than 10% off the target.
func TestOffRequests(t *testing.T) {
	desired := map[string]corev1.ResourceRequirements{"app": {Requests: list("500m", "512Mi")}}
	container := func(res corev1.ResourceRequirements) []corev1.Container {
		return []corev1.Container{{Name: "app", Resources: res}, {Name: "sidecar"}}
	}
	for _, tc := range []struct {
		name        string
		current     []corev1.Container
		short, long bool
	}{
		{name: "no requests", current: container(corev1.ResourceRequirements{}), short: true, long: true},
		{name: "exact", current: container(corev1.ResourceRequirements{Requests: list("500m", "512Mi")})},
		{name: "within 10%", current: container(corev1.ResourceRequirements{Requests: list("460m", "560Mi")})},
		{name: "cpu 12% low, within the bounds", current: container(corev1.ResourceRequirements{Requests: list("440m", "512Mi")}), long: true},
		{name: "memory 20% high, within the bounds", current: container(corev1.ResourceRequirements{Requests: list("500m", "615Mi")}), long: true},
		{name: "cpu below the lower bound", current: container(corev1.ResourceRequirements{Requests: list("300m", "512Mi")}), short: true, long: true},
		{name: "memory above the upper bound", current: container(corev1.ResourceRequirements{Requests: list("500m", "2Gi")}), short: true, long: true},
		{name: "a limit stands for a missing request", current: container(corev1.ResourceRequirements{Limits: list("500m", "512Mi")})},
		{name: "one resource missing", current: container(corev1.ResourceRequirements{Requests: list("500m", "")}), short: true, long: true},
		{name: "container without recommendation is ignored", current: []corev1.Container{{Name: "sidecar"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := offRequests(tc.current, desired, recommendationOf(time.Hour)); (len(got) > 0) != tc.short {
				t.Errorf("after an hour of history: offRequests = %q, want some: %v", got, tc.short)
			}
			if got := offRequests(tc.current, desired, recommendationOf(25*time.Hour)); (len(got) > 0) != tc.long {
				t.Errorf("after a day of history: offRequests = %q, want some: %v", got, tc.long)
			}
		})
	}
}

func TestOffRequestsSayWhy(t *testing.T) {
	desired := map[string]corev1.ResourceRequirements{"app": {Requests: list("500m", "512Mi")}}
	got := offRequests([]corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: list("100m", "")}}}, desired, recommendationOf(time.Hour))
	want := []string{"container app requests cpu 100m, below the lower bound 400m (recommended 500m)", "container app requests no memory, recommended 512Mi"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A target a limit keeps the request under is carried once the request is at the limit.
	capped := map[string]corev1.ResourceRequirements{"app": {Requests: list("300m", "")}}
	if got := offRequests([]corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: list("300m", ""),
		Limits: list("300m", "")}}}, capped, recommendationOf(time.Hour)); len(got) != 0 {
		t.Errorf("a request at the limit that caps the target: %q, want none", got)
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
