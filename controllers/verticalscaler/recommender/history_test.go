package recommender

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const mib = 1 << 20

// peaks returns the memory histogram's buckets and weights relative to one fresh sample, as
// "bucket:weight" pairs: what the memory history holds.
func peaks(h *ContainerHistory) map[int]float64 {
	out := map[int]float64{}
	for _, b := range h.Memory.buckets {
		out[int(b.bucket)] += b.weight
	}
	return out
}

func TestMemoryCountsOnePeakPerPodAndInterval(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	bucket := func(bytes float64) int { return MemoryHistogramOptions.FindBucket(bytes) }
	h := NewContainerHistory()
	// A day of samples from one Pod, rising to 400Mi and falling back: one peak, 400Mi.
	for i, m := range []float64{100, 300, 400, 200} {
		h.AddSample("web-1", memoryUsage(m*mib), nil, t0.Add(time.Duration(i)*time.Hour))
	}
	got := peaks(h)
	if len(got) != 1 || got[bucket(400*mib)] == 0 {
		t.Fatalf("one Pod, one day: peaks %v, want one, in the bucket of 400Mi (%d)", got, bucket(400*mib))
	}
	// A second Pod in the same day adds its own peak.
	h.AddSample("web-2", memoryUsage(150*mib), nil, t0.Add(time.Hour))
	if got := peaks(h); len(got) != 2 || got[bucket(150*mib)] == 0 {
		t.Errorf("two Pods: peaks %v, want a second one at 150Mi", got)
	}
	// The next day, web-1 starts a new interval with a new peak.
	h.AddSample("web-1", memoryUsage(50*mib), nil, t0.Add(25*time.Hour))
	if got := peaks(h); len(got) != 3 || got[bucket(50*mib)] == 0 {
		t.Errorf("next day: peaks %v, want a third one at 50Mi", got)
	}
	// An older sample of web-1 than its last is dropped.
	h.AddSample("web-1", memoryUsage(900*mib), nil, t0.Add(2*time.Hour))
	if got := peaks(h); got[bucket(900*mib)] != 0 {
		t.Errorf("an out-of-order sample became a peak: %v", got)
	}
	if h.Samples != 0 {
		t.Errorf("Samples = %d: memory samples counted, the VPA counts CPU samples only", h.Samples)
	}
}

func TestCPUSamplesWeighTheirRequest(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// 70 samples at 200m and 30 at 1 core; 200m falls in the bucket ending at 216.6m, 1 core in
	// the one ending at 1.0166 cores: +15%, 249m and 1169m.
	const low, high = "249m", "1169m"
	for _, tc := range []struct {
		name string
		// lowRequest and highRequest are the CPU requests the 200m and the 1-core samples are
		// taken under.
		lowRequest, highRequest string
		// median and p90 are the targets drawn at the 50th and the 90th percentile.
		median, p90 string
	}{
		// The same request: the samples weigh alike, the median is among the 200m ones and the
		// 90th percentile among the 1-core ones.
		{name: "same request", lowRequest: "500m", highRequest: "500m", median: low, p90: high},
		// The 1-core samples were taken under a 2-core request, the 200m ones under 100m:
		// 30 × 2 outweighs 70 × 0.1, and even the median is among the 1-core samples.
		{name: "larger request weighs more", lowRequest: "100m", highRequest: "2", median: high, p90: high},
		// The other way round, 70 × 2 against 30 × 0.1: the 1-core samples hold 2% of the
		// weight, and even the 90th percentile is among the 200m ones.
		{name: "smaller request weighs less", lowRequest: "2", highRequest: "100m", median: low, p90: low},
		// Under 0.1 core, a sample weighs 0.1 core, the VPA's minimum: as if there were none.
		{name: "no request or a tiny one", lowRequest: "", highRequest: "10m", median: low, p90: high},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewContainerHistory()
			for i := range 100 {
				usage, request := "200m", tc.lowRequest
				if i%10 >= 7 {
					usage, request = "1", tc.highRequest
				}
				h.AddSample("web-1", list(usage, ""), list(request, ""), t0.Add(time.Duration(i)*time.Second))
			}
			median := DefaultPolicy
			median.TargetPercentile = 0.5
			for _, c := range []struct {
				policy Policy
				want   string
			}{{median, tc.median}, {DefaultPolicy, tc.p90}} {
				e, _ := h.Estimate(c.policy, 1)
				if got := e.Target.Cpu().String(); got != c.want {
					t.Errorf("CPU target at percentile %v: %s, want %s", c.policy.TargetPercentile, got, c.want)
				}
			}
		})
	}
	for _, tc := range []struct {
		requests corev1.ResourceList
		want     float64
	}{
		{nil, 0.1},
		{list("", "1Gi"), 0.1},
		{list("50m", ""), 0.1},
		{list("250m", ""), 0.25},
		{list("4", ""), 4},
	} {
		if got := CPUSampleWeight(tc.requests); got != tc.want {
			t.Errorf("CPUSampleWeight(%v) = %v, want %v", tc.requests, got, tc.want)
		}
	}
	// A container with a CPU limit and no request runs with the limit as its request.
	if got := CPUSampleWeight(requestsOf(corev1.ResourceRequirements{Limits: list("2", "")})); got != 2 {
		t.Errorf("weight under a 2-core limit without a request: %v, want 2", got)
	}
	if got := CPUSampleWeight(requestsOf(corev1.ResourceRequirements{Requests: list("1", ""), Limits: list("2", "")})); got != 1 {
		t.Errorf("weight under a 1-core request and a 2-core limit: %v, want 1", got)
	}
}

// memoryUsage is a sample of bytes of memory.
func memoryUsage(bytes float64) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(int64(bytes), resource.BinarySI)}
}

func TestRecordOOM(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	memory := func(h *ContainerHistory) string {
		e, _ := h.Estimate(DefaultPolicy, 1)
		return e.Target.Memory().String()
	}
	for _, tc := range []struct {
		name    string
		request float64
		want    string
	}{
		// used = max(request 512Mi, peak 400Mi); max(used + 100Mi, used × 1.2) = 614.4Mi, in
		// the bucket ending at 633.6Mi; +15% = 728.7Mi. It replaces the interval's peak.
		{name: "request above the peak", request: 512 * mib, want: "729Mi"},
		// No request: used is the peak, 400Mi; max(500Mi, 480Mi) = 500Mi, in the bucket
		// ending at 521.4Mi; +15% = 599.6Mi.
		{name: "no request", request: 0, want: "600Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewContainerHistory()
			h.AddSample("web-1", list("100m", "400Mi"), nil, t0)
			before := memory(h)
			if !h.RecordOOM("web-1", t0.Add(time.Minute), tc.request) {
				t.Fatal("OOM kill not recorded")
			}
			if got := memory(h); got != tc.want {
				t.Errorf("memory target after the kill %s (before %s), want %s", got, before, tc.want)
			}
			if !h.LastOOMKill.Equal(t0.Add(time.Minute)) {
				t.Errorf("LastOOMKill = %v", h.LastOOMKill)
			}
			// The same kill, read again, counts once.
			if h.RecordOOM("web-1", t0.Add(time.Minute), tc.request) {
				t.Error("the same kill recorded twice")
			}
			if got := memory(h); got != tc.want {
				t.Errorf("memory target after the kill was read again: %s, want %s", got, tc.want)
			}
		})
	}

	h := NewContainerHistory()
	h.AddSample("web-1", memoryUsage(400*mib), nil, t0.Add(48*time.Hour))
	if h.RecordOOM("web-1", t0, 512*mib) {
		t.Error("a kill two days older than the last sample recorded: the VPA drops those")
	}
}

func TestContainerHistoryForgetsPodsAndExpires(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := NewContainerHistory()
	h.AddSample("web-1", list("100m", "100Mi"), nil, t0)
	h.AddSample("web-2", list("100m", "100Mi"), nil, t0)
	h.RetainPods(func(pod string) bool { return pod == "web-2" })
	if len(h.pods) != 1 || h.pods["web-2"] == nil {
		t.Errorf("pods = %v, want web-2 only", h.pods)
	}
	if h.CPU.IsEmpty() {
		t.Error("a gone Pod's samples left the histogram")
	}
	if h.Expired(t0.Add(7 * 24 * time.Hour)) {
		t.Error("expired after 7 days")
	}
	if !h.Expired(t0.Add(8 * 24 * time.Hour)) {
		t.Error("not expired after 8 days without a sample")
	}
}

func TestRecommendedContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "migrate"}, {Name: "proxy", RestartPolicy: &always}},
		Containers:     []corev1.Container{{Name: "app"}, {Name: "logger"}},
	}
	var names []string
	for _, c := range RecommendedContainers(spec) {
		names = append(names, c.Name)
	}
	// The plain init container runs to completion before the others: no recommendation.
	if diff := cmp.Diff([]string{"app", "logger", "proxy"}, names); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
