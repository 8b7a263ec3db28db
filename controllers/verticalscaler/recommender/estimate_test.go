package recommender

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/example/switchboard/controllers/internal/compare"
)

func list(cpu, memory string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return l
}

func TestEstimate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		samples    []corev1.ResourceList
		containers int
		want       Estimate
		wantOK     bool
	}{
		{name: "no samples", containers: 1, wantOK: false},
		{
			// 0.5 cores falls in bucket 25, which ends at 0.51113 cores; +15% = 0.5878.
			// 500Mi = 524288000 bytes falls in memory bucket 26, which ends at 546691264 bytes;
			// +15% = 599.6Mi, rounded up to 600Mi.
			name: "constant usage: every percentile is the bucket's end plus the margin", containers: 1,
			samples: []corev1.ResourceList{list("500m", "500Mi"), list("500m", "500Mi")},
			want:    Estimate{Target: list("588m", "600Mi"), LowerBound: list("588m", "600Mi"), UpperBound: list("588m", "600Mi")},
			wantOK:  true,
		},
		{
			// The floor is the Pod minimum shared by two containers: 12.5m (rounded up) and 125Mi.
			name: "tiny usage is raised to the container's share of the Pod minimum", containers: 2,
			samples: []corev1.ResourceList{list("1m", "1Mi")},
			want:    Estimate{Target: list("13m", "125Mi"), LowerBound: list("13m", "125Mi"), UpperBound: list("13m", "125Mi")},
			wantOK:  true,
		},
		{
			// 1Gi falls in bucket 37, ending at 1077095458 bytes; +15% = 1181.3Mi.
			name: "a resource without samples is left out", containers: 1,
			samples: []corev1.ResourceList{list("", "1Gi")},
			want:    Estimate{Target: list("", "1182Mi"), LowerBound: list("", "1182Mi"), UpperBound: list("", "1182Mi")},
			wantOK:  true,
		},
		{
			// Nine samples at 100m and one at 2 cores: the median and the 90th percentile
			// stay at 100m (bucket 8 ends at 0.1103 cores, +15% = 127m), the 95th reaches the
			// spike (2 cores is in bucket 49, ending at 2.0935; +15% = 2408m).
			name: "a spike moves the upper bound only", containers: 1,
			samples: append(repeat(list("100m", ""), 9), list("2", "")),
			want:    Estimate{Target: list("127m", ""), LowerBound: list("127m", ""), UpperBound: list("2408m", "")},
			wantOK:  true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewContainerHistory()
			for _, s := range tc.samples {
				h.AddSample(s, t0)
			}
			got, ok := h.Estimate(tc.containers)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got, compare.Quantities); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func repeat(l corev1.ResourceList, n int) []corev1.ResourceList {
	out := make([]corev1.ResourceList, n)
	for i := range out {
		out[i] = l
	}
	return out
}

func TestQuantitiesRoundUp(t *testing.T) {
	for _, tc := range []struct {
		got  resource.Quantity
		want string
	}{
		{got: CPUQuantity(0.5878), want: "588m"},
		{got: CPUQuantity(0.5), want: "500m"},
		{got: CPUQuantity(2), want: "2"},
		{got: MemoryQuantity(262144001), want: "251Mi"},
		{got: MemoryQuantity(256 << 20), want: "256Mi"},
		{got: MemoryQuantity(1 << 30), want: "1Gi"},
	} {
		if tc.got.String() != tc.want {
			t.Errorf("got %s, want %s", tc.got.String(), tc.want)
		}
	}
}

func TestMoved(t *testing.T) {
	for _, tc := range []struct {
		name       string
		last, next corev1.ResourceList
		want       bool
	}{
		{name: "same", last: list("100m", "100Mi"), next: list("100m", "100Mi"), want: false},
		{name: "within threshold", last: list("100m", "100Mi"), next: list("109m", "91Mi"), want: false},
		{name: "cpu beyond threshold", last: list("100m", "100Mi"), next: list("111m", "100Mi"), want: true},
		{name: "memory down beyond threshold", last: list("100m", "100Mi"), next: list("100m", "89Mi"), want: true},
		{name: "resource added", last: list("100m", ""), next: list("100m", "100Mi"), want: true},
		{name: "resource swapped", last: list("100m", ""), next: list("", "100Mi"), want: true},
		{name: "from nothing", last: nil, next: list("100m", ""), want: true},
		{name: "from zero", last: list("0", ""), next: list("1m", ""), want: true},
		{name: "zero to zero", last: list("0", ""), next: list("0", ""), want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Moved(tc.last, tc.next, 0.1); got != tc.want {
				t.Errorf("Moved = %v, want %v", got, tc.want)
			}
		})
	}
}
