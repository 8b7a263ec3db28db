package faultproxy

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// FakeAPIServer answers as kube-apiserver would, enough for the tests of a proxy in front of
// it: a Lease write is echoed with resourceVersion 42, a watch streams a bookmark every 10 ms
// until the client goes, anything else is an object of resourceVersion 7. It refuses requests
// without the token of Config's user, and counts what it got.
type FakeAPIServer struct {
	*httptest.Server
	// Requests counts every request, WatchesEnded the watch streams that ended, Unauthorized
	// the requests refused for their credentials.
	Requests, WatchesEnded, Unauthorized atomic.Int64
}

// fakeToken is the bearer token of the FakeAPIServer's one user.
const fakeToken = "upstream-token"

// StartFakeAPIServer starts a FakeAPIServer over HTTPS and HTTP/2 on a loopback port; Close
// stops it.
func StartFakeAPIServer() *FakeAPIServer {
	f := &FakeAPIServer{}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.EnableHTTP2 = true
	f.StartTLS()
	return f
}

// Config is the REST config of the fake's user.
func (f *FakeAPIServer) Config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Certificate().Raw})
	return &rest.Config{Host: f.URL, BearerToken: fakeToken, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

func (f *FakeAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	f.Requests.Add(1)
	if r.Header.Get("Authorization") != "Bearer "+fakeToken {
		f.Unauthorized.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	req := ParseRequest(r)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case req.Watch():
		defer f.WatchesEnded.Add(1)
		for {
			if _, err := fmt.Fprintln(w, `{"type":"BOOKMARK"}`); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	case req.Resource == "leases" && req.Write():
		var lease map[string]any
		_ = json.NewDecoder(r.Body).Decode(&lease)
		lease["kind"], lease["apiVersion"] = "Lease", "coordination.k8s.io/v1"
		lease["metadata"] = map[string]any{"name": req.Name, "resourceVersion": "42"}
		_ = json.NewEncoder(w).Encode(lease)
	default:
		_, _ = io.WriteString(w, `{"metadata":{"resourceVersion":"7"}}`)
	}
}
