package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/example/switchboard/internal/faultproxy"
	"github.com/example/switchboard/internal/testenv"
	"github.com/example/switchboard/test/reliability/faults"
)

// replicas runs the manager's replicas, each process behind a chain of its own: a replica
// killed and started again is a new process with a new chain ("r1.2" is replica 1's second
// process), so that every write on record names the process that sent it.
type replicas struct {
	t        *testing.T
	binary   string
	args     []string
	upstream *rest.Config
	toxi     *faults.Toxiproxy
	dir      string
	seed     uint64
	started  time.Time

	mu       sync.Mutex
	faults   faultproxy.Faults
	current  []*process // per replica, its live process (nil while down)
	all      []*process
	restarts []int
}

// process is one process of a replica and its chain.
type process struct {
	name    string
	replica int
	chain   *faults.Chain
	proc    *testenv.Process
	// killed is set when the test killed it: any other exit is a crash.
	killed bool
}

func newReplicas(t *testing.T, n int, binary string, args []string, upstream *rest.Config, dir string, seed uint64) *replicas {
	r := &replicas{t: t, binary: binary, args: args, upstream: upstream, toxi: faults.NewToxiproxy(), dir: dir, seed: seed,
		current: make([]*process, n), restarts: make([]int, n), started: time.Now()}
	t.Cleanup(r.stopAll)
	return r
}

// start starts replica i's next process, with the faults on now.
func (r *replicas) start(i int) (*process, error) {
	r.mu.Lock()
	r.restarts[i]++
	name := fmt.Sprintf("r%d.%d", i, r.restarts[i])
	seed, f := r.seed+uint64(len(r.all))*7919, r.faults
	r.mu.Unlock()
	chain, err := r.toxi.NewChain(name, r.upstream, seed)
	if err != nil {
		return nil, err
	}
	if err := chain.HTTP.SetFaults(f); err != nil {
		chain.Close()
		return nil, err
	}
	kubeconfig := filepath.Join(r.dir, name+".kubeconfig")
	if err := chain.WriteKubeconfig(kubeconfig, testenv.ManagerNamespace); err != nil {
		chain.Close()
		return nil, err
	}
	probes, metrics := testenv.FreeAddress(r.t), testenv.FreeAddress(r.t)
	args := append(append([]string{}, r.args...),
		"--kubeconfig="+kubeconfig, "--leader-election-namespace="+testenv.ManagerNamespace,
		"--health-probe-bind-address="+probes, "--metrics-bind-address="+metrics)
	proc, err := testenv.StartProcess(testenv.Command{Binary: r.binary, Args: args, ProbeAddress: probes, MetricsAddress: metrics})
	if err != nil {
		chain.Close()
		return nil, err
	}
	p := &process{name: name, replica: i, chain: chain, proc: proc}
	r.mu.Lock()
	r.current[i] = p
	r.all = append(r.all, p)
	r.mu.Unlock()
	return p, nil
}

// kill kills replica i's process with SIGKILL, as a crash of its node would.
func (r *replicas) kill(i int) (*process, error) {
	r.mu.Lock()
	p := r.current[i]
	if p != nil {
		p.killed = true
		r.current[i] = nil
	}
	r.mu.Unlock()
	if p == nil {
		return nil, nil
	}
	return p, p.proc.Kill()
}

// setFaults sets the HTTP faults of every live chain and of the chains started from now on.
func (r *replicas) setFaults(f faultproxy.Faults) error {
	r.mu.Lock()
	r.faults = f
	live := r.live()
	r.mu.Unlock()
	for _, p := range live {
		if err := p.chain.HTTP.SetFaults(f); err != nil {
			return err
		}
	}
	return nil
}

// live returns the live processes; r.mu held.
func (r *replicas) live() []*process {
	var out []*process
	for _, p := range r.current {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// Live returns the replicas' live processes.
func (r *replicas) Live() []*process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live()
}

// crashed returns the processes that exited without being killed, with their exit errors.
func (r *replicas) crashed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.all {
		if exited, err := p.proc.Exited(); exited && !p.killed {
			out = append(out, fmt.Sprintf("%s exited by itself (%v)", p.name, err))
		}
	}
	return out
}

// leaders returns, per controller, the live process that leads it (switchboard_controller_leader).
func (r *replicas) leaders(ctx context.Context) map[string]*process {
	out := map[string]*process{}
	for _, p := range r.Live() {
		leading, err := p.proc.MetricByLabel(ctx, "switchboard_controller_leader", "controller")
		if err != nil {
			continue
		}
		for controller, v := range leading {
			if v == 1 {
				out[controller] = p
			}
		}
	}
	return out
}

// writes returns every write the chains of every process forwarded.
func (r *replicas) writes() []faultproxy.Write {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []faultproxy.Write
	for _, p := range r.all {
		out = append(out, p.chain.HTTP.Writes()...)
	}
	return out
}

// stats adds up what every chain injected.
func (r *replicas) stats() (faultproxy.Stats, faults.TCPStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var h faultproxy.Stats
	var tcp faults.TCPStats
	for _, p := range r.all {
		h = h.Plus(p.chain.HTTP.Stats())
		ts := p.chain.TCPStats()
		tcp.Resets += ts.Resets
		tcp.Partitions += ts.Partitions
	}
	return h, tcp
}

// stopAll stops every process (SIGTERM, then SIGKILL) and chain, and saves each process's log.
func (r *replicas) stopAll() {
	r.mu.Lock()
	all := r.all
	r.mu.Unlock()
	for _, p := range all {
		if err := p.proc.Stop(30 * time.Second); err != nil {
			r.t.Errorf("%s: %v", p.name, err)
		}
		p.chain.Close()
		if err := p.proc.SaveLog(filepath.Join(r.dir, p.name+".log")); err != nil {
			r.t.Errorf("saving the log of %s: %v", p.name, err)
		}
	}
}

// reconciles reads every process's reconcile lines ("Reconcile finished", at debug level) and
// the lines that say it panicked.
func (r *replicas) reconciles() (out []Reconcile, panics []string) {
	r.mu.Lock()
	all := r.all
	r.mu.Unlock()
	for _, p := range all {
		scanner := bufio.NewScanner(strings.NewReader(p.proc.Output()))
		scanner.Buffer(make([]byte, 1<<20), 1<<24)
		for scanner.Scan() {
			line := scanner.Text()
			if strings.HasPrefix(line, "panic:") || strings.Contains(line, "Observed a panic") {
				panics = append(panics, p.name+": "+line)
			}
			if !strings.Contains(line, `"Reconcile finished"`) {
				continue
			}
			var l struct {
				TS         string `json:"ts"`
				Controller string `json:"controller"`
				Namespace  string `json:"namespace"`
				Name       string `json:"name"`
			}
			if json.Unmarshal([]byte(line), &l) != nil {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, l.TS)
			if err != nil {
				continue
			}
			out = append(out, Reconcile{Replica: p.name, Controller: l.Controller, Object: l.Namespace + "/" + l.Name, At: at})
		}
	}
	return out, panics
}

// began is when the replicas were first started.
func (r *replicas) began() time.Time { return r.started }

// startMissing starts the next process of every replica that is down.
func (r *replicas) startMissing() error {
	r.mu.Lock()
	var down []int
	for i, p := range r.current {
		if p == nil {
			down = append(down, i)
		}
	}
	r.mu.Unlock()
	for _, i := range down {
		if _, err := r.start(i); err != nil {
			return err
		}
	}
	return nil
}
