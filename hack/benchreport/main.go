// Command benchreport turns `go test -bench` output into bench/report.md and bench/report.json:
// one row per (benchmark, metric), the median over repeated runs, and the target the issues set
// for it, with pass or short. It reads the benchmark output on stdin and prints the table.
//
//	go test -run '^$' -bench . ./... | go run ./hack/benchreport -out bench
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Target is a figure an issue asks for.
type Target struct {
	// Benchmark is the benchmark's name without the -GOMAXPROCS suffix; a sub-benchmark's full
	// name ("BenchmarkMapFunction/objects=10000").
	Benchmark string
	// Unit is the metric's unit as the benchmark reports it.
	Unit string
	// Scenario says in words what is measured.
	Scenario string
	// AtMost is true for an upper bound, false for a lower bound.
	AtMost bool
	// Value is the bound.
	Value float64
}

// targets are the figures the issues ask for. A metric with no target is reported as measured.
var targets = []Target{
	{"BenchmarkConvergence/workers=1", "x-peer", "myapp convergence time / a seed-style reconciler's, default flags, 1 worker, the API server far from saturated (issue 15)", true, 1.0},
	{"BenchmarkConvergence/workers=1", "controller-writes/myapp", "myapp object writes per MyApp until convergence, 1 worker(s) (issues 3, 15)", true, 4},
	{"BenchmarkConvergence/workers=1", "controller-writes-after", "myapp object writes in the window after convergence, 1 worker(s) (issue 15)", true, 0},
	{"BenchmarkConvergence/workers=4", "x-peer", "myapp convergence time / a seed-style reconciler's, default flags, 4 workers, the API server saturates 2 cores (issue 15)", true, 1.0},
	{"BenchmarkConvergence/workers=4", "controller-writes/myapp", "myapp object writes per MyApp until convergence, 4 worker(s) (issues 3, 15)", true, 4},
	{"BenchmarkConvergence/workers=4", "controller-writes-after", "myapp object writes in the window after convergence, 4 worker(s) (issue 15)", true, 0},
	{"BenchmarkConvergence/workers=8", "x-peer", "myapp convergence time / a seed-style reconciler's, default flags, 8 workers (issue 15)", true, 1.0},
	{"BenchmarkConvergence/workers=8", "controller-writes/myapp", "myapp object writes per MyApp until convergence, 8 worker(s) (issues 3, 15)", true, 4},
	{"BenchmarkConvergence/workers=8", "controller-writes-after", "myapp object writes in the window after convergence, 8 worker(s) (issue 15)", true, 0},
	{"BenchmarkConvergence/workers=1", "steady-writes", "writes in a steady window with periodic resyncs of every MyApp (issue 3)", true, 0},
	{"BenchmarkOneUpdateReconcilesOne", "reconciles/update", "VerticalScalers reconciled by one Deployment update among 10,000 (issue 5)", true, 1},
	{"BenchmarkMapFunction/scalers=10000", "ns/op", "verticalscaler map function per Deployment event at 10,000 VerticalScalers (issue 5)", true, 50000},
	{"BenchmarkMemoryAndLatency/objects=10000", "VmRSS-MiB", "configmapwatcher manager resident memory, settled (idle past the Go runtime's periodic GC), 10,000 ConfigMaps and 10,000 Secrets of 2 KiB, 500 opted-in Deployments, StatefulSets and DaemonSets (issues 6, 16)", true, 50},
	{"BenchmarkMemoryAndLatency/objects=10000", "KiB/extra-object", "configmapwatcher manager anonymous memory per extra ConfigMap or Secret, 2,000 + 2,000 to 10,000 + 10,000 (issues 6, 16)", true, 1},
	{"BenchmarkMemoryAndLatency/objects=10000", "p90-ms", "ConfigMap update to Pod template change, single changes, p90 of 50, default debounce (issues 6, 16)", true, 50},
	{"BenchmarkMemoryAndLatency/objects=10000", "install-rolls", "rollouts when the manager starts over 500 opted-in workloads it has never seen (issue 16)", true, 0},
	{"BenchmarkMemoryAndLatency/objects=10000", "creation-rolls", "rollouts when 50 opted-in workloads are created while it runs (issue 16)", true, 0},
	{"BenchmarkMemoryAndLatency/objects=10000", "restart-rolls", "rollouts when the manager restarts with nothing changed (issue 16)", true, 0},
	{"BenchmarkMemoryAndLatency/objects=10000", "label-rolls", "rollouts when only the labels of a ConfigMap and a Secret of 50 workloads change (issue 16)", true, 0},
	{"BenchmarkMemoryAndLatency/objects=10000", "max-rolls/burst", "most rollouts of one workload whose three sources changed one right after the other, 10 bursts (issue 16)", true, 1},
	{"BenchmarkMemoryAndLatency/objects=10000", "min-rolls/burst", "fewest rollouts of one workload whose three sources changed one right after the other, 10 bursts (issue 16)", false, 1},
	{"BenchmarkAutoReloadAll", "install-rolls", "configmapwatcher --auto-reload-all over 500 workloads that never opted in: rollouts when the manager starts (issue 29)", true, 0},
	{"BenchmarkAutoReloadAll", "wrong-rolls", "configmapwatcher --auto-reload-all, 5 shared ConfigMaps changed one at a time: workloads rolled that do not use the ConfigMap or opted out, plus users not rolled (issue 29)", true, 0},
	{"BenchmarkRateLimit", "max-per-minute", "configmapwatcher --max-rollouts-per-minute=40, one ConfigMap used by 100 Deployments changed: most rolls seen in any 60 s (issue 29)", true, 40},
	{"BenchmarkRateLimit", "missing-rolls", "configmapwatcher --max-rollouts-per-minute=40: Deployments of the 100 that never rolled (issue 29)", true, 0},
	{"BenchmarkRateLimit", "max-rolls/workload", "configmapwatcher --max-rollouts-per-minute=40: most rolls of one Deployment for one change (issue 29)", true, 1},
	{"BenchmarkSharedDeploymentsSteadyState", "steady-writes", "writes in a minute after a forced resync, three controllers on 20 shared Deployments (issue 8)", true, 0},
	{"BenchmarkCheckpointWrites", "writes/scaler/interval", "verticalscaler checkpoint writes per VerticalScaler per --checkpoint-interval (10m), mean over a simulated hour, 10,000 VerticalScalers (issue 17)", true, 1},
	{"BenchmarkCheckpointWrites", "max-writes/scaler/interval", "verticalscaler checkpoint writes of one VerticalScaler within any --checkpoint-interval, the most over a simulated hour, 10,000 VerticalScalers (issue 17)", true, 1},
	{"BenchmarkRecommenderMemory", "KiB/container", "verticalscaler recommender memory per tracked container, histograms and per-Pod state included, 10,000 VerticalScalers x 2 containers x 2 Pods after a day of reads (issue 17)", true, 2},
	{"BenchmarkReplicas/scope=controller", "takeover-s", "SIGKILL of the myapp leader to the first myapp reconcile on another of 3 replicas, a Lease per controller, warm standby, lease duration 4 s, 1,000 MyApps and VerticalScalers: at most the lease duration and 2 s (issue 18)", true, 6},
	{"BenchmarkBadInput", "myapp-p50-x-without", "median time from a new MyApp to its status observing it, beside 1,000 malformed objects changed all along / without them, in one run (issue 30)", true, 1.10},
	{"BenchmarkBadInput", "myapp-p90-x-without", "p90 of the same, beside the malformed objects / without them (issue 30)", true, 1.10},
	{"BenchmarkBadInput", "roll-p50-x-without", "median time from a ConfigMap change to its Deployment's new config hash, beside 1,000 malformed objects / without them (issue 30)", true, 1.10},
	{"BenchmarkBadInput", "roll-p90-x-without", "p90 of the same, beside the malformed objects / without them (issue 30)", true, 1.10},
	{"BenchmarkBadInput", "myapp-p50-x-twins", "median MyApp time beside 1,000 malformed objects / beside as many well-formed twins changed alike: the cost of being malformed (issue 30)", true, 1.10},
	{"BenchmarkBadInput", "roll-p50-x-twins", "median roll time beside 1,000 malformed objects / beside their well-formed twins (issue 30)", true, 1.10},
	{"BenchmarkBadInput", "max-events/change", "most warning Events of one malformed object per change of it, periodic resyncs every 15 s included (issue 30)", true, 1},
	{"BenchmarkBadInput", "max-extra-reconciles", "most reconciles of one malformed object beyond its changes, the periodic resyncs and a taken name's retry a minute (issue 30)", true, 0},
	{"BenchmarkScaleMyApp/myapps=30000/controller=myapp", "x-ms/myapp-vs-smallest", "myapp convergence time per MyApp at 30,000 MyApps / at 1,000, from the manager's start, each on a fresh control plane: linear (issue 31)", true, 1.1},
	{"BenchmarkScaleMyApp/myapps=30000/controller=myapp", "x-heap-live/myapp-vs-smallest", "myapp settled live heap per MyApp (with its Deployment and Service) at 30,000 / at 1,000: linear (issue 31)", true, 1.1},
	{"BenchmarkScaleMyApp/myapps=1000/controller=myapp", "x-seed-heap-live/myapp", "myapp settled live heap per MyApp with its children / the seed-style reconciler's, 1,000 MyApps (issue 31)", true, 0.5},
	{"BenchmarkScaleMyApp/myapps=10000/controller=myapp", "x-seed-heap-live/myapp", "myapp settled live heap per MyApp with its children / the seed-style reconciler's, 10,000 MyApps (issue 31)", true, 0.5},
	{"BenchmarkScaleMyApp/myapps=30000/controller=myapp", "x-seed-heap-live/myapp", "myapp settled live heap per MyApp with its children / the seed-style reconciler's, 30,000 MyApps (issue 31)", true, 0.5},
	{"BenchmarkScaleMyApp/myapps=30000/controller=myapp", "restart-writes", "writes while a restarted manager reconciles 30,000 converged MyApps once (issue 31)", true, 0},
	{"BenchmarkScaleConfigMapWatcher/workloads=30000", "x-heap-live/workload-vs-smallest", "configmapwatcher settled live heap per opted-in workload at 30,000 / at 1,000 (issue 31)", true, 1.1},
	{"BenchmarkScaleConfigMapWatcher/workloads=30000", "restart-writes", "writes while a restarted manager reconciles 30,000 recorded workloads once (issue 31)", true, 0},
	{"BenchmarkScaleVerticalScaler/scalers=10000", "x-heap-live/scaler-vs-smallest", "verticalscaler settled live heap per VerticalScaler (with its Deployment) at 10,000 / at 1,000 (issue 31)", true, 1.1},
	{"BenchmarkScaleVerticalScaler/scalers=10000", "restart-writes", "writes while a restarted manager reconciles 10,000 VerticalScalers once (issue 31)", true, 0},
	{"BenchmarkDynamicShards", "heap-vs-share-max-2-replicas", "dynamic shards, 2 replicas over 30,000 MyApps in 300 namespaces: the largest replica's live heap growth / half of one replica's (issue 43)", true, 1.1},
	{"BenchmarkDynamicShards", "heap-vs-share-max-3-replicas", "dynamic shards, 3 replicas: the largest replica's live heap growth / a third of one replica's (issue 43)", true, 1.1},
	{"BenchmarkDynamicShards", "myapps-max-vs-min-3-replicas", "dynamic shards, 3 replicas: most MyApps held by a replica / fewest, by their Leases' claims (issue 43)", true, 1.2},
	{"BenchmarkDynamicShards", "double-claims", "dynamic shards: overlapping claims of two live replicas, sampled every 100 ms through joins and a kill (issue 43)", true, 0},
	{"BenchmarkShards", "shard-memory-deviation", "label shards: each shard's live heap growth against its own objects (shard2 holds twice shard1's, the unlabelled shard as many), the larger relative error (issue 31)", true, 0.1},
	{"BenchmarkSummary", "cpu-MB/s", "manager logs summary throughput per CPU-second, one core, generated log (issue 7)", false, 300},
	{"BenchmarkImage", "x-binary", "compressed image a node pulls for linux/amd64 (manifest, configuration, layer) / the stripped manager binary, make image (issue 26)", true, 1.05},
	{"BenchmarkSummary", "peak-MiB", "manager logs summary peak RSS of a process running the analyzer alone (the manager binary adds its own pages: see issue 7 notes)", true, 50},
}

// Row is one line of the report.
type Row struct {
	Benchmark string    `json:"benchmark"`
	Unit      string    `json:"unit"`
	Scenario  string    `json:"scenario,omitempty"`
	Median    float64   `json:"median"`
	Runs      []float64 `json:"runs"`
	Target    string    `json:"target,omitempty"`
	Status    string    `json:"status"`
	// NotFinite counts the runs whose value was NaN or infinite: a benchmark bug, left out of
	// Runs and Median.
	NotFinite int `json:"notFinite,omitempty"`
}

// Report is the whole report.
type Report struct {
	Date    string            `json:"date"`
	Machine map[string]string `json:"machine"`
	Rows    []Row             `json:"rows"`
}

func main() {
	out := flag.String("out", "bench", "directory to write report.md and report.json into")
	flag.Parse()
	rows, failed, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	report := Report{Date: time.Now().UTC().Format(time.RFC3339), Machine: machine(), Rows: rows}
	if err := write(*out, report); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	fmt.Print(markdown(report))
	if failed {
		fmt.Fprintln(os.Stderr, "benchreport: a benchmark failed (see its output above)")
		os.Exit(1)
	}
	for _, r := range rows {
		if r.NotFinite > 0 {
			fmt.Fprintf(os.Stderr, "benchreport: %s %s: %d runs not finite\n", r.Benchmark, r.Unit, r.NotFinite)
			os.Exit(1)
		}
	}
}

// parse reads benchmark result lines ("BenchmarkX-2  1  123 ns/op  4.0 writes/myapp") and
// returns one row per benchmark and unit, and whether any package failed.
func parse(r io.Reader) ([]Row, bool, error) {
	runs := map[[2]string][]float64{}
	notFinite := map[[2]string]int{}
	var order [][2]string
	failed := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		// go test prints a benchmark's name before running it, so a failing run reads
		// "BenchmarkX-2  --- FAIL: BenchmarkX", with no figures.
		if strings.HasPrefix(line, "FAIL") || strings.Contains(line, "--- FAIL") {
			failed = true
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue // not a result line
		}
		name := trimProcs(fields[0])
		// fields[1] is the iteration count; then value/unit pairs.
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, failed, fmt.Errorf("reading %q: %w", line, err)
			}
			key := [2]string{name, fields[i+1]}
			if _, seen := runs[key]; !seen {
				order = append(order, key)
				runs[key] = nil
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				notFinite[key]++
				continue
			}
			runs[key] = append(runs[key], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, failed, err
	}
	rows := make([]Row, 0, len(order))
	for _, key := range order {
		r := row(key[0], key[1], runs[key])
		r.NotFinite = notFinite[key]
		rows = append(rows, r)
	}
	return rows, failed, nil
}

// trimProcs removes the -GOMAXPROCS suffix go test adds to benchmark names.
func trimProcs(name string) string {
	if i := strings.LastIndex(name, "-"); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

func row(benchmark, unit string, runs []float64) Row {
	r := Row{Benchmark: benchmark, Unit: unit, Runs: runs, Status: "measured"}
	if len(runs) == 0 {
		r.Status = "no result"
		return r
	}
	r.Median = median(runs)
	for _, t := range targets {
		if t.Benchmark != benchmark || t.Unit != unit {
			continue
		}
		r.Scenario = t.Scenario
		if t.AtMost {
			r.Target = fmt.Sprintf("<= %g", t.Value)
			r.Status = passOrShort(r.Median <= t.Value)
		} else {
			r.Target = fmt.Sprintf(">= %g", t.Value)
			r.Status = passOrShort(r.Median >= t.Value)
		}
	}
	return r
}

func passOrShort(ok bool) string {
	if ok {
		return "pass"
	}
	return "short"
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// machine describes where the figures were measured: absolute times depend on it.
func machine() map[string]string {
	m := map[string]string{
		"cores": strconv.Itoa(runtime.NumCPU()),
		"go":    runtime.Version(),
		"os":    runtime.GOOS + "/" + runtime.GOARCH,
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				m["cpu"] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	for mod, key := range map[string]string{"sigs.k8s.io/controller-runtime": "controller-runtime", "k8s.io/client-go": "client-go"} {
		if v := requiredVersion("go.mod", mod); v != "" {
			m[key] = v
		}
	}
	if v := requiredVersion(filepath.Join("hack", "tools", "kube", "go.mod"), "k8s.io/kubernetes"); v != "" {
		m["kube-apiserver"] = v
	}
	return m
}

// requiredVersion finds the version of mod in a go.mod's require lines.
func requiredVersion(gomod, mod string) string {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fields) >= 2 && fields[0] == mod {
			return fields[1]
		}
	}
	return ""
}

func write(dir string, report Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(markdown(report)), 0o644)
}

func markdown(report Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmark report\n\nMeasured %s on %s cores (%s), %s; controller-runtime %s, kube-apiserver %s.\n",
		report.Date, report.Machine["cores"], report.Machine["cpu"], report.Machine["go"],
		report.Machine["controller-runtime"], report.Machine["kube-apiserver"])
	b.WriteString("Absolute times depend on this machine; ratios are measured against a baseline in the same run.\n\n")
	b.WriteString("| benchmark | metric | median | runs | target | status | scenario |\n|---|---|---|---|---|---|---|\n")
	for _, r := range report.Rows {
		runs := strconv.Itoa(len(r.Runs))
		if r.NotFinite > 0 {
			runs += fmt.Sprintf(" (+%d not finite, left out)", r.NotFinite)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Benchmark, r.Unit, strconv.FormatFloat(r.Median, 'g', 4, 64),
			runs, orDash(r.Target), r.Status, r.Scenario)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
