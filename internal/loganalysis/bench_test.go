package loganalysis

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/example/switchboard/internal/loganalysis/loggen"
)

// TestMain lets the test binary run `manager logs` and nothing else when
// SWITCHBOARD_LOGS_MAIN=1, so that BenchmarkSummary measures the peak memory of such a process.
func TestMain(m *testing.M) {
	if os.Getenv("SWITCHBOARD_LOGS_MAIN") == "1" {
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// benchLogBytes is the size of BenchmarkSummary's log: SWITCHBOARD_BENCH_LOG_BYTES, else 8 MiB
// when SWITCHBOARD_BENCH_SMOKE is set, else 1 GiB (what issue 7's target is about).
func benchLogBytes(b *testing.B) int64 {
	if v := os.Getenv("SWITCHBOARD_BENCH_LOG_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("SWITCHBOARD_BENCH_LOG_BYTES=%q: want a positive byte count", v)
		}
		return n
	}
	if os.Getenv("SWITCHBOARD_BENCH_SMOKE") != "" {
		return 8 << 20
	}
	return 1 << 30
}

// BenchmarkSummary runs `manager logs summary` on a generated debug-level log in a process of
// its own limited to one core (GOMAXPROCS=1), and reports MB/s and lines/s of log read, MB
// per CPU-second the process used (cpu-MB/s: the one-core throughput, which does not depend on
// how busy the machine is) and the process's peak resident memory (peak-MiB). Issue 7's
// targets and the latest results are in the README's Performance table, with this command.
func BenchmarkSummary(b *testing.B) {
	path := filepath.Join(b.TempDir(), "manager.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	truth, err := loggen.Write(w, benchLogBytes(b), 1)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		b.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}

	b.SetBytes(int64(truth.Bytes))
	var peak int64
	var cpu float64 // seconds
	for b.Loop() {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(exe, "summary", "--output", "json", path)
		cmd.Env = append(os.Environ(), "SWITCHBOARD_LOGS_MAIN=1", "GOMAXPROCS=1")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("manager logs summary: %v\n%s", err, stderr.String())
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, ru.Maxrss*1024) // kilobytes on Linux
		}
		cpu += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		var r Report
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || r.Lines.Read != truth.Lines {
			b.Fatalf("summary read %d lines (%v), loggen wrote %d", r.Lines.Read, err, truth.Lines)
		}
	}
	b.ReportMetric(float64(truth.Lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(truth.Bytes)*float64(b.N)/1e6/cpu, "cpu-MB/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
}
