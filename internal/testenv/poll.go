package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Poll calls check every interval until it returns nil, failing the test with check's last
// error when timeout passes first.
func Poll(t testing.TB, timeout, interval time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %s: %v", timeout, err)
		}
		time.Sleep(interval)
	}
}

// FreeAddress returns a loopback address with a port free at the time of the call, chosen outside
// the kernel's ephemeral range (see LoopbackAddress).
func FreeAddress(t testing.TB) string {
	t.Helper()
	addr, err := LoopbackAddress()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// LoopbackAddress is FreeAddress for programs without a testing.T.
//
// The port is free when checked, and the process it is for binds it later. A port from the
// kernel's ephemeral range (what listening on port 0 gives) can be taken in between by any
// outgoing connection of the machine, which is how a chaos replica once failed with "address
// already in use". So the port is drawn at random from below that range, where only other
// listeners go, and checked free.
func LoopbackAddress() (string, error) {
	low, high := belowEphemeralPorts()
	for range 100 {
		port := low + rand.IntN(high-low)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		if err := l.Close(); err != nil {
			return "", err
		}
		return addr, nil
	}
	return "", fmt.Errorf("no free loopback port in [%d, %d) after 100 tries", low, high)
}

// belowEphemeralPorts returns the ports [low, high) under the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), or Linux's default one's when it cannot be read.
func belowEphemeralPorts() (low, high int) {
	high = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if fields := strings.Fields(string(b)); len(fields) == 2 {
			if n, err := strconv.Atoi(fields[0]); err == nil && n > 2048 {
				high = n
			}
		}
	}
	// 10,000 ports (fewer when the range starts low), above the well-known ones.
	return max(1024, high-10000), high
}
