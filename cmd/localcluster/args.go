package main

import (
	"fmt"
	"net"
	"strings"
)

// The manager's listeners on the local cluster: loopback only, on the manager's default ports.
const (
	defaultHealthProbeAddress = "127.0.0.1:8081"
	defaultMetricsAddress     = "127.0.0.1:8443"
)

// managerArgs are the manager's flags on the local cluster; the user's come last, so that they
// win (the flag package keeps the last value of a flag).
func managerArgs(kubeconfig string, user []string) []string {
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--health-probe-bind-address=" + defaultHealthProbeAddress,
		"--metrics-bind-address=" + defaultMetricsAddress,
	}
	return append(args, user...)
}

// checkManagerPorts reports a listen address of the manager that is taken, before the cluster
// starts, rather than leaving the manager to fail once everything else runs.
func checkManagerPorts(args []string) error {
	for _, name := range []string{"health-probe-bind-address", "metrics-bind-address"} {
		addr, ok := lastFlagValue(args, name)
		if !ok || addr == "0" {
			continue
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("the manager's --%s=%s cannot be used: %w; stop what listens there or pass another address, for example ARGS='--%s=127.0.0.1:0'", name, addr, err, name)
		}
		if err := l.Close(); err != nil {
			return fmt.Errorf("checking --%s=%s: %w", name, addr, err)
		}
	}
	return nil
}

// lastFlagValue returns the value the flag package would give flag name in args: the last of
// -name=v, --name=v, -name v and --name v, up to the first non-flag argument or "--".
func lastFlagValue(args []string, name string) (string, bool) {
	value, found := "", false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" || !strings.HasPrefix(arg, "-") || arg == "-" {
			break
		}
		flagName, v, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-"), "=")
		if flagName != name {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				break
			}
			i++
			v = args[i]
		}
		value, found = v, true
	}
	return value, found
}
