package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/example/switchboard/internal/faultproxy"
)

func startChain(t *testing.T) (*Chain, *http.Client) {
	t.Helper()
	apiServer := faultproxy.StartFakeAPIServer()
	t.Cleanup(apiServer.Close)
	chain, err := NewToxiproxy().NewChain("replica-0", apiServer.Config(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(chain.Close)
	transport, err := rest.TransportFor(chain.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	return chain, &http.Client{Transport: transport}
}

func get(c *http.Client, cfg *rest.Config, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}

// eventuallyOK polls a GET until it succeeds: a client whose connection was closed under it
// may fail one request before it reconnects.
func eventuallyOK(t *testing.T, c *http.Client, cfg *rest.Config) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = get(c, cfg, "/api/v1/namespaces", time.Second); err == nil {
			return
		}
	}
	t.Fatalf("no answer through the chain after 10s: %v", err)
}

func TestPartitionHangsRequestsUntilHealed(t *testing.T) {
	chain, c := startChain(t)
	cfg := chain.ClientConfig()
	eventuallyOK(t, c, cfg)
	if err := chain.Partition(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := get(c, cfg, "/api/v1/namespaces", 500*time.Millisecond); err == nil {
		t.Fatal("a request went through the partition")
	}
	if waited := time.Since(began); waited < 400*time.Millisecond {
		t.Errorf("the request failed after %s, want it to hang until its timeout (500ms), as in a partition, not be refused", waited)
	}
	if err := chain.Heal(); err != nil {
		t.Fatal(err)
	}
	eventuallyOK(t, c, cfg)
	if got := chain.TCPStats(); got.Partitions != 1 || chain.Partitioned() {
		t.Errorf("TCP stats %+v, partitioned %v; want one partition, healed", got, chain.Partitioned())
	}
}

func TestResetBreaksOpenStreams(t *testing.T) {
	chain, c := startChain(t)
	cfg := chain.ClientConfig()
	eventuallyOK(t, c, cfg)
	resp, err := c.Get(cfg.Host + "/api/v1/namespaces?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		ended <- err
	}()
	if err := chain.Reset(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Error("the watch stream ended cleanly: want it broken by the reset")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch stream lived through the reset")
	}
	if err := chain.EndReset(); err != nil {
		t.Fatal(err)
	}
	eventuallyOK(t, c, cfg)
}
