// Command metrics prints the kwok configuration that emulates the kubelet's resource metrics on
// the local cluster, as one multi-document YAML stream: a ClusterResourceUsage that gives every
// container of every Pod a CPU and memory usage, and the Metric that serves them at the
// kubelet's resource metrics path, which metrics-server scrapes. The Metric is the one of the kwok
// module this module pins, so that it always matches the kwok binary built next to it.
//
// A Pod's annotations kwok.x-k8s.io/usage-cpu and kwok.x-k8s.io/usage-memory (quantities) give
// each of its containers exactly that usage, for tests that need known figures. Without them,
// usage follows an emulated day compressed into ten minutes of the wall clock: lowest at every
// tenth minute (:00, :10, ...), highest five minutes later. Every Pod follows the same day, so
// that the samples need no annotation on the Pods of the samples and a recommendation made from
// them has a shape worth watching.
//
// Before printing, every expression is compiled and evaluated with kwok's own CEL environment at
// night, at noon and with annotations: a mistake fails `make` here, instead of showing up as
// zero usage and an error in kwok's log.
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kwokmetrics "sigs.k8s.io/kwok/kustomize/metrics/resource"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/kwok/pkg/kwok/metrics"
	"sigs.k8s.io/yaml"
)

// daySeconds is the length of the emulated day: short enough that a recommendation forms, and
// moves with the day, within the minutes someone watches `kubectl get vs -w`.
const daySeconds = 600

// usage is the emulated usage of one resource: the annotation that overrides it, and its range
// over the day.
type usage struct {
	resource   corev1.ResourceName
	annotation string
	night      string
	noon       string
}

// usages are the resources kwok emulates. Memory swings less than CPU over the day, as the
// working set of a real server does.
var usages = []usage{
	{resource: corev1.ResourceCPU, annotation: "kwok.x-k8s.io/usage-cpu", night: "50m", noon: "250m"},
	{resource: corev1.ResourceMemory, annotation: "kwok.x-k8s.io/usage-memory", night: "160Mi", noon: "320Mi"},
}

// dayPhase is the time of the emulated day, from 0 (midnight) to 1 (the next midnight). CEL has
// no variables, so expressions repeat it.
var dayPhase = fmt.Sprintf("(double(int(UnixSecond(Now())) %% %d) / %d.0)", daySeconds, daySeconds)

// dayLoad is the load of the emulated day, from 0 at midnight to 1 at noon: (4p(1-p))², smooth
// at both ends like a real day's traffic, without trigonometry, which kwok's CEL lacks.
var dayLoad = fmt.Sprintf("(4.0 * %[1]s * (1.0 - %[1]s)) * (4.0 * %[1]s * (1.0 - %[1]s))", dayPhase)

// expression returns the CEL expression of u: the annotation when the Pod has it, else the
// day's value.
func (u usage) expression() (string, error) {
	night, err := resource.ParseQuantity(u.night)
	if err != nil {
		return "", fmt.Errorf("%s at night: %w", u.resource, err)
	}
	swing, err := resource.ParseQuantity(u.noon)
	if err != nil {
		return "", fmt.Errorf("%s at noon: %w", u.resource, err)
	}
	swing.Sub(night)
	return fmt.Sprintf("%q in pod.metadata.annotations\n? Quantity(pod.metadata.annotations[%[1]q])\n: Quantity(%q) + Quantity(%q) * %s\n",
		u.annotation, night.String(), swing.String(), dayLoad), nil
}

// clusterResourceUsage gives every container of every Pod the usages.
func clusterResourceUsage() (*v1alpha1.ClusterResourceUsage, error) {
	values := map[string]v1alpha1.ResourceUsageValue{}
	for _, u := range usages {
		expr, err := u.expression()
		if err != nil {
			return nil, err
		}
		values[string(u.resource)] = v1alpha1.ResourceUsageValue{Expression: &expr}
	}
	return &v1alpha1.ClusterResourceUsage{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.ClusterResourceUsageKind},
		ObjectMeta: metav1.ObjectMeta{Name: "usage-from-annotation-or-day"},
		Spec:       v1alpha1.ClusterResourceUsageSpec{Usages: []v1alpha1.ResourceUsageContainer{{Usage: values}}},
	}, nil
}

// check evaluates every expression of cru with kwok's CEL environment: at midnight and noon
// of the emulated day it must give the night and noon values, and with the annotations
// exactly theirs.
func check(cru *v1alpha1.ClusterResourceUsage) error {
	for _, u := range usages {
		expr := *cru.Spec.Usages[0].Usage[string(u.resource)].Expression
		annotated := resource.MustParse("123m")
		if u.resource == corev1.ResourceMemory {
			annotated = resource.MustParse("123Mi")
		}
		cases := []struct {
			name        string
			at          time.Time
			annotations map[string]string
			want        string
		}{
			{name: "midnight", at: time.Unix(7*daySeconds, 0), want: u.night},
			{name: "noon", at: time.Unix(7*daySeconds+daySeconds/2, 0), want: u.noon},
			{name: "annotated", at: time.Unix(7*daySeconds+daySeconds/2, 0), annotations: map[string]string{u.annotation: annotated.String()}, want: annotated.String()},
		}
		for _, c := range cases {
			got, err := evaluate(expr, c.at, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: c.annotations}})
			if err != nil {
				return fmt.Errorf("%s usage: %w", u.resource, err)
			}
			want := resource.MustParse(c.want)
			if math.Abs(got-want.AsApproximateFloat64()) > 1e-3*want.AsApproximateFloat64() {
				return fmt.Errorf("%s usage %s: %v, want %s", u.resource, c.name, got, c.want)
			}
		}
	}
	return nil
}

// evaluate evaluates expr for pod at time now, as kwok does when metrics-server scrapes it.
func evaluate(expr string, now time.Time, pod *corev1.Pod) (float64, error) {
	env, err := metrics.NewEnvironment(metrics.EnvironmentConfig{Now: func() time.Time { return now }})
	if err != nil {
		return 0, fmt.Errorf("creating kwok's CEL environment: %w", err)
	}
	eval, err := env.Compile(expr)
	if err != nil {
		return 0, err
	}
	return eval.EvaluateFloat64(context.Background(), metrics.Data{Pod: pod, Container: &corev1.Container{Name: "c"}})
}

// config returns the YAML stream: the ClusterResourceUsage, then kwok's Metric.
func config() (string, error) {
	cru, err := clusterResourceUsage()
	if err != nil {
		return "", err
	}
	if err := check(cru); err != nil {
		return "", err
	}
	data, err := yaml.Marshal(cru)
	if err != nil {
		return "", fmt.Errorf("encoding the ClusterResourceUsage: %w", err)
	}
	return string(data) + "---\n" + strings.TrimSuffix(kwokmetrics.DefaultMetricsResource, "\n") + "\n", nil
}

func main() {
	out, err := config()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kwok metrics configuration:", err)
		os.Exit(1)
	}
	if _, err := fmt.Print(out); err != nil {
		fmt.Fprintln(os.Stderr, "writing the kwok metrics configuration:", err)
		os.Exit(1)
	}
}
