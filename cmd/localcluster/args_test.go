package main

import (
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestManagerArgsUserFlagsComeLast(t *testing.T) {
	got := managerArgs("/d/kubeconfig", []string{"--controllers=myapp", "--health-probe-bind-address=:9081"})
	want := []string{
		"--kubeconfig=/d/kubeconfig",
		"--health-probe-bind-address=127.0.0.1:8081",
		"--metrics-bind-address=127.0.0.1:8443",
		"--controllers=myapp",
		"--health-probe-bind-address=:9081",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("manager args (-want +got):\n%s", diff)
	}
	if v, _ := lastFlagValue(got, "health-probe-bind-address"); v != ":9081" {
		t.Errorf("effective --health-probe-bind-address %q, want the user's :9081", v)
	}
}

func TestLastFlagValue(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		want      string
		wantFound bool
	}{
		{name: "absent", args: []string{"--controllers=myapp"}},
		{name: "double dash with =", args: []string{"--m=1"}, want: "1", wantFound: true},
		{name: "single dash with =", args: []string{"-m=1"}, want: "1", wantFound: true},
		{name: "separate value", args: []string{"--m", "1"}, want: "1", wantFound: true},
		{name: "last wins", args: []string{"--m=1", "-m", "2", "--x=3"}, want: "2", wantFound: true},
		{name: "a prefix is another flag", args: []string{"--mm=1"}},
		{name: "stops at --", args: []string{"--m=1", "--", "--m=2"}, want: "1", wantFound: true},
		{name: "stops at a non-flag argument", args: []string{"extra", "--m=2"}},
		{name: "no value at the end", args: []string{"--m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found := lastFlagValue(tt.args, "m")
			if got != tt.want || found != tt.wantFound {
				t.Errorf("lastFlagValue(%q) = %q, %v; want %q, %v", tt.args, got, found, tt.want, tt.wantFound)
			}
		})
	}
}

func TestCheckManagerPorts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().String()

	err = checkManagerPorts([]string{"--health-probe-bind-address=" + taken, "--metrics-bind-address=0"})
	if err == nil || !strings.Contains(err.Error(), "--health-probe-bind-address="+taken+" cannot be used") || !strings.Contains(err.Error(), "ARGS=") {
		t.Errorf("error %v, want one naming the flag, the address and how to pass another", err)
	}
	if err := checkManagerPorts([]string{"--health-probe-bind-address=127.0.0.1:0", "--metrics-bind-address=0"}); err != nil {
		t.Errorf("free port and metrics off: %v", err)
	}
	if err := checkManagerPorts([]string{"--metrics-bind-address=" + taken, "--metrics-bind-address=0"}); err != nil {
		t.Errorf("a taken port overridden by a later flag: %v", err)
	}
}
