package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Options configure a Proxy.
type Options struct {
	// Name names the client in the records: a replica, one process of it.
	Name string
	// Upstream connects to the API server, as the user the proxy acts for.
	Upstream *rest.Config
	// Seed seeds the random draws of the faults, so that a run can be repeated.
	Seed uint64
}

// Proxy is a running fault-injecting proxy for one client.
type Proxy struct {
	name     string
	server   *httptest.Server
	reverse  *httputil.ReverseProxy
	upstream *url.URL
	faults   atomic.Pointer[Faults]

	mu     sync.Mutex
	random *rand.Rand
	writes []Write

	counts counters
}

// counters are what Stats reports, kept as they happen.
type counters struct {
	requests, writes, delayed, abandoned    atomic.Int64
	delay                                   atomic.Int64 // nanoseconds
	tooMany, internal, unavailable, refused atomic.Int64
	watches, openWatches, watchesCut        atomic.Int64
}

// Stats counts what a proxy saw and did.
type Stats struct {
	// Requests is every request received, Writes those of them that write.
	Requests, Writes int64
	// Delayed is the requests given a latency, and Delay the latency added up; Abandoned the
	// requests whose client gave up during their latency, which the API server never saw.
	Delayed, Abandoned int64
	Delay              time.Duration
	// TooManyRequests, InternalErrors and Unavailable are the 429, 500 and 503 answers the proxy
	// gave instead of forwarding.
	TooManyRequests, InternalErrors, Unavailable int64
	// Watches is the watch streams opened, OpenWatches those open now, WatchesCut those the
	// proxy ended.
	Watches, OpenWatches, WatchesCut int64
	// Unreachable is the requests the API server did not answer (502 from the proxy).
	Unreachable int64
}

// Injected is how many faults the proxy injected: answers it gave itself and watches it cut
// (latency not counted).
func (s Stats) Injected() int64 {
	return s.TooManyRequests + s.InternalErrors + s.Unavailable + s.WatchesCut
}

// Plus adds the counts of o to s: the counts of several proxies.
func (s Stats) Plus(o Stats) Stats {
	return Stats{
		Requests: s.Requests + o.Requests, Writes: s.Writes + o.Writes,
		Delayed: s.Delayed + o.Delayed, Abandoned: s.Abandoned + o.Abandoned, Delay: s.Delay + o.Delay,
		TooManyRequests: s.TooManyRequests + o.TooManyRequests, InternalErrors: s.InternalErrors + o.InternalErrors, Unavailable: s.Unavailable + o.Unavailable,
		Watches: s.Watches + o.Watches, OpenWatches: s.OpenWatches + o.OpenWatches, WatchesCut: s.WatchesCut + o.WatchesCut,
		Unreachable: s.Unreachable + o.Unreachable,
	}
}

// Write is one write the proxy forwarded to the API server.
type Write struct {
	// Client is the proxy's Options.Name.
	Client string
	Request
	// Sent is when the proxy sent the request to the API server, Answered when the answer's
	// headers came back (zero when none came).
	Sent, Answered time.Time
	// Code is the API server's answer, 0 when none came.
	Code int
	// ResourceVersion is the answer's metadata.resourceVersion, when it carries an object.
	ResourceVersion string
	// Holder is, for a Lease, the answer's spec.holderIdentity.
	Holder string
}

// Succeeded says whether the API server accepted the write.
func (w Write) Succeeded() bool { return w.Code >= 200 && w.Code < 300 }

// requestKey carries a request's Request from the handler to the transport.
type requestKey struct{}

// errWatchCut is the cause of a watch's context ending at its cut.
var errWatchCut = errors.New("watch cut by the fault proxy")

// maxAnswerRead bounds how much of a write's answer is read for its resourceVersion.
const maxAnswerRead = 1 << 20

// Start starts a proxy on a free loopback port. It forwards nothing abnormal until SetFaults.
func Start(o Options) (*Proxy, error) {
	if o.Upstream == nil {
		return nil, errors.New("faultproxy: no upstream REST config")
	}
	transport, err := rest.TransportFor(o.Upstream)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: the upstream transport: %w", err)
	}
	upstream, err := url.Parse(o.Upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: the upstream host %q: %w", o.Upstream.Host, err)
	}
	p := &Proxy{name: o.Name, upstream: upstream, random: rand.New(rand.NewPCG(o.Seed, 0x5eed))}
	p.faults.Store(&Faults{})
	discard := log.New(io.Discard, "", 0)
	p.reverse = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(p.upstream)
			// The proxy speaks for its upstream user, whatever the client sent.
			pr.Out.Header.Del("Authorization")
		},
		Transport: recorder{proxy: p, next: transport},
		// Watches stream: pass every byte on at once.
		FlushInterval: -1,
		ErrorLog:      discard,
		ErrorHandler:  p.unreachable,
	}
	p.server = httptest.NewUnstartedServer(p)
	p.server.EnableHTTP2 = true
	// Resets and cut connections are the point: the server's complaints about them are noise.
	p.server.Config.ErrorLog = discard
	p.server.StartTLS()
	return p, nil
}

// Close stops the proxy and ends every stream through it.
func (p *Proxy) Close() {
	p.server.CloseClientConnections()
	p.server.Close()
}

// Name is the client's name in the records.
func (p *Proxy) Name() string { return p.name }

// Address is where the proxy listens, host:port.
func (p *Proxy) Address() string { return p.server.Listener.Addr().String() }

// ClientConfig is a REST config that connects to the proxy at address (the proxy's own, or
// that of something in front of it, such as a TCP proxy): its CA, no credentials.
func (p *Proxy) ClientConfig(address string) *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.server.Certificate().Raw})
	return &rest.Config{Host: "https://" + address, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// SetFaults replaces what the proxy injects from now on.
func (p *Proxy) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	p.faults.Store(&f)
	return nil
}

// Writes returns the writes forwarded so far, in the order they were answered.
func (p *Proxy) Writes() []Write {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Write(nil), p.writes...)
}

// Stats returns what the proxy counted so far.
func (p *Proxy) Stats() Stats {
	c := &p.counts
	return Stats{
		Requests: c.requests.Load(), Writes: c.writes.Load(),
		Delayed: c.delayed.Load(), Abandoned: c.abandoned.Load(), Delay: time.Duration(c.delay.Load()),
		TooManyRequests: c.tooMany.Load(), InternalErrors: c.internal.Load(), Unavailable: c.unavailable.Load(),
		Watches: c.watches.Load(), OpenWatches: c.openWatches.Load(), WatchesCut: c.watchesCut.Load(),
		Unreachable: c.refused.Load(),
	}
}

// draws are the random draws for one request.
type draws struct {
	delay, watchCut time.Duration
	answer          int
}

func (p *Proxy) draw(f *Faults) draws {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d draws
	if f.Latency != nil {
		d.delay = f.Latency.Sample(p.random)
	}
	d.answer = f.answer(p.random)
	d.watchCut = f.watchCut(p.random)
	return d
}

// ServeHTTP delays, answers or forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := ParseRequest(r)
	p.counts.requests.Add(1)
	if req.Write() {
		p.counts.writes.Add(1)
	}
	f := p.faults.Load()
	d := p.draw(f)
	if d.delay > 0 {
		timer := time.NewTimer(d.delay)
		select {
		case <-timer.C:
			p.counts.delayed.Add(1)
			p.counts.delay.Add(int64(d.delay))
		case <-r.Context().Done():
			timer.Stop()
			p.counts.abandoned.Add(1)
			return
		}
	}
	if d.answer != 0 {
		p.answer(w, d.answer, f.retryAfterSeconds())
		return
	}
	ctx := context.WithValue(r.Context(), requestKey{}, req)
	if req.Watch() {
		p.counts.watches.Add(1)
		p.counts.openWatches.Add(1)
		defer p.counts.openWatches.Add(-1)
		if d.watchCut > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeoutCause(ctx, d.watchCut, errWatchCut)
			defer cancel()
			// Runs also when the reverse proxy aborts the stream with http.ErrAbortHandler.
			defer func() {
				if errors.Is(context.Cause(ctx), errWatchCut) {
					p.counts.watchesCut.Add(1)
				}
			}()
		}
	}
	p.reverse.ServeHTTP(w, r.WithContext(ctx))
}

// answer answers a request with code, as kube-apiserver would: a Status, and a Retry-After on
// a 429.
func (p *Proxy) answer(w http.ResponseWriter, code, retryAfter int) {
	status := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code)}
	switch code {
	case http.StatusTooManyRequests:
		p.counts.tooMany.Add(1)
		status.Reason, status.Message = metav1.StatusReasonTooManyRequests, "Too many requests, please try again later."
		status.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(retryAfter)}
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	case http.StatusInternalServerError:
		p.counts.internal.Add(1)
		status.Reason, status.Message = metav1.StatusReasonInternalError, "Internal error injected by the fault proxy"
	default:
		p.counts.unavailable.Add(1)
		status.Reason, status.Message = metav1.StatusReasonServiceUnavailable, "The server is currently unable to handle the request (injected by the fault proxy)"
	}
	body, _ := json.Marshal(status) // a Status always encodes
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// unreachable is the reverse proxy's answer when the API server did not answer.
func (p *Proxy) unreachable(w http.ResponseWriter, r *http.Request, _ error) {
	if r.Context().Err() != nil {
		return // the client left, or the watch was cut: nobody to answer
	}
	p.counts.refused.Add(1)
	w.WriteHeader(http.StatusBadGateway)
}

// recorder is the upstream transport: it records every write it sends.
type recorder struct {
	proxy *Proxy
	next  http.RoundTripper
}

func (t recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	req, _ := r.Context().Value(requestKey{}).(Request)
	if !req.Write() {
		return t.next.RoundTrip(r)
	}
	w := Write{Client: t.proxy.name, Request: req, Sent: time.Now()}
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		t.proxy.record(w)
		return nil, err
	}
	w.Answered, w.Code = time.Now(), resp.StatusCode
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, maxAnswerRead))
	a := readAnswer(body, resp.Header.Get("Content-Encoding"))
	w.ResourceVersion, w.Holder = a.resourceVersion, a.holder
	if w.Name == "" && w.Verb == "create" {
		w.Name = a.name
	}
	t.proxy.record(w)
	if readErr != nil {
		_ = resp.Body.Close()
		return nil, readErr
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
	return resp, nil
}

func (p *Proxy) record(w Write) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes = append(p.writes, w)
}
