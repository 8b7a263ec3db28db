package testenv

import (
	"net"
	"strconv"
	"testing"
)

// TestLoopbackAddressIsOutsideTheEphemeralRange checks that the ports handed out cannot be taken
// by an outgoing connection before the process they are for binds them.
func TestLoopbackAddressIsOutsideTheEphemeralRange(t *testing.T) {
	low, high := belowEphemeralPorts()
	for range 20 {
		addr, err := LoopbackAddress()
		if err != nil {
			t.Fatal(err)
		}
		_, portText, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, err := strconv.Atoi(portText)
		if err != nil {
			t.Fatal(err)
		}
		if port < low || port >= high {
			t.Errorf("LoopbackAddress() = %s, want a port in [%d, %d)", addr, low, high)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("the address handed out is not free: %v", err)
		}
		l.Close()
	}
}
