package loganalysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSketchQuantilesWithinAlpha(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 10, 1000, 100000} {
		var s sketch
		values := make([]float64, n)
		for i := range values {
			values[i] = math.Exp(rnd.NormFloat64()*2 + 1) // from about 0.01 ms to seconds
			s.add(values[i])
		}
		slices.Sort(values)
		for _, q := range []float64{0.5, 0.95, 0.99, 1} {
			exact := values[int(math.Ceil(q*float64(n)))-1]
			got := s.quantile(q)
			if math.Abs(got-exact) > sketchAlpha*exact {
				t.Errorf("n=%d: quantile(%v) = %v, exact %v: more than %v%% off", n, q, got, exact, 100*sketchAlpha)
			}
		}
		if s.max != values[n-1] {
			t.Errorf("n=%d: max = %v, want %v", n, s.max, values[n-1])
		}
	}
}

func TestSketchEdges(t *testing.T) {
	var empty sketch
	if got := empty.quantile(0.5); got != 0 {
		t.Errorf("empty sketch: quantile(0.5) = %v, want 0", got)
	}
	var s sketch
	s.add(0)
	s.add(1e12) // beyond sketchMaxMs: counted in the last bucket, max kept exact
	if got := s.quantile(0.5); got != sketchMinMs {
		t.Errorf("quantile(0.5) of {0, 1e12} = %v, want %v (the sketch's floor)", got, sketchMinMs)
	}
	if got := s.quantile(1); math.Abs(got-sketchMaxMs) > sketchAlpha*sketchMaxMs {
		t.Errorf("quantile(1) of {0, 1e12} = %v, want about %v (the sketch's ceiling)", got, sketchMaxMs)
	}
	if s.max != 1e12 {
		t.Errorf("max = %v, want 1e12", s.max)
	}
}
