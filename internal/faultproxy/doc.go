// Package faultproxy is the test kit's hostile API server: an HTTPS reverse proxy (HTTP/2, as
// kube-apiserver serves) between one client, a manager replica, and the real API server, that
// answers some requests itself the way a loaded or upgrading API server does, and records every
// write it lets through.
//
// What it injects (Faults), drawn per request from a seeded random source:
//   - latency from a distribution (LogNormal: most requests quick, a long tail), added before a
//     request is forwarded; a client that gives up meanwhile (its context cancelled, a leader
//     that stopped) never reaches the API server, as a request queued by Priority and Fairness;
//   - 429 Too Many Requests with a Retry-After header, on a share of requests, as Priority and
//     Fairness sheds load (client-go waits and retries those itself);
//   - 500 and 503, on a share of requests, as an API server does during an upgrade or an etcd
//     hiccup (client-go does not retry those: the caller sees the error);
//   - watch streams cut after a random time of at most WatchCut, as an API server that drops
//     its watches (a restart, a load balancer's idle timeout).
//
// Faults below HTTP (connection resets, a network partition) are TCP faults: the chaos harness
// puts Shopify's toxiproxy in front of this proxy for those (test/reliability/faults), so that
// this package, which the root module's tests can use too, needs nothing beyond the standard
// library and client-go.
//
// The proxy authenticates to the API server as the user of its upstream REST config, whatever
// the client sends, so a client needs only the proxy's CA (ClientConfig, WriteKubeconfig).
//
// Records: every write forwarded to the API server (create, update, patch, apply, delete) is
// kept as a Write: which client, verb, resource, object and field manager, when it was sent and
// answered, the answer's code and resourceVersion, and for a Lease its holder. From the records
// of several proxies a test tells which replica wrote what while which one held a Lease, even
// across a partition: what the proxy forwarded is what reached the API server.
package faultproxy
