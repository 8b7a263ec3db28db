package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// socketName is the runner's socket in the state directory, where the helm stand-in asks it to
// start and stop controllers.
const socketName = "supervisor.sock"

// startRequest asks the runner to run a release's controller.
type startRequest struct {
	Namespace  string      `json:"namespace"`
	Release    string      `json:"release"`
	Process    processSpec `json:"process"`
	Kubeconfig string      `json:"kubeconfig"`
	Objects    []objectRef `json:"objects"`
}

// releaseRequest names a release.
type releaseRequest struct {
	Namespace string `json:"namespace"`
	Release   string `json:"release"`
}

// supervisor runs the controllers of the releases the helm stand-in installs, as children of
// the runner, so that they stop with it whatever happens to the suite.
type supervisor struct {
	// binary is the controller's program: Switchboard's manager or Reloader.
	binary  string
	subject string
	logDir  string
	// extraArgs are appended to Switchboard's manager's arguments (--manager-args).
	extraArgs []string

	mu       sync.Mutex
	releases map[releaseRequest]*running
	started  int
}

// running is a release's controller and what the release applied.
type running struct {
	cmd     *exec.Cmd
	done    chan struct{}
	log     string
	objects []objectRef
}

// serve answers the stand-in on the socket until ctx ends.
func (s *supervisor) serve(ctx context.Context, socket string) (func(), error) {
	_ = os.Remove(socket)
	l, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", socket, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /start", func(w http.ResponseWriter, r *http.Request) {
		var req startRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := s.start(r.Context(), req); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, r *http.Request) {
		s.handleRelease(w, r, false)
	})
	mux.HandleFunc("POST /forget", func(w http.ResponseWriter, r *http.Request) {
		s.handleRelease(w, r, true)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return func() {
		_ = srv.Shutdown(ctx)
		s.stopAll()
	}, nil
}

func (s *supervisor) handleRelease(w http.ResponseWriter, r *http.Request, forget bool) {
	var req releaseRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	objects := s.stop(req, forget)
	_ = json.NewEncoder(w).Encode(objects)
}

// start runs a release's controller and returns once it is ready, or with the end of its log
// when it exits or does not get ready in time.
func (s *supervisor) start(ctx context.Context, req startRequest) error {
	args, ready, err := s.adapt(req.Process.Args, req.Namespace)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.started++
	logPath := filepath.Join(s.logDir, fmt.Sprintf("%03d-%s-%s.log", s.started, req.Namespace, req.Release))
	s.mu.Unlock()
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.binary, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "KUBECONFIG=" + req.Kubeconfig}, req.Process.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(logFile, "# %s %s\n# env: %s\n", s.binary, strings.Join(args, " "), strings.Join(req.Process.Env, " "))
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", s.binary, err)
	}
	r := &running{cmd: cmd, done: make(chan struct{}), log: logPath, objects: req.Objects}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(r.done)
	}()
	s.mu.Lock()
	if s.releases == nil {
		s.releases = map[releaseRequest]*running{}
	}
	s.releases[releaseRequest{Namespace: req.Namespace, Release: req.Release}] = r
	s.mu.Unlock()
	return waitReady(ctx, ready, r)
}

// adapt gives the controller free loopback ports where its chart gives it fixed ones (several
// run on one machine) and, for Switchboard's, the namespace of its Leases, which a Pod reads
// from its ServiceAccount's files; it returns the URL that answers once the controller is
// ready. Reloader's port cannot be set (:9090, constants.DefaultHttpListenAddr): the suites run
// one at a time.
func (s *supervisor) adapt(args []string, namespace string) ([]string, string, error) {
	if s.subject != subjectSwitchboard {
		return args, "http://127.0.0.1:9090/metrics", nil
	}
	out := make([]string, 0, len(args))
	ready := ""
	for _, arg := range args {
		switch {
		case strings.HasPrefix(arg, "--health-probe-bind-address="):
			port, err := freePort()
			if err != nil {
				return nil, "", err
			}
			arg = fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", port)
			ready = fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
		case strings.HasPrefix(arg, "--metrics-bind-address=") && arg != "--metrics-bind-address=0":
			port, err := freePort()
			if err != nil {
				return nil, "", err
			}
			arg = fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port)
		}
		out = append(out, arg)
	}
	if ready == "" {
		return nil, "", errors.New("the chart gives the manager no --health-probe-bind-address: nothing tells when it is ready")
	}
	if !slices.ContainsFunc(out, func(a string) bool { return strings.HasPrefix(a, "--leader-election-namespace") }) {
		out = append(out, "--leader-election-namespace="+namespace)
	}
	return append(out, s.extraArgs...), ready, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls url until it answers 200, the process exits, or ctx ends.
func waitReady(ctx context.Context, url string, r *running) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.done:
			return fmt.Errorf("the controller exited before it was ready; the end of its log (%s):\n%s", r.log, tail(r.log))
		case <-ctx.Done():
			return fmt.Errorf("the controller was not ready in time; the end of its log (%s):\n%s", r.log, tail(r.log))
		case <-tick.C:
			resp, err := http.Get(url) //nolint:noctx // a loopback probe, bounded by the client's default transport and the ticker
			if err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
	}
}

// tail is the end of a log file.
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// stop stops a release's controller, and with forget drops the release and returns what it
// applied.
func (s *supervisor) stop(req releaseRequest, forget bool) []objectRef {
	s.mu.Lock()
	r := s.releases[req]
	if forget {
		delete(s.releases, req)
	}
	s.mu.Unlock()
	if r == nil {
		return nil
	}
	terminate(r)
	return r.objects
}

// terminate stops a controller as the kubelet stops a container: SIGTERM, then SIGKILL after
// a grace period.
func terminate(r *running) {
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
	}
}

func (s *supervisor) stopAll() {
	s.mu.Lock()
	all := s.releases
	s.releases = nil
	s.mu.Unlock()
	for _, r := range all {
		terminate(r)
	}
}

// supervisorClient is the stand-in's side of the socket.
type supervisorClient struct{ socket string }

func (c supervisorClient) post(ctx context.Context, path string, body any, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	httpClient := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", c.socket)
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://supervisor"+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("asking the runner (%s) to %s: %w", c.socket, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", path, msg)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

func (c supervisorClient) start(ctx context.Context, req startRequest) error {
	return c.post(ctx, "/start", req, nil)
}

func (c supervisorClient) stop(ctx context.Context, namespace, release string) error {
	return c.post(ctx, "/stop", releaseRequest{Namespace: namespace, Release: release}, nil)
}

func (c supervisorClient) forget(ctx context.Context, namespace, release string) ([]objectRef, error) {
	var refs []objectRef
	err := c.post(ctx, "/forget", releaseRequest{Namespace: namespace, Release: release}, &refs)
	return refs, err
}
