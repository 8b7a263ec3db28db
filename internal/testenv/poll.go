package testenv

import (
	"net"
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

// FreeAddress returns a loopback address with a port free at the time of the call.
func FreeAddress(t testing.TB) string {
	t.Helper()
	addr, err := LoopbackAddress()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// LoopbackAddress is FreeAddress for programs without a testing.T.
func LoopbackAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
