package controllers

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The roles a readiness check reports for its controller.
const (
	// RoleLeading: this replica runs the controller's workers.
	RoleLeading = "leading"
	// RoleStandby: another replica runs them; this one keeps the caches synced to take over.
	RoleStandby = "standby, caches synced"
	// RoleRunning: no leader election, every replica runs the controller.
	RoleRunning = "running, no leader election"
	// RoleIdle starts the role of a controller that has nothing to do here (an optional kind
	// the API server does not serve); the reason follows.
	RoleIdle = "idle: "
)

// idleChecks returns a readiness check per idle controller: always ready, its role saying why
// it is idle.
func idleChecks(idle map[string]string) []readyCheck {
	var checks []readyCheck
	for name, reason := range idle {
		checks = append(checks, readyCheck{name: name, check: func(*http.Request) error { return nil }, role: func() string { return RoleIdle + reason }})
	}
	return checks
}

// readyCheck is one controller's readiness: whether its caches have synced, and what this
// replica does with it.
type readyCheck struct {
	name  string
	check healthz.Checker
	role  func() string
}

// addProbes serves /healthz and /readyz on addr, as controller-runtime's probe server does, with
// one difference: each controller's readiness line says whether this replica leads it, which a
// controller-runtime check cannot (its name and "ok" are all it prints). `/readyz?verbose`
// answers "[+]myapp ok: leading" or "[+]myapp ok: standby, caches synced", and `/readyz/myapp`
// "ok: leading"; a standby is ready too, once its caches have synced. "0" or "" serves nothing.
func addProbes(mgr ctrl.Manager, addr string, checks []readyCheck) error {
	if addr == "" || addr == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening for health probes on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	live := &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}
	ready := &readyzHandler{checks: slices.SortedFunc(slices.Values(checks), func(a, b readyCheck) int { return strings.Compare(a.name, b.name) })}
	mux.Handle("/healthz", http.StripPrefix("/healthz", live))
	mux.Handle("/healthz/", http.StripPrefix("/healthz", live))
	mux.Handle("/readyz", http.StripPrefix("/readyz", ready))
	mux.Handle("/readyz/", http.StripPrefix("/readyz", ready))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 32 * time.Second, IdleTimeout: 90 * time.Second}
	if err := mgr.Add(&manager.Server{Name: "health probe", Server: srv, Listener: ln}); err != nil {
		ln.Close()
		return fmt.Errorf("adding the health probe server: %w", err)
	}
	return nil
}

// readyzHandler is controller-runtime's healthz.Handler with each passing check's role.
type readyzHandler struct {
	checks []readyCheck
}

func (h *readyzHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.Trim(r.URL.Path, "/")
	if name != "" {
		h.serveOne(w, r, name)
		return
	}
	excluded := r.URL.Query()["exclude"]
	var lines []string
	failed := false
	for _, c := range h.checks {
		switch {
		case slices.Contains(excluded, c.name):
			lines = append(lines, fmt.Sprintf("[+]%s excluded: ok", c.name))
		case c.check(r) != nil:
			failed = true
			lines = append(lines, fmt.Sprintf("[-]%s failed: reason withheld", c.name))
		default:
			lines = append(lines, fmt.Sprintf("[+]%s ok: %s", c.name, c.role()))
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
	}
	if _, verbose := r.URL.Query()["verbose"]; !failed && !verbose {
		fmt.Fprint(w, "ok")
		return
	}
	for _, line := range lines {
		fmt.Fprintln(w, line)
	}
	if failed {
		fmt.Fprintln(w, "readyz check failed")
	} else {
		fmt.Fprintln(w, "readyz check passed")
	}
}

// serveOne answers /readyz/NAME: "ok: ROLE", or 500 with the reason.
func (h *readyzHandler) serveOne(w http.ResponseWriter, r *http.Request, name string) {
	i := slices.IndexFunc(h.checks, func(c readyCheck) bool { return c.name == name })
	if i < 0 {
		http.NotFound(w, r)
		return
	}
	if err := h.checks[i].check(r); err != nil {
		http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "ok: %s", h.checks[i].role())
}
