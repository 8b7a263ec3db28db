package recommender

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/compare"
)

// throughJSON encodes v as the API server stores it and decodes it into a new value.
func throughJSON[T any](t *testing.T, v T) T {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// roundTrip checkpoints h at time at, through JSON, into a new histogram with h's options.
func roundTrip(t *testing.T, h *Histogram, at time.Time) *Histogram {
	t.Helper()
	cp, err := h.Checkpoint(at)
	if err != nil {
		t.Fatal(err)
	}
	restored := NewHistogram(h.options, h.halfLife)
	if err := restored.LoadCheckpoint(throughJSON(t, cp)); err != nil {
		t.Fatalf("LoadCheckpoint: %v", err)
	}
	return restored
}

// percentilesWithinOneBucket fails the test for each percentile at which got is more than one
// bucket from want.
func percentilesWithinOneBucket(t *testing.T, want, got *Histogram) {
	t.Helper()
	o := want.options
	for p := 0.01; p <= 1; p += 0.01 {
		w, g := want.Percentile(p), got.Percentile(p)
		if d := o.FindBucket(g) - o.FindBucket(w); d < -1 || d > 1 {
			t.Errorf("Percentile(%.2f) = %v, want %v within one bucket (%d buckets off)", p, g, w, d)
		}
	}
}

// histograms are the shapes the round trip is tested on, each filled by its own generator over
// days of samples.
var histograms = []struct {
	name    string
	options *HistogramOptions
	// sample returns the value and weight of sample i, one a minute.
	sample func(rng *rand.Rand, i int) (value, weight float64)
	days   int
}{
	{name: "steady cpu", options: &CPUHistogramOptions, days: 3, sample: func(rng *rand.Rand, _ int) (float64, float64) {
		return 0.25 * (1 + 0.1*(rng.Float64()-0.5)), 0.1
	}},
	{name: "spiky cpu, weighted by request", options: &CPUHistogramOptions, days: 8, sample: func(rng *rand.Rand, _ int) (float64, float64) {
		if rng.Float64() < 0.03 {
			return 1.8 * (1 + 0.2*(rng.Float64()-0.5)), 2
		}
		return 0.1 * (1 + 0.2*(rng.Float64()-0.5)), 0.5
	}},
	{name: "daily wave cpu", options: &CPUHistogramOptions, days: 8, sample: func(rng *rand.Rand, i int) (float64, float64) {
		wave := (1 + math.Sin(2*math.Pi*float64(i)/(24*60))) / 2
		return (0.05 + 3*wave) * (1 + 0.1*(rng.Float64()-0.5)), 1
	}},
	{name: "memory peaks", options: &MemoryHistogramOptions, days: 8, sample: func(rng *rand.Rand, _ int) (float64, float64) {
		return (200 + 400*rng.Float64()) * mib, 0.1
	}},
}

func TestHistogramCheckpointRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range histograms {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			h := NewHistogram(tc.options, UsageHalfLife)
			minutes := tc.days * 24 * 60
			for i := range minutes {
				v, w := tc.sample(rng, i)
				h.AddSample(v, w, t0.Add(time.Duration(i)*time.Minute))
			}
			end := t0.Add(time.Duration(minutes) * time.Minute)
			restored := roundTrip(t, h, end)
			percentilesWithinOneBucket(t, h, restored)

			// Decay is preserved: a day more of samples weighs against the restored history
			// as it would against the original.
			for i := minutes; i < minutes+24*60; i++ {
				v, w := tc.sample(rng, i)
				at := t0.Add(time.Duration(i) * time.Minute)
				h.AddSample(2*v, w, at)
				restored.AddSample(2*v, w, at)
			}
			percentilesWithinOneBucket(t, h, restored)
		})
	}
}

// TestHistogramCheckpointMovesTheReference checks that a checkpoint taken long after the
// histogram's reference takes its weights at a reference near the checkpoint's time (so that its
// total fits an int64 however long the history), and that the samples after it still weigh
// against the old ones as they would have.
func TestHistogramCheckpointMovesTheReference(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := NewHistogram(&CPUHistogramOptions, UsageHalfLife)
	// A sample a day for 90 days: the reference stays at the first, so the weights reach 2^90.
	for d := range 90 {
		h.AddSample(0.1+0.01*float64(d%10), 1, t0.Add(time.Duration(d)*24*time.Hour))
	}
	at := t0.Add(90 * 24 * time.Hour)
	cp, err := h.Checkpoint(at)
	if err != nil {
		t.Fatal(err)
	}
	if got := cp.ReferenceTime.Time; !got.Equal(at) {
		t.Errorf("reference %v, want the checkpoint's time %v", got, at)
	}
	// At the new reference, the last sample (a day old) weighs 0.5, the total about twice that.
	if cp.TotalWeightMicros < 900_000 || cp.TotalWeightMicros > 1_100_000 {
		t.Errorf("total weight %d millionths, want about 1,000,000", cp.TotalWeightMicros)
	}
	restored := roundTrip(t, h, at)
	percentilesWithinOneBucket(t, h, restored)
	for d := 90; d < 95; d++ {
		h.AddSample(0.5, 1, t0.Add(time.Duration(d)*24*time.Hour))
		restored.AddSample(0.5, 1, t0.Add(time.Duration(d)*24*time.Hour))
	}
	percentilesWithinOneBucket(t, h, restored)
}

func TestHistogramCheckpointIsCompact(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// The worst case: every bucket holds a sample, of weights spread over four orders of
	// magnitude, so that the relative weights have five digits.
	h := NewHistogram(&CPUHistogramOptions, UsageHalfLife)
	for b := range CPUHistogramOptions.NumBuckets() {
		h.AddSample(CPUHistogramOptions.BucketStart(b), 0.1+float64(b%7)*100, t0)
	}
	cp, err := h.Checkpoint(t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Weights) != CPUHistogramOptions.NumBuckets() {
		t.Fatalf("%d weights, want one per bucket", len(cp.Weights))
	}
	for _, w := range cp.Weights {
		if w < 1 || w > MaxCheckpointWeight {
			t.Fatalf("weight %d outside 1 to %d", w, MaxCheckpointWeight)
		}
	}
	data, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	// 176 weights of up to five digits and a comma, and the three other fields.
	if len(data) > 1200 {
		t.Errorf("a full histogram encodes to %d bytes, want at most 1,200:\n%s", len(data), data)
	}
	// The CRD's limit on the number of weights holds every bucket of either histogram.
	if n := max(CPUHistogramOptions.NumBuckets(), MemoryHistogramOptions.NumBuckets()); n > 1024 {
		t.Errorf("%d buckets, more than the CRD's 1,024 weights", n)
	}

	// The usual case: a steady container spans a few buckets.
	steady := NewHistogram(&CPUHistogramOptions, UsageHalfLife)
	for i := range 24 * 60 {
		steady.AddSample(0.25+0.02*math.Sin(float64(i)), 0.5, t0.Add(time.Duration(i)*time.Minute))
	}
	cp, err = steady.Checkpoint(t0.Add(24 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := json.Marshal(cp); len(cp.Weights) > 5 || len(data) > 150 {
		t.Errorf("a steady day encodes to %d weights, %d bytes: %s", len(cp.Weights), len(data), data)
	}

	empty, err := NewHistogram(&CPUHistogramOptions, UsageHalfLife).Checkpoint(t0)
	if err != nil || !cmp.Equal(empty, v1alpha1.HistogramCheckpoint{}) {
		t.Errorf("empty histogram: %+v, %v; want the zero checkpoint", empty, err)
	}
}

func TestHistogramLoadCheckpointRejectsBadData(t *testing.T) {
	day := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	midday := metav1.NewTime(day.Add(12 * time.Hour))
	for _, tc := range []struct {
		name string
		cp   v1alpha1.HistogramCheckpoint
		want string
	}{
		{"past the last bucket", v1alpha1.HistogramCheckpoint{ReferenceTime: &day, TotalWeightMicros: 1, FirstBucket: 175, Weights: []int32{1, 1}}, "outside [0, 176)"},
		{"negative bucket", v1alpha1.HistogramCheckpoint{ReferenceTime: &day, TotalWeightMicros: 1, FirstBucket: -1, Weights: []int32{1}}, "outside"},
		{"negative weight", v1alpha1.HistogramCheckpoint{ReferenceTime: &day, TotalWeightMicros: 1, Weights: []int32{-1}}, "weight -1"},
		{"weight above the scale", v1alpha1.HistogramCheckpoint{ReferenceTime: &day, TotalWeightMicros: 1, Weights: []int32{10001}}, "weight 10001"},
		{"total without weights", v1alpha1.HistogramCheckpoint{ReferenceTime: &day, TotalWeightMicros: 5, Weights: []int32{0}}, "in no bucket"},
		{"weights without total", v1alpha1.HistogramCheckpoint{ReferenceTime: &day, Weights: []int32{3}}, "no total"},
		{"weights without reference", v1alpha1.HistogramCheckpoint{TotalWeightMicros: 1, Weights: []int32{3}}, "without a reference"},
		{"reference between half-lives", v1alpha1.HistogramCheckpoint{ReferenceTime: &midday, TotalWeightMicros: 1, Weights: []int32{3}}, "not a whole number of half-lives"},
		{"negative total", v1alpha1.HistogramCheckpoint{TotalWeightMicros: -1}, "total weight -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistogram(&CPUHistogramOptions, UsageHalfLife)
			if err := h.LoadCheckpoint(tc.cp); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

// dayOfHistory returns the history of two containers of two Pods each after a day of reads a
// minute, as the poller keeps it, ending at the returned time.
func dayOfHistory() (*targetHistory, time.Time) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	containers := []string{"app", "proxy"}
	pods := benchPods("web", 2)
	r := newReader(5, len(pods), containers)
	h := &targetHistory{containers: map[string]*ContainerHistory{}}
	var at time.Time
	for i := range 24 * 60 {
		at = t0.Add(time.Duration(i) * time.Minute)
		h.add(r.read(pods, at, i), pods, at)
	}
	return h, at
}

func TestContainerCheckpointRoundTrip(t *testing.T) {
	h, end := dayOfHistory()
	// An OOM kill of web-0's app container, recorded as the poller records one.
	killed := end.Add(-time.Hour).Truncate(time.Second)
	if !h.containers["app"].RecordOOM("web-0", killed, 256*mib) {
		t.Fatal("OOM kill not recorded")
	}
	status, err := h.checkpoint(end)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := loadCheckpoint(new(throughJSON(t, status)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"app", "proxy"}, sortedKeys(restored.containers)); diff != "" {
		t.Fatalf("containers (-want +got):\n%s", diff)
	}
	for name, want := range h.containers {
		got := restored.containers[name]
		percentilesWithinOneBucket(t, &want.CPU, &got.CPU)
		percentilesWithinOneBucket(t, &want.Memory, &got.Memory)
		// What the bounds rest on comes back exactly.
		w, _ := want.Estimate(DefaultPolicy, 2)
		g, _ := got.Estimate(DefaultPolicy, 2)
		if diff := cmp.Diff(w, g, compare.Quantities); diff != "" {
			t.Errorf("%s: estimate after the round trip (-before +after):\n%s", name, diff)
		}
		// Peaks come back in whole bytes.
		if diff := cmp.Diff(want.pods, got.pods, cmp.AllowUnexported(podContainer{}), cmpopts.EquateApprox(0, 0.5)); diff != "" {
			t.Errorf("%s: Pod state (-before +after):\n%s", name, diff)
		}
	}

	// The kill, still shown in the Pod's lastState, is not counted again after the restart;
	// nor is the last sample, read again.
	app := restored.containers["app"]
	memoryBefore, samplesBefore := app.Memory.total, app.Samples
	if app.RecordOOM("web-0", killed, 256*mib) {
		t.Error("the OOM kill recorded before the checkpoint counted again after it")
	}
	if app.AddSample("web-1", list("300m", "300Mi"), benchRequests, end) || app.Samples != samplesBefore {
		t.Error("the last sample before the checkpoint counted again after it")
	}
	// A higher memory sample the same day replaces the Pod's peak, as it would have before: the
	// memory histogram holds one peak per Pod and day either way.
	peak := app.pods["web-1"].memoryPeak
	for _, c := range []*ContainerHistory{h.containers["app"], app} {
		if !c.AddSample("web-1", memoryUsage(peak*2), nil, end.Add(30*time.Second)) {
			t.Fatal("a higher memory sample changed nothing")
		}
	}
	if math.Abs(app.Memory.total-memoryBefore) > 1e-9 {
		t.Errorf("memory weight %v after a higher sample the same day, want %v: a second peak for the day", app.Memory.total, memoryBefore)
	}
	percentilesWithinOneBucket(t, &h.containers["app"].Memory, &app.Memory)
}

func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestLoadCheckpointRejectsBadData(t *testing.T) {
	h, end := dayOfHistory()
	good, err := h.checkpoint(end)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(s *v1alpha1.VerticalScalerCheckpointStatus)
		want   string
	}{
		{"another version", func(s *v1alpha1.VerticalScalerCheckpointStatus) { s.Version = "v0" }, `checkpoint version "v0", this manager reads "v1"`},
		{"a container twice", func(s *v1alpha1.VerticalScalerCheckpointStatus) { s.Containers[1].Name = "app" }, `container "app" twice`},
		{"a Pod twice", func(s *v1alpha1.VerticalScalerCheckpointStatus) { s.Containers[0].Pods[1].Name = "web-0" }, `Pod "web-0" twice`},
		{"samples without a span", func(s *v1alpha1.VerticalScalerCheckpointStatus) { s.Containers[0].FirstSampleTime = nil }, "samples from"},
		{"a bad histogram", func(s *v1alpha1.VerticalScalerCheckpointStatus) { s.Containers[0].Memory.FirstBucket = 500 }, "container app: memory: buckets 500"},
		{"a negative peak", func(s *v1alpha1.VerticalScalerCheckpointStatus) { s.Containers[1].Pods[0].MemoryPeakBytes = -1 }, "negative memory peak"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := throughJSON(t, good)
			tc.mutate(&bad)
			if _, err := loadCheckpoint(&bad); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}
