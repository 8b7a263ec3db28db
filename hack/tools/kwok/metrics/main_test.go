package main

import (
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestConfig checks the stream: the ClusterResourceUsage for every container, then kwok's Metric
// at the path the local cluster's Nodes name for metrics-server.
func TestConfig(t *testing.T) {
	out, err := config()
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(out, "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2:\n%s", len(docs), out)
	}
	var kinds []string
	for _, doc := range docs {
		var obj struct {
			Kind string `json:"kind"`
			Spec struct {
				Path string `json:"path"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, obj.Kind)
		if obj.Kind == "Metric" && obj.Spec.Path != "/metrics/nodes/{nodeName}/metrics/resource" {
			t.Errorf("Metric path %q", obj.Spec.Path)
		}
	}
	if kinds[0] != "ClusterResourceUsage" || kinds[1] != "Metric" {
		t.Errorf("kinds %v, want ClusterResourceUsage, Metric", kinds)
	}
}

// TestDay checks the emulated day's shape: usage rises from midnight to noon and falls back by
// the next midnight, symmetrically, within the night and noon values.
func TestDay(t *testing.T) {
	cru, err := clusterResourceUsage()
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	for _, u := range usages {
		expr := *cru.Spec.Usages[0].Usage[string(u.resource)].Expression
		night, noon := resource.MustParse(u.night), resource.MustParse(u.noon)
		at := func(second int) float64 {
			t.Helper()
			v, err := evaluate(expr, time.Unix(int64(100*daySeconds+second), 0), pod)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		last := at(0)
		for s := 30; s <= daySeconds/2; s += 30 {
			v := at(s)
			if v <= last {
				t.Errorf("%s at second %d: %v, not above %v at second %d", u.resource, s, v, last, s-30)
			}
			if mirror := at(daySeconds - s); math.Abs(mirror-v) > 1e-9*v {
				t.Errorf("%s at second %d: %v, at second %d: %v; want a symmetric day", u.resource, s, v, daySeconds-s, mirror)
			}
			last = v
		}
		if lo, hi := night.AsApproximateFloat64(), noon.AsApproximateFloat64(); at(0) < lo*0.999 || last > hi*1.001 {
			t.Errorf("%s from %v to %v, want from %v to %v", u.resource, at(0), last, lo, hi)
		}
	}
}

// TestCheckFailsOnAWrongDay checks that check catches an expression that does not give the
// values it claims.
func TestCheckFailsOnAWrongDay(t *testing.T) {
	cru, err := clusterResourceUsage()
	if err != nil {
		t.Fatal(err)
	}
	wrong := `Quantity("1")`
	value := cru.Spec.Usages[0].Usage["cpu"]
	value.Expression = &wrong
	cru.Spec.Usages[0].Usage["cpu"] = value
	if err := check(cru); err == nil || !strings.Contains(err.Error(), "cpu usage midnight") {
		t.Errorf("check error %v, want one about cpu usage at midnight", err)
	}
}
