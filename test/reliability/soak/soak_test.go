package soak

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/example/switchboard/internal/faultproxy"
	"github.com/example/switchboard/internal/testenv"
	"github.com/example/switchboard/test/reliability/churn"
	"github.com/example/switchboard/test/reliability/runinfo"
)

// The soak's settings: a sample every 10 s, a burst of churn every 30 s.
const (
	sampleEvery = 10 * time.Second
	burstEvery  = 30 * time.Second
	burstOps    = 10
)

// soakChurn is the population the soak keeps changing.
var soakChurn = churn.Config{ConfigMaps: 4, Secrets: 3, Readers: 8, Apps: 40, StableApps: 10, ScaledEvery: 4, Seed: 1}

// TestSoak runs one replica of the manager, as config/default deploys it, on the local cluster
// for SWITCHBOARD_SOAK_DURATION (1h by default) under a burst of churn every 30 s, samples it
// every 10 s, and writes report.md, soak.png and samples.csv to SWITCHBOARD_SOAK_OUT. The
// manager talks to the API server through a fault proxy that injects nothing: it counts the
// manager's requests and open watches. It fails when RSS or goroutines grow by 5% or more after
// the warm-up (10 minutes, or a third of a shorter run), or when the work queues do not empty
// between two bursts.
func TestSoak(t *testing.T) {
	if os.Getenv("SWITCHBOARD_SOAK") != "1" {
		t.Skip("the soak runs with `make soak DURATION=1h`")
	}
	runinfo.LogErrors()
	given := cmp.Or(os.Getenv("SWITCHBOARD_SOAK_DURATION"), "1h")
	duration, err := time.ParseDuration(given)
	if err != nil {
		t.Fatalf("SWITCHBOARD_SOAK_DURATION: %v", err)
	}
	out := os.Getenv("SWITCHBOARD_SOAK_OUT")
	if out == "" {
		out = t.TempDir()
	}
	warmup, window := min(10*time.Minute, duration/3), min(5*time.Minute, duration/6)
	ctx := context.Background()

	binary := testenv.BuildBinary(t, ".")
	c := testenv.StartLocalCluster(t, 2)
	args := c.Deploy(t, "default")
	_, serviceAccount := c.ServiceAccountKubeconfig(t)
	proxy, err := faultproxy.Start(faultproxy.Options{Name: "soak", Upstream: serviceAccount})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, proxy.ClientConfig(proxy.Address()), testenv.ManagerNamespace); err != nil {
		t.Fatal(err)
	}
	m := testenv.RunManager(t, binary, kubeconfig, args, "--metrics-secure=false")
	testenv.Poll(t, 2*time.Minute, time.Second, func() error { return alive(ctx, m) })

	ns := testenv.Namespace(t, c.Admin, "soak-")
	cfg := soakChurn
	cfg.Namespace = ns
	load := churn.New(c.Admin, cfg)
	if err := load.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	run := Run{
		Command: "make soak DURATION=" + given, Commit: runinfo.Commit(), Date: time.Now().UTC().Format(time.RFC3339),
		Churn: fmt.Sprintf("%d MyApps kept alive (%d never deleted; every other one takes a ConfigMap with envFrom, every %dth has a VerticalScaler, Auto for half of those), "+
			"%d opted-in Deployments taking one key of a ConfigMap and of a Secret, %d ConfigMaps, %d Secrets; a burst of %d operations every %s "+
			"(MyApps created, changed, deleted; ConfigMap and Secret keys and labels changed), usage from kwok's emulated day",
			cfg.Apps, cfg.StableApps, cfg.ScaledEvery, cfg.Readers, cfg.ConfigMaps, cfg.Secrets, burstOps, burstEvery),
	}
	run.LoadStart = runinfo.LoadAverage()
	run.LoadMin, run.LoadMax = run.LoadStart, run.LoadStart

	start := time.Now()
	var (
		mu      sync.Mutex
		samples []Sample
		bursts  []Burst
		deepest depth
	)
	stop := make(chan struct{})
	sampled := make(chan error, 1)
	go func() {
		sampled <- sample(ctx, m, proxy, start, stop, func(s Sample) {
			s.QueueDepth = deepest.take()
			mu.Lock()
			defer mu.Unlock()
			samples = append(samples, s)
			l := runinfo.LoadAverage()
			run.LoadMin, run.LoadMax = min(run.LoadMin, l), max(run.LoadMax, l)
		})
	}()
	queues := make(chan []queueReading, 1)
	go func() { queues <- readQueues(ctx, m, stop, &deepest) }()
	var began []time.Duration
	for next := time.Duration(0); next < duration; next += burstEvery {
		time.Sleep(time.Until(start.Add(next)))
		began = append(began, time.Since(start))
		for range burstOps {
			if err := load.Step(ctx); err != nil {
				t.Errorf("churn: %v", err)
			}
		}
	}
	time.Sleep(time.Until(start.Add(duration)))
	close(stop)
	if err := <-sampled; err != nil {
		t.Fatal(err)
	}
	readings := <-queues
	for i, at := range began {
		bursts = append(bursts, Burst{At: at, Operations: burstOps, Drained: drained(readings, start.Add(at), i == len(began)-1)})
	}
	run.LoadEnd, run.Ops = runinfo.LoadAverage(), load.Ops()

	summary, err := Summarize(samples, bursts, burstEvery, warmup, window)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFiles(out, run, summary, samples); err != nil {
		t.Fatal(err)
	}
	t.Logf("soak report written to %s", out)
	for _, f := range summary.Failures() {
		t.Error(f)
	}
}

// alive returns nil once the manager answers /readyz, and an error for good once it exited.
func alive(ctx context.Context, m *testenv.Process) error {
	if exited, err := m.Exited(); exited {
		return fmt.Errorf("the manager exited: %v", err)
	}
	return m.Ready(ctx)
}

// sample reads the manager every sampleEvery until stop is closed, handing each sample to add.
// It returns an error when the manager exits or cannot be read.
func sample(ctx context.Context, m *testenv.Process, proxy *faultproxy.Proxy, start time.Time, stop <-chan struct{}, add func(Sample)) error {
	ticker := time.NewTicker(sampleEvery)
	defer ticker.Stop()
	lastRequests, lastAt := proxy.Stats().Requests, time.Now()
	for {
		select {
		case <-stop:
			return nil
		case <-ticker.C:
		}
		if exited, err := m.Exited(); exited {
			return fmt.Errorf("the manager exited during the soak: %v", err)
		}
		status, err := m.Status("VmRSS")
		if err != nil {
			return err
		}
		families, err := m.Metrics(ctx)
		if err != nil {
			return err
		}
		stats, now := proxy.Stats(), time.Now()
		s := Sample{
			At: now.Sub(start), RSS: status["VmRSS"], Heap: families["go_memstats_heap_inuse_bytes"], Goroutines: families["go_goroutines"],
			OpenWatches: float64(stats.OpenWatches), RequestsPerSecond: float64(stats.Requests-lastRequests) / now.Sub(lastAt).Seconds(),
		}
		lastRequests, lastAt = stats.Requests, now
		add(s)
	}
}

// depth keeps the deepest reading of the work queues until a sample takes it.
type depth struct {
	mu      sync.Mutex
	deepest float64
}

func (d *depth) see(v float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deepest = max(d.deepest, v)
}

func (d *depth) take() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.deepest
	d.deepest = 0
	return v
}

// queueReading is one reading of the work queues: when, and whether every queue was empty and
// every worker idle.
type queueReading struct {
	at   time.Time
	idle bool
}

// readQueues reads the work queues every second until stop is closed, and returns the
// readings; every reading's depth goes to deepest. A failed reading counts as busy.
func readQueues(ctx context.Context, m *testenv.Process, stop <-chan struct{}, deepest *depth) []queueReading {
	var out []queueReading
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return out
		case <-ticker.C:
		}
		readings, err := m.ControllerMetrics(ctx)
		idle, total := err == nil, 0.0
		for _, r := range readings {
			total += r.Depth
			if r.Depth > 0 || r.Active > 0 {
				idle = false
			}
		}
		deepest.see(total)
		out = append(out, queueReading{at: time.Now(), idle: idle})
	}
}

// drained returns how long after a burst that began at began the work queues were first seen
// empty with every worker idle, at least a second after it began (its events have reached the
// queues by then); zero when they were not before the burst after next began (two intervals),
// or, for the last burst, before the readings ended.
func drained(readings []queueReading, began time.Time, last bool) time.Duration {
	deadline := began.Add(2 * burstEvery)
	for _, r := range readings {
		if r.at.Before(began.Add(time.Second)) {
			continue
		}
		if !last && r.at.After(deadline) {
			break
		}
		if r.idle {
			return r.at.Sub(began)
		}
	}
	return 0
}

func writeFiles(dir string, run Run, s Summary, samples []Sample) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string]func(*os.File) error{
		"samples.csv": func(f *os.File) error { return WriteCSV(f, samples) },
		"soak.png": func(f *os.File) error {
			title := fmt.Sprintf("Switchboard, one replica, %s of steady churn (%s)", strings.TrimPrefix(run.Command, "make soak DURATION="), run.Date[:10])
			return WritePNG(f, samples, title, s.Warmup.Minutes(), 8*vg.Inch, 11*vg.Inch)
		},
		"report.md": func(f *os.File) error { return WriteReport(f, run, s, "soak.png") },
	}
	for name, write := range files {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = write(f)
		if closeErr := f.Close(); err == nil {
			err = closeErr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
