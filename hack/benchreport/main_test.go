package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMediansAndTargets(t *testing.T) {
	out := `goos: linux
BenchmarkConvergence/workers=4-2   	       1	17078929922 ns/op	         4.038 controller-s	   4.000 controller-writes/myapp	         0.9 x-peer
BenchmarkConvergence/workers=4-2   	       1	17078929922 ns/op	         4.100 controller-s	   5.000 controller-writes/myapp	         1.5 x-peer
BenchmarkConvergence/workers=4-2   	       1	17078929922 ns/op	         4.200 controller-s	   6.000 controller-writes/myapp	         1.4 x-peer
BenchmarkMapFunction/objects=100-2 	 100000	      1200 ns/op
PASS
ok  	github.com/example/switchboard/controllers/myapp	23.594s
`
	rows, failed, err := parse(strings.NewReader(out))
	if err != nil || failed {
		t.Fatalf("parse: failed %v err %v", failed, err)
	}
	got := map[string]Row{}
	for _, r := range rows {
		got[r.Benchmark+" "+r.Unit] = r
	}
	for key, want := range map[string]struct {
		median float64
		status string
	}{
		"BenchmarkConvergence/workers=4 x-peer":                  {1.4, "short"},
		"BenchmarkConvergence/workers=4 controller-writes/myapp": {5, "short"},
		"BenchmarkConvergence/workers=4 controller-s":            {4.1, "measured"},
		"BenchmarkMapFunction/objects=100 ns/op":                 {1200, "measured"},
	} {
		r, ok := got[key]
		if !ok {
			t.Errorf("no row %q", key)
			continue
		}
		if diff := cmp.Diff([2]any{want.median, want.status}, [2]any{r.Median, r.Status}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", key, diff)
		}
	}
}

func TestParseNoticesFailure(t *testing.T) {
	for name, output := range map[string]string{
		"package failed": "--- FAIL: BenchmarkConvergence\nFAIL\tpkg\t1s\n",
		// One run of three failed: the others are still reported.
		"run failed": "BenchmarkOne-2 \t 1\t 10 ns/op\t 1.000 reconciles/update\n" +
			"BenchmarkOne-2 \t--- FAIL: BenchmarkOne\n    bench_test.go:151: 10000 reconciles, want 1\n--- FAIL: BenchmarkOne-2\n" +
			"BenchmarkOne-2 \t 1\t 12 ns/op\t 1.000 reconciles/update\n",
	} {
		rows, failed, err := parse(strings.NewReader(output))
		if err != nil || !failed {
			t.Errorf("%s: failed %v err %v, want a failure noticed", name, failed, err)
		}
		if name != "run failed" {
			continue
		}
		var runs []float64
		for _, r := range rows {
			if r.Unit == "reconciles/update" {
				runs = r.Runs
			}
		}
		if diff := cmp.Diff([]float64{1, 1}, runs); diff != "" {
			t.Errorf("%s: runs of the passing benchmarks (-want +got):\n%s", name, diff)
		}
	}
}

func TestTrimProcs(t *testing.T) {
	for in, want := range map[string]string{
		"BenchmarkX-2":                "BenchmarkX",
		"BenchmarkX/objects=10000-16": "BenchmarkX/objects=10000",
		"BenchmarkX/name-with-dash":   "BenchmarkX/name-with-dash",
		"BenchmarkNoProcs":            "BenchmarkNoProcs",
	} {
		if got := trimProcs(in); got != want {
			t.Errorf("trimProcs(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseLeavesOutNonFiniteValues: a NaN or infinite figure (a benchmark bug) is counted and
// left out of the median, and the report can still be encoded as JSON.
func TestParseLeavesOutNonFiniteValues(t *testing.T) {
	out := "BenchmarkM/size=2-2 \t 1\t 10 ns/op\t 0.5 KiB/extra\n" +
		"BenchmarkM/size=2-2 \t 1\t 10 ns/op\t +Inf KiB/extra\n" +
		"BenchmarkM/size=2-2 \t 1\t 10 ns/op\t NaN KiB/extra\n" +
		"BenchmarkN-2 \t 1\t 10 ns/op\t -Inf x\n"
	rows, _, err := parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Row{}
	for _, r := range rows {
		got[r.Benchmark+" "+r.Unit] = r
	}
	want := map[string]Row{
		"BenchmarkM/size=2 KiB/extra": {Benchmark: "BenchmarkM/size=2", Unit: "KiB/extra", Median: 0.5, Runs: []float64{0.5}, Status: "measured", NotFinite: 2},
		"BenchmarkN x":                {Benchmark: "BenchmarkN", Unit: "x", Status: "no result", NotFinite: 1},
	}
	for key, w := range want {
		if diff := cmp.Diff(w, got[key]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", key, diff)
		}
	}
	if _, err := json.Marshal(rows); err != nil {
		t.Errorf("report rows do not encode: %v", err)
	}
}
