package sources

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	certutil "k8s.io/client-go/util/cert"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// serveTrigger runs the trigger on a free loopback port until the test ends and returns its
// address.
func serveTrigger(t *testing.T, h HTTPTriggerServer, p *Producer) string {
	t.Helper()
	h.BindAddress = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := h.listen(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.serve(ctx, ln, p) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v after its context ended", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not return after its context ended")
		}
	})
	return ln.Addr().String()
}

func triggerPost(t *testing.T, client *http.Client, url string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(`{"namespace":"a","name":"b"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+triggerToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func TestHTTPTriggerServes(t *testing.T) {
	certDir := t.TempDir()
	cert, key, err := certutil.GenerateSelfSignedCertKey("trigger.example", []net.IP{{127, 0, 0, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.crt"), cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	trusted := x509.NewCertPool()
	if !trusted.AppendCertsFromPEM(cert) {
		t.Fatal("bad test certificate")
	}
	for _, tc := range []struct {
		name   string
		server HTTPTriggerServer
		scheme string
		client *http.Client
	}{
		{"plain HTTP", HTTPTriggerServer{Token: []byte(triggerToken)}, "http", http.DefaultClient},
		{"self-signed certificate", HTTPTriggerServer{Token: []byte(triggerToken), Secure: true}, "https",
			&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}},
		{"certificate from CertDir", HTTPTriggerServer{Token: []byte(triggerToken), Secure: true, CertDir: certDir}, "https",
			&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: trusted}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRegistry(t, 4)
			ch := r.Subscribe(HTTPTrigger, "myapp")
			addr := serveTrigger(t, tc.server, r.Producer(HTTPTrigger))
			if got := triggerPost(t, tc.client, fmt.Sprintf("%s://%s/trigger/myapp", tc.scheme, addr)); got != http.StatusAccepted {
				t.Errorf("status = %d, want 202", got)
			}
			if diff := cmp.Diff([]string{"a/b"}, drainEvents(ch)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHTTPTriggerWithoutTokenDoesNotListen(t *testing.T) {
	_, err := HTTPTriggerServer{BindAddress: "127.0.0.1:0", Secure: true}.listen(context.Background())
	if err == nil {
		t.Error("listened without a token")
	}
}

// TestHTTPTriggerConnectionErrorsGoToTheLogger: what net/http reports about a connection (here
// plain HTTP sent to the TLS port) goes through the manager's logger, not to the standard
// logger, whose lines would break the manager's JSON logs.
func TestHTTPTriggerConnectionErrorsGoToTheLogger(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	var std bytes.Buffer
	stdlog.SetOutput(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return std.Write(p)
	}))
	t.Cleanup(func() { stdlog.SetOutput(os.Stderr) })
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, args)
	}, funcr.Options{Verbosity: 1})

	h := HTTPTriggerServer{BindAddress: "127.0.0.1:0", Token: []byte(triggerToken), Secure: true}
	ctx, cancel := context.WithCancel(logf.IntoContext(context.Background(), logger))
	defer cancel()
	ln, err := h.listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = h.serve(ctx, ln, newTestRegistry(t, 1).Producer(HTTPTrigger)) }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	_, _ = io.Copy(io.Discard, conn) // until the server closes the connection
	conn.Close()

	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		found := slices.ContainsFunc(logged, func(l string) bool { return strings.Contains(l, "TLS handshake error") })
		mu.Unlock()
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no TLS handshake error logged through the logger; logged %q", logged)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if std.Len() > 0 {
		t.Errorf("written to the standard logger: %q", std.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
