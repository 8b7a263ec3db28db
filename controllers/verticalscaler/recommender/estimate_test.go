package recommender

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/example/switchboard/apis/v1alpha1"
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
	// One day of samples, one a minute from one Pod: the confidence is one day, so the upper
	// bound is its percentile times 2 and the lower bound its percentile times
	// (1 + 0.001)^-2 = 0.998.
	day := func(usage func(i int) corev1.ResourceList) *ContainerHistory {
		h := NewContainerHistory()
		for i := 0; i <= 1440; i++ {
			h.AddSample("web-1", usage(i), nil, t0.Add(time.Duration(i)*time.Minute))
		}
		return h
	}
	for _, tc := range []struct {
		name       string
		history    *ContainerHistory
		policy     Policy
		containers int
		want       Estimate
		wantOK     bool
	}{
		{name: "no samples", history: NewContainerHistory(), policy: DefaultPolicy, containers: 1, wantOK: false},
		{
			// 0.5 cores falls in bucket 25, which ends at 0.51113 cores; +15% = 0.5878, times 2
			// for the upper bound, times 0.998 for the lower. 500Mi = 524288000 bytes falls in
			// memory bucket 26, which ends at 546691264 bytes; +15% = 599.6Mi, rounded up to
			// 600Mi, 1199.2Mi upper, 598.4Mi lower. Memory counts one peak: a single Pod's day.
			name: "constant usage for a day", containers: 1, policy: DefaultPolicy,
			history: day(func(int) corev1.ResourceList { return list("500m", "500Mi") }),
			want: Estimate{Target: list("588m", "600Mi"), LowerBound: list("587m", "599Mi"), UpperBound: list("1176m", "1200Mi"),
				Samples: 1441, FirstSample: t0, LastSample: t0.Add(24 * time.Hour)},
			wantOK: true,
		},
		{
			// The floor is the Pod minimum shared by two containers: 12.5m (rounded up) and
			// 125Mi. The CPU upper bound clears it: bucket 0 ends at 10m, +15%, times 2.
			name: "tiny usage is raised to the container's share of the Pod minimum", containers: 2, policy: DefaultPolicy,
			history: day(func(int) corev1.ResourceList { return list("1m", "1Mi") }),
			want: Estimate{Target: list("13m", "125Mi"), LowerBound: list("13m", "125Mi"), UpperBound: list("23m", "125Mi"),
				Samples: 1441, FirstSample: t0, LastSample: t0.Add(24 * time.Hour)},
			wantOK: true,
		},
		{
			// One sample in 14 (7%) at 2 cores, the others at 100m: the median and the 90th
			// percentile stay at 100m (bucket 8 ends at 0.1103 cores, +15% = 127m), the 95th
			// reaches the spike (2 cores is in bucket 49, ending at 2.0935; +15% = 2408m, times 2).
			name: "a spike moves the upper bound only", containers: 1, policy: DefaultPolicy,
			history: day(func(i int) corev1.ResourceList {
				if i%14 == 13 {
					return list("2", "")
				}
				return list("100m", "")
			}),
			want: Estimate{Target: list("127m", ""), LowerBound: list("127m", ""), UpperBound: list("4816m", ""),
				Samples: 1441, FirstSample: t0, LastSample: t0.Add(24 * time.Hour)},
			wantOK: true,
		},
		{
			// The same usage with the policy of a VerticalScaler that wants the 95th percentile
			// as its target, the 90th as its lower bound and no margin.
			name: "a policy of its own", containers: 1,
			policy: Policy{TargetPercentile: 0.95, LowerBoundPercentile: 0.9, UpperBoundPercentile: 0.95},
			history: day(func(i int) corev1.ResourceList {
				if i%14 == 13 {
					return list("2", "")
				}
				return list("100m", "")
			}),
			want: Estimate{Target: list("2094m", ""), LowerBound: list("111m", ""), UpperBound: list("4187m", ""),
				Samples: 1441, FirstSample: t0, LastSample: t0.Add(24 * time.Hour)},
			wantOK: true,
		},
		{
			// One sample: no history to speak of. The VPA's upper bound is infinite; ours stops
			// at the histogram's range. The lower bound is zero, raised to the Pod minimum.
			name: "a single sample: the widest bounds", containers: 1, policy: DefaultPolicy,
			history: func() *ContainerHistory {
				h := NewContainerHistory()
				h.AddSample("web-1", list("500m", "1Gi"), nil, t0)
				return h
			}(),
			want: Estimate{Target: list("588m", "1182Mi"), LowerBound: list("25m", "250Mi"), UpperBound: list("1000", "953675Mi"),
				Samples: 1, FirstSample: t0, LastSample: t0},
			wantOK: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.history.Estimate(tc.policy, tc.containers)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got, compare.Quantities); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPolicyFor(t *testing.T) {
	// The API's defaults are the recommender's.
	if got, want := PolicyFor(nil), (Policy{TargetPercentile: v1alpha1.DefaultTargetPercentile / 100.0,
		LowerBoundPercentile: v1alpha1.DefaultLowerBoundPercentile / 100.0, UpperBoundPercentile: v1alpha1.DefaultUpperBoundPercentile / 100.0,
		SafetyMarginFraction: v1alpha1.DefaultSafetyMarginPercent / 100.0}); got != want {
		t.Errorf("PolicyFor(nil) = %+v, want the API's defaults %+v", got, want)
	}
	p99, zero := int32(99), int32(0)
	got := PolicyFor(&v1alpha1.RecommenderPolicy{UpperBoundPercentile: &p99, SafetyMarginPercent: &zero})
	if want := (Policy{TargetPercentile: 0.9, LowerBoundPercentile: 0.5, UpperBoundPercentile: 0.99}); got != want {
		t.Errorf("PolicyFor = %+v, want %+v", got, want)
	}
	if diff := cmp.Diff(&v1alpha1.RecommenderPolicy{TargetPercentile: new(int32(90)), LowerBoundPercentile: new(int32(50)),
		UpperBoundPercentile: &p99, SafetyMarginPercent: &zero}, got.Status()); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
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
