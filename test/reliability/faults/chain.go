// Package faults is the road from each manager replica to the API server in the reliability
// tests: toxiproxy (github.com/Shopify/toxiproxy/v2, as a library) for what breaks below HTTP
// (connection resets, a full partition of one replica), in front of the test kit's
// faultproxy for what an API server answers (latency, 429, 500 and 503, cut watches) and for
// the record of every write that reached it.
//
//	manager --TLS, HTTP/2--> toxiproxy (TCP) --> faultproxy (HTTP) --> kube-apiserver
//
// It is a package of the reliability module, not of the test kit, because toxiproxy and its
// dependencies are for tests only and the manager's go.mod should not carry them.
package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"k8s.io/client-go/rest"

	"github.com/example/switchboard/internal/faultproxy"
	"github.com/example/switchboard/internal/testenv"
)

// Toxiproxy is the toxiproxy server the chains of one test share (toxiproxy's proxies belong
// to one); its HTTP API is not started: the chains drive their proxies directly.
type Toxiproxy struct{ server *toxiproxy.ApiServer }

// NewToxiproxy returns a toxiproxy server that logs nothing.
func NewToxiproxy() *Toxiproxy {
	return &Toxiproxy{server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())}
}

// Chain is one client's road to the API server: a TCP proxy that resets connections and
// partitions on demand, in front of an HTTP fault proxy.
type Chain struct {
	// HTTP is the fault proxy behind the TCP proxy: its faults, records and counts.
	HTTP *faultproxy.Proxy
	tcp  *toxiproxy.Proxy

	mu          sync.Mutex
	partitioned bool
	resets      int
	partitions  int
}

// The names of the toxics a chain adds.
const (
	resetToxic    = "reset"
	partitionUp   = "partition-up"
	partitionDown = "partition-down"
	streamDown    = "downstream"
	streamUp      = "upstream"
)

// NewChain starts a chain for the client name (a replica's process) to the API server of
// upstream, authenticating there as upstream's user; seed seeds its HTTP faults.
func (tp *Toxiproxy) NewChain(name string, upstream *rest.Config, seed uint64) (*Chain, error) {
	http, err := faultproxy.Start(faultproxy.Options{Name: name, Upstream: upstream, Seed: seed})
	if err != nil {
		return nil, err
	}
	tcp := toxiproxy.NewProxy(tp.server, name, "127.0.0.1:0", http.Address())
	if err := tcp.Start(); err != nil {
		http.Close()
		return nil, fmt.Errorf("starting the TCP proxy of %s: %w", name, err)
	}
	return &Chain{HTTP: http, tcp: tcp}, nil
}

// Name is the client's name.
func (c *Chain) Name() string { return c.HTTP.Name() }

// ClientConfig connects to the API server through the chain, with no credentials of its own.
func (c *Chain) ClientConfig() *rest.Config { return c.HTTP.ClientConfig(c.tcp.Listen) }

// WriteKubeconfig writes a kubeconfig for the client at path, with namespace as its context's.
func (c *Chain) WriteKubeconfig(path, namespace string) error {
	return testenv.WriteKubeconfig(path, c.ClientConfig(), namespace)
}

// Reset breaks every connection of the client that carries data from now until EndReset:
// toxiproxy's reset_peer closes each at its next bytes from the API server's side (with a TCP
// RST for the connections opened meanwhile). Call EndReset a moment later, or the client
// cannot reconnect.
func (c *Chain) Reset() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resets++
	return c.add(resetToxic, "reset_peer", streamDown, `{"timeout": 0}`)
}

// EndReset lets the client's connections live again.
func (c *Chain) EndReset() error { return c.remove(resetToxic) }

// Partition cuts the client off: toxiproxy's timeout toxic, with no timeout, drops every byte
// either way until Heal, on the open connections and the new ones alike, so that requests hang
// as in a network partition (connections are accepted, nothing comes back).
func (c *Chain) Partition() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.partitioned {
		return nil
	}
	if err := c.add(partitionUp, "timeout", streamUp, `{"timeout": 0}`); err != nil {
		return err
	}
	if err := c.add(partitionDown, "timeout", streamDown, `{"timeout": 0}`); err != nil {
		return err
	}
	c.partitioned = true
	c.partitions++
	return nil
}

// Heal ends a partition. The connections that lived through it are closed (their bytes were
// lost), and the client reconnects.
func (c *Chain) Heal() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.partitioned {
		return nil
	}
	c.partitioned = false
	return errors.Join(c.remove(partitionUp), c.remove(partitionDown))
}

// Partitioned says whether the client is cut off now.
func (c *Chain) Partitioned() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.partitioned
}

// TCPStats counts the TCP faults injected.
type TCPStats struct{ Resets, Partitions int }

// TCPStats returns what the chain injected below HTTP so far.
func (c *Chain) TCPStats() TCPStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return TCPStats{Resets: c.resets, Partitions: c.partitions}
}

// Close stops both proxies, closing every connection through them.
func (c *Chain) Close() {
	c.tcp.Stop()
	c.HTTP.Close()
}

func (c *Chain) add(name, kind, stream, attributes string) error {
	toxic := fmt.Sprintf(`{"name": %q, "type": %q, "stream": %q, "toxicity": 1, "attributes": %s}`, name, kind, stream, attributes)
	if _, err := c.tcp.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
		return fmt.Errorf("adding toxic %s to %s: %w", name, c.Name(), err)
	}
	return nil
}

func (c *Chain) remove(name string) error {
	if err := c.tcp.Toxics.RemoveToxic(context.Background(), name); err != nil && !errors.Is(err, toxiproxy.ErrToxicNotFound) {
		return fmt.Errorf("removing toxic %s from %s: %w", name, c.Name(), err)
	}
	return nil
}
