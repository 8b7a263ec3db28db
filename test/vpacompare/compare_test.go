package vpacompare

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/config"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/logic"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/model"

	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// maxRelativeError is how far our target (and bounds) may be from the VPA's, as a fraction of
// the VPA's.
const maxRelativeError = 0.05

const mib = 1 << 20

// event is one thing a trace says happened to a Pod's container: a usage sample, or an OOM kill.
type event struct {
	pod string
	at  time.Time
	// cpu in cores and memory in bytes, for a sample.
	cpu, memory float64
	// oom marks an OOM kill, of a container that requested requestBytes of memory.
	oom          bool
	requestBytes float64
	// cpuRequest is the container's CPU request in cores when the sample was taken; 0 for none.
	cpuRequest float64
}

// trace is a named sequence of events, in time order.
type trace struct {
	name   string
	events []event
}

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// minutes returns a trace of one sample a minute per Pod for the given duration, with usage at
// minute i from usage(pod, i).
func minutes(name string, pods []string, d time.Duration, usage func(pod string, i int) (cpu, memory float64)) trace {
	tr := trace{name: name}
	for i := 0; i < int(d/time.Minute); i++ {
		for _, pod := range pods {
			cpu, memory := usage(pod, i)
			tr.events = append(tr.events, event{pod: pod, at: t0.Add(time.Duration(i) * time.Minute), cpu: cpu, memory: memory})
		}
	}
	return tr
}

const day = 24 * 60 // minutes

func traces() []trace {
	rng := rand.New(rand.NewPCG(17, 3))
	noise := func(v, fraction float64) float64 { return v * (1 + fraction*(2*rng.Float64()-1)) }
	two := []string{"web-1", "web-2"}
	eight := 8 * 24 * time.Hour

	steady := minutes("steady", two, eight, func(_ string, _ int) (float64, float64) {
		return noise(0.25, 0.05), noise(300*mib, 0.02)
	})
	spiky := minutes("spiky", two, eight, func(_ string, _ int) (float64, float64) {
		cpu, memory := noise(0.1, 0.1), noise(200*mib, 0.02)
		if rng.Float64() < 0.03 {
			cpu = noise(1.8, 0.1)
		}
		if rng.Float64() < 0.005 {
			memory = noise(500*mib, 0.05)
		}
		return cpu, memory
	})
	growing := minutes("growing", two, eight, func(_ string, i int) (float64, float64) {
		f := float64(i) / (8 * day)
		return noise(0.1+0.9*f, 0.05), noise((200+600*f)*mib, 0.02)
	})
	periodic := minutes("periodic", two, eight, func(_ string, i int) (float64, float64) {
		wave := math.Sin(2 * math.Pi * float64(i) / day)
		return noise(0.2+0.15*wave, 0.05), noise((400+200*wave)*mib, 0.02)
	})
	// The container of web-1 is killed for lack of memory twice, requesting 512Mi; web-2 never.
	withOOM := minutes("oom", two, eight, func(_ string, _ int) (float64, float64) {
		return noise(0.3, 0.05), noise(400*mib, 0.03)
	})
	withOOM.events = insert(withOOM.events,
		event{pod: "web-1", at: t0.Add(5*24*time.Hour + 30*time.Second), oom: true, requestBytes: 512 * mib},
		event{pod: "web-1", at: t0.Add(6*24*time.Hour + 7*time.Hour + 30*time.Second), oom: true, requestBytes: 512 * mib})
	// Pods replaced every day, as rollouts do: each new Pod starts its own memory intervals.
	churn := minutes("rollouts", nil, 0, nil)
	for i := 0; i < 8*day; i++ {
		for _, n := range []int{1, 2} {
			pod := "web-" + string(rune('a'+i/day)) + string(rune('0'+n))
			churn.events = append(churn.events, event{pod: pod, at: t0.Add(time.Duration(i) * time.Minute),
				cpu: noise(0.5, 0.2), memory: noise(float64(300+20*(i/day))*mib, 0.05)})
		}
	}
	// Two hours of history: the bounds are still wide.
	short := minutes("short history", two, 2*time.Hour, func(_ string, _ int) (float64, float64) {
		return noise(0.25, 0.05), noise(300*mib, 0.02)
	})
	// The only trace with requests: six days under a 2-core request, using about 900m, then a
	// rollout that cuts the request to 250m, under which the same service is squeezed to about
	// 220m. Samples weigh their request (see weighted), so the older samples, taken with room
	// to spare, keep a say that the VPA v1.8.1 gives them no longer.
	requests := minutes("request cut", nil, 0, nil)
	for i := 0; i < 8*day; i++ {
		for _, n := range []int{1, 2} {
			pod, request, cpu := "web-a"+string(rune('0'+n)), 2.0, noise(0.9, 0.2)
			if i >= 6*day {
				pod, request, cpu = "web-b"+string(rune('0'+n)), 0.25, noise(0.22, 0.1)
			}
			requests.events = append(requests.events, event{pod: pod, at: t0.Add(time.Duration(i) * time.Minute),
				cpu: cpu, memory: noise(300*mib, 0.02), cpuRequest: request})
		}
	}
	return []trace{steady, spiky, growing, periodic, withOOM, churn, short, requests}
}

// hasRequests says whether a trace's samples carry CPU requests.
func (tr trace) hasRequests() bool {
	for _, e := range tr.events {
		if e.cpuRequest > 0 {
			return true
		}
	}
	return false
}

// insert puts extra events into events, keeping time order (extra after samples of the same
// time, as both recommenders record OOM kills after a read's samples).
func insert(events []event, extra ...event) []event {
	for _, x := range extra {
		i := 0
		for i < len(events) && !events[i].at.After(x.at) {
			i++
		}
		events = append(events[:i], append([]event{x}, events[i:]...)...)
	}
	return events
}

// result is a recommendation in cores and bytes.
type result struct {
	target, lower, upper [2]float64 // cpu, memory
}

// ours feeds the trace to the verticalscaler's recommender.
func ours(tr trace) result {
	h := recommender.NewContainerHistory()
	for _, e := range tr.events {
		if e.oom {
			h.RecordOOM(e.pod, e.at, e.requestBytes)
			continue
		}
		var requests corev1.ResourceList
		if e.cpuRequest > 0 {
			requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(e.cpuRequest*1000), resource.DecimalSI)}
		}
		h.AddSample(e.pod, corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(e.cpu*1000), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(e.memory), resource.BinarySI),
		}, requests, e.at)
	}
	est, ok := h.Estimate(recommender.DefaultPolicy, 1)
	if !ok {
		return result{}
	}
	pair := func(l corev1.ResourceList) [2]float64 {
		return [2]float64{l.Cpu().AsApproximateFloat64(), l.Memory().AsApproximateFloat64()}
	}
	return result{target: pair(est.Target), lower: pair(est.LowerBound), upper: pair(est.UpperBound)}
}

// weighted is the VPA's AggregateContainerState with each CPU sample weighted by the request
// it was taken under, max(request, 0.1 core), as the VPA weighted them before v1.4.0 and the
// verticalscaler still does. The weighted sample goes into the VPA's own CPU histogram
// (AggregateCPUUsage.AddSample), and the history's span and count are kept as
// AggregateContainerState.addCPUSample keeps them; everything else is the VPA's code.
type weighted struct {
	*model.AggregateContainerState
	// request is the CPU request in cores of the sample being added.
	request float64
}

// AddSample is AggregateContainerState.AddSample with CPU samples weighted by their request.
func (a *weighted) AddSample(s *model.ContainerUsageSample) {
	if s.Resource != model.ResourceCPU {
		a.AggregateContainerState.AddSample(s)
		return
	}
	a.AggregateCPUUsage.AddSample(model.CoresFromCPUAmount(s.Usage), max(a.request, 0.1), s.MeasureStart)
	if s.MeasureStart.After(a.LastSampleStart) {
		a.LastSampleStart = s.MeasureStart
	}
	if a.FirstSampleStart.IsZero() || s.MeasureStart.Before(a.FirstSampleStart) {
		a.FirstSampleStart = s.MeasureStart
	}
	a.TotalSamplesCount++
}

// vpa feeds the trace to the VPA recommender's model, as its cluster feeder does (one
// ContainerState per Pod, all aggregated in one AggregateContainerState), and asks its
// recommender, built with the VPA's default configuration, for the recommendation. With
// byRequest, CPU samples weigh their request (weighted); without, every CPU sample weighs 0.1,
// as in the VPA v1.8.1.
func vpa(tr trace, byRequest bool) result {
	return vpaRecommendation(vpaAggregate(tr, byRequest))
}

// vpaAggregate is the VPA recommender's aggregate of the trace's container, fed as its cluster
// feeder feeds it; with byRequest, CPU samples weigh their request.
func vpaAggregate(tr trace, byRequest bool) *model.AggregateContainerState {
	aggregate := model.NewAggregateContainerState()
	feed := &weighted{AggregateContainerState: aggregate}
	var aggregator model.ContainerStateAggregator = aggregate
	if byRequest {
		aggregator = feed
	}
	containers := map[string]*model.ContainerState{}
	container := func(pod string) *model.ContainerState {
		c := containers[pod]
		if c == nil {
			c = model.NewContainerState(model.Resources{}, aggregator)
			containers[pod] = c
		}
		return c
	}
	for _, e := range tr.events {
		c := container(e.pod)
		feed.request = e.cpuRequest
		if e.oom {
			_ = c.RecordOOM(e.at, model.MemoryAmountFromBytes(e.requestBytes))
			continue
		}
		c.AddSample(&model.ContainerUsageSample{MeasureStart: e.at, Usage: model.CPUAmountFromCores(e.cpu), Resource: model.ResourceCPU})
		c.AddSample(&model.ContainerUsageSample{MeasureStart: e.at, Usage: model.MemoryAmountFromBytes(e.memory), Resource: model.ResourceMemory})
	}
	return aggregate
}

// vpaRecommendation is the recommendation the VPA recommender, built with its default
// configuration, draws from aggregate.
func vpaRecommendation(aggregate *model.AggregateContainerState) result {
	cfg := config.DefaultRecommenderConfig()
	r := logic.CreatePodResourceRecommender(logic.RecommendationConfig{
		SafetyMarginFraction:       cfg.SafetyMarginFraction,
		PodMinCPUMillicores:        cfg.PodMinCPUMillicores,
		PodMinMemoryMb:             cfg.PodMinMemoryMb,
		TargetCPUPercentile:        cfg.TargetCPUPercentile,
		LowerBoundCPUPercentile:    cfg.LowerBoundCPUPercentile,
		UpperBoundCPUPercentile:    cfg.UpperBoundCPUPercentile,
		ConfidenceIntervalCPU:      cfg.ConfidenceIntervalCPU,
		TargetMemoryPercentile:     cfg.TargetMemoryPercentile,
		LowerBoundMemoryPercentile: cfg.LowerBoundMemoryPercentile,
		UpperBoundMemoryPercentile: cfg.UpperBoundMemoryPercentile,
		ConfidenceIntervalMemory:   cfg.ConfidenceIntervalMemory,
	})
	rec := r.GetRecommendedPodResources(model.ContainerNameToAggregateStateMap{"app": aggregate})["app"]
	pair := func(res model.Resources) [2]float64 {
		return [2]float64{model.CoresFromCPUAmount(res[model.ResourceCPU]), model.BytesFromMemoryAmount(res[model.ResourceMemory])}
	}
	return result{target: pair(rec.Target), lower: pair(rec.LowerBound), upper: pair(rec.UpperBound)}
}

// TestTargetWithinFivePercentOfTheVPA feeds every trace to both recommenders and requires our
// CPU and memory targets, lower bounds and upper bounds within 5% of the VPA's. A trace whose
// samples carry requests is compared with the VPA's model fed the same weights (weighted): the
// VPA v1.8.1 weighs every CPU sample alike, where we weigh each by its request, so the shipped
// VPA differs from us on that trace by design; the test logs by how much.
func TestTargetWithinFivePercentOfTheVPA(t *testing.T) {
	for _, tr := range traces() {
		t.Run(tr.name, func(t *testing.T) {
			got, want := ours(tr), vpa(tr, tr.hasRequests())
			if tr.hasRequests() {
				shipped := vpa(tr, false)
				apart := false
				for i, what := range []string{"target", "lower bound", "upper bound"} {
					g, s := [][2]float64{got.target, got.lower, got.upper}[i][0], [][2]float64{shipped.target, shipped.lower, shipped.upper}[i][0]
					t.Logf("cpu %s against the VPA v1.8.1 as shipped (every sample weighs 0.1): ours %s, VPA %s (%+.2f%%)", what, format("cpu", g), format("cpu", s), 100*(g-s)/s)
					apart = apart || math.Abs(g-s)/s > maxRelativeError
				}
				// Otherwise the trace would not show that the weights are the same on both
				// sides: any weights would pass.
				if !apart {
					t.Error("the trace's requests change nothing: every CPU figure within 5% of the unweighted VPA's")
				}
			}
			for _, c := range []struct {
				what      string
				got, want [2]float64
			}{
				{"target", got.target, want.target},
				{"lower bound", got.lower, want.lower},
				{"upper bound", got.upper, want.upper},
			} {
				for i, res := range []string{"cpu", "memory"} {
					g, w := c.got[i], c.want[i]
					off := math.Abs(g-w) / w
					t.Logf("%s %s: ours %s, VPA %s (%+.2f%%)", res, c.what, format(res, g), format(res, w), 100*(g-w)/w)
					if w == 0 || off > maxRelativeError {
						t.Errorf("%s %s: ours %s, VPA %s: %.1f%% off, more than %.0f%%", res, c.what, format(res, g), format(res, w), 100*off, 100*maxRelativeError)
					}
				}
			}
		})
	}
}

func format(res string, v float64) string {
	if res == "cpu" {
		return resource.NewMilliQuantity(int64(math.Round(v*1000)), resource.DecimalSI).String()
	}
	return resource.NewQuantity(int64(math.Round(v/mib))*mib, resource.BinarySI).String()
}
