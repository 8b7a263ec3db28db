package sources

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

const triggerToken = "s3cret-token"

// post builds a trigger request; an empty token sends no Authorization header.
func triggerRequest(path, token, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// received drains what the channel holds, as "namespace/name".
func drainEvents(ch <-chan event.GenericEvent) []string {
	var got []string
	for {
		select {
		case e := <-ch:
			got = append(got, e.Object.GetNamespace()+"/"+e.Object.GetName())
		default:
			return got
		}
	}
}

func TestHTTPTriggerStatusCodes(t *testing.T) {
	valid := `{"namespace": "team-a", "name": "web"}`
	for _, tc := range []struct {
		name       string
		request    func() *http.Request
		buffer     int // of the myapp consumer
		wantStatus int
		wantEvents []string
		wantHeader map[string]string
		rejected   string // the controller label counted as rejected, "-" for none
	}{
		{name: "one object", request: func() *http.Request { return triggerRequest("/trigger/myapp", triggerToken, valid) },
			wantStatus: http.StatusAccepted, wantEvents: []string{"team-a/web"}, rejected: "-"},
		{name: "a list", request: func() *http.Request {
			return triggerRequest("/trigger/myapp", triggerToken, `[{"namespace": "a", "name": "x"}, {"name": "y.z", "namespace": "b"}]`)
		}, wantStatus: http.StatusAccepted, wantEvents: []string{"a/x", "b/y.z"}, rejected: "-"},
		{name: "content type with charset", request: func() *http.Request {
			r := triggerRequest("/trigger/myapp", triggerToken, valid)
			r.Header.Set("Content-Type", "application/json; charset=utf-8")
			return r
		}, wantStatus: http.StatusAccepted, wantEvents: []string{"team-a/web"}, rejected: "-"},
		{name: "no token", request: func() *http.Request { return triggerRequest("/trigger/myapp", "", valid) },
			wantStatus: http.StatusUnauthorized, wantHeader: map[string]string{"WWW-Authenticate": `Bearer realm="switchboard-trigger"`}, rejected: "myapp"},
		{name: "wrong token", request: func() *http.Request { return triggerRequest("/trigger/myapp", "s3cret-token2", valid) },
			wantStatus: http.StatusUnauthorized, rejected: "myapp"},
		{name: "token as basic auth", request: func() *http.Request {
			r := triggerRequest("/trigger/myapp", "", valid)
			r.SetBasicAuth("user", triggerToken)
			return r
		}, wantStatus: http.StatusUnauthorized, rejected: "myapp"},
		{name: "wrong method", request: func() *http.Request {
			r := triggerRequest("/trigger/myapp", triggerToken, valid)
			r.Method = http.MethodGet
			return r
		}, wantStatus: http.StatusMethodNotAllowed, wantHeader: map[string]string{"Allow": "POST"}, rejected: "myapp"},
		{name: "unknown controller", request: func() *http.Request { return triggerRequest("/trigger/nosuch", triggerToken, valid) },
			wantStatus: http.StatusNotFound, rejected: ""},
		{name: "unknown controller without token", request: func() *http.Request { return triggerRequest("/trigger/nosuch", "", valid) },
			wantStatus: http.StatusUnauthorized, rejected: ""},
		{name: "other path", request: func() *http.Request { return triggerRequest("/trigger/myapp/extra", triggerToken, valid) },
			wantStatus: http.StatusNotFound, rejected: ""},
		{name: "not JSON content type", request: func() *http.Request {
			r := triggerRequest("/trigger/myapp", triggerToken, valid)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, wantStatus: http.StatusUnsupportedMediaType, rejected: "myapp"},
		{name: "bad JSON", request: func() *http.Request {
			return triggerRequest("/trigger/myapp", triggerToken, `{"namespace": "a", "name": `)
		},
			wantStatus: http.StatusBadRequest, rejected: "myapp"},
		{name: "unknown field", request: func() *http.Request {
			return triggerRequest("/trigger/myapp", triggerToken, `{"namespace": "a", "name": "b", "kind": "Deployment"}`)
		}, wantStatus: http.StatusBadRequest, rejected: "myapp"},
		{name: "wrongly cased field", request: func() *http.Request {
			return triggerRequest("/trigger/myapp", triggerToken, `{"namespace": "a", "Name": "b"}`)
		},
			wantStatus: http.StatusBadRequest, rejected: "myapp"},
		{name: "malformed name", request: func() *http.Request {
			return triggerRequest("/trigger/myapp", triggerToken, `{"namespace": "a", "name": "Web_1"}`)
		},
			wantStatus: http.StatusBadRequest, rejected: "myapp"},
		{name: "oversize body", request: func() *http.Request {
			names := strings.Repeat(`{"namespace": "a", "name": "b"},`, HTTPTriggerMaxBodyBytes/30)
			return triggerRequest("/trigger/myapp", triggerToken, "["+names+`{"namespace": "a", "name": "b"}]`)
		}, wantStatus: http.StatusRequestEntityTooLarge, rejected: "myapp"},
		{name: "full buffer", buffer: 2, request: func() *http.Request {
			return triggerRequest("/trigger/myapp", triggerToken, `[{"namespace": "a", "name": "x"}, {"namespace": "a", "name": "y"}, {"namespace": "a", "name": "z"}]`)
		}, wantStatus: http.StatusTooManyRequests, wantEvents: []string{"a/x", "a/y"},
			wantHeader: map[string]string{"Retry-After": "1"}, rejected: "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buffer := tc.buffer
			if buffer == 0 {
				buffer = 16
			}
			r := newTestRegistry(t, buffer)
			ch := r.Subscribe(HTTPTrigger, "myapp")
			r.Subscribe(HTTPTrigger, "verticalscaler")
			rec := httptest.NewRecorder()
			HTTPTriggerServer{Token: []byte(triggerToken)}.Handler(r.Producer(HTTPTrigger)).ServeHTTP(rec, tc.request())

			if rec.Code != tc.wantStatus {
				t.Errorf("status = %d, want %d; body %s", rec.Code, tc.wantStatus, rec.Body)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", got)
			}
			var body struct {
				Error  *string
				Queued *int
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body is not JSON: %v: %s", err, rec.Body)
			}
			if tc.wantStatus == http.StatusAccepted {
				if body.Queued == nil || *body.Queued != len(tc.wantEvents) || body.Error != nil {
					t.Errorf("body = %s, want queued %d and no error", rec.Body, len(tc.wantEvents))
				}
			} else if body.Error == nil || *body.Error == "" {
				t.Errorf("body = %s, want an error message", rec.Body)
			}
			for k, v := range tc.wantHeader {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if diff := cmp.Diff(tc.wantEvents, drainEvents(ch)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			for _, label := range []string{"", "myapp"} {
				want := 0.0
				if label == tc.rejected {
					want = 1
				}
				if got := testutil.ToFloat64(r.events.WithLabelValues("http", label, ResultRejected)); got != want {
					t.Errorf("rejected{controller=%q} = %v, want %v", label, got, want)
				}
			}
		})
	}
}

func TestDecodeTargets(t *testing.T) {
	long := strings.Repeat("a", 254)
	for _, tc := range []struct {
		body    string
		want    []Target
		wantErr string
	}{
		{body: ` {"namespace":"a","name":"b"} `, want: []Target{{"a", "b"}}},
		{body: `[{"namespace":"a","name":"b.c-d"},{"namespace":"e","name":"f"}]`, want: []Target{{"a", "b.c-d"}, {"e", "f"}}},
		{body: ``, wantErr: "body must be a JSON object"},
		{body: `"a/b"`, wantErr: "body must be a JSON object"},
		{body: `null`, wantErr: "body must be a JSON object"},
		{body: `[]`, wantErr: "empty list"},
		{body: `[null]`, wantErr: "[0].namespace: required"},
		{body: `{"namespace":"a","name":"b"}{}`, wantErr: "malformed JSON"},
		{body: `{"namespace":"a","name":"b","name":"c"}`, wantErr: `malformed request: duplicate field "name"`},
		{body: `{"namespace":"a","name":"b","x":1}`, wantErr: `malformed request: unknown field "x"`},
		{body: `{"namespace":"a","name":7}`, wantErr: "malformed JSON: name: wrong type number"},
		{body: `{"namespace":"a"}`, wantErr: "name: required"},
		{body: `{"namespace":"A","name":"b"}`, wantErr: "namespace: a lowercase RFC 1123 label"},
		{body: `{"namespace":"a.b","name":"b"}`, wantErr: "namespace: must not contain dots"},
		{body: `[{"namespace":"a","name":"b"},{"namespace":"a","name":"` + long + `"}]`, wantErr: "[1].name: must be no more than 253 characters"},
		{body: `{"namespace":"a","` + strings.Repeat("x", 1000) + `":1}`, wantErr: "..."},
	} {
		t.Run(tc.body[:min(len(tc.body), 40)], func(t *testing.T) {
			got, err := DecodeTargets([]byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				if len(err.Error()) > maxErrorLen+100 {
					t.Errorf("error is %d bytes long", len(err.Error()))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	good, empty := filepath.Join(dir, "token"), filepath.Join(dir, "empty")
	if err := os.WriteFile(good, []byte("  abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTokenFile(good); err != nil || string(got) != "abc" {
		t.Errorf("ReadTokenFile = %q, %v; want abc", got, err)
	}
	if _, err := ReadTokenFile(empty); err == nil {
		t.Error("an empty token file was accepted")
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing token file was accepted")
	}
}

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
	logger := funcr.New(func(prefix, args string) {
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
