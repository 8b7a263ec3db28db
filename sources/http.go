package sources

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	kjson "sigs.k8s.io/json"
)

// HTTPTriggerMaxBodyBytes is the largest request body the HTTP trigger reads: room for about a
// thousand targets, and a bound on what one request can make the manager allocate.
const HTTPTriggerMaxBodyBytes = 64 << 10

// httpTriggerRetryAfter is the Retry-After of a 429, in seconds: a controller drains a full
// buffer in about that time when its reconciles are quick.
const httpTriggerRetryAfter = 1

// HTTPTriggerServer serves POST /trigger/{controller} and turns each named object of the JSON body,
// {"namespace": "...", "name": "..."} or a list of them, into an event for that controller.
//
// Callers authenticate with "Authorization: Bearer <token>", compared in constant time. The
// body is read up to HTTPTriggerMaxBodyBytes and decoded strictly: unknown, duplicate or
// wrongly-cased fields, trailing data, an empty list, and names or namespaces that are not
// valid Kubernetes names are refused. Every refusal is a 4xx with a JSON body {"error": "..."}
// and is counted as rejected. A request whose events were all queued gets 202 {"queued": n};
// when the controller's buffer is full it gets 429 with Retry-After and {"error", "queued"}:
// the events before the full one were queued, and sending the whole request again is harmless,
// because a reconcile is level-triggered and the work queue merges duplicates.
//
// Channel events bypass the controller's For predicates (controller-runtime applies no
// predicate to a raw source), so a trigger reconciles the named object even when its watch
// events would be filtered; each Reconcile checks by itself whether it has work to do.
//
// Like every producer, it runs only on the elected leader: a standby manager does not listen.
type HTTPTriggerServer struct {
	// BindAddress is where to listen, for example ":8082".
	BindAddress string
	// Token is the bearer token callers must present; never empty.
	Token []byte
	// Secure serves HTTPS; otherwise plain HTTP.
	Secure bool
	// CertDir holds tls.crt and tls.key, reloaded when they change (controller-runtime's
	// certwatcher). Empty, or without those files, the trigger serves a self-signed certificate
	// for localhost generated in memory at start, as the metrics endpoint does.
	CertDir string
}

// ReadTokenFile reads a bearer token from path, without surrounding white space.
func ReadTokenFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading trigger token: %w", err)
	}
	token := []byte(strings.TrimSpace(string(data)))
	if len(token) == 0 {
		return nil, fmt.Errorf("trigger token file %s is empty", path)
	}
	return token, nil
}

// Run serves until ctx ends, then shuts the server down.
func (h HTTPTriggerServer) Run(ctx context.Context, p *Producer) error {
	ln, err := h.listen(ctx)
	if err != nil {
		return err
	}
	return h.serve(ctx, ln, p)
}

// listen opens the listener, wrapped in TLS when Secure.
func (h HTTPTriggerServer) listen(ctx context.Context) (net.Listener, error) {
	if len(h.Token) == 0 {
		return nil, errors.New("HTTP trigger: no token")
	}
	var tlsConfig *tls.Config
	if h.Secure {
		var err error
		if tlsConfig, err = h.tlsConfig(ctx); err != nil {
			return nil, err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", h.BindAddress)
	if err != nil {
		return nil, fmt.Errorf("HTTP trigger: %w", err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	return ln, nil
}

// tlsConfig serves the certificate in CertDir, or a self-signed one. HTTP/1.1 only: the
// trigger has no use for HTTP/2 and so is not exposed to its rapid-reset class of attacks.
func (h HTTPTriggerServer) tlsConfig(ctx context.Context) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	certPath, keyPath := filepath.Join(h.CertDir, "tls.crt"), filepath.Join(h.CertDir, "tls.key")
	if h.CertDir != "" && fileExists(certPath) && fileExists(keyPath) {
		watcher, err := certwatcher.New(certPath, keyPath)
		if err != nil {
			return nil, fmt.Errorf("HTTP trigger certificate: %w", err)
		}
		go func() {
			if err := watcher.Start(ctx); err != nil {
				logf.FromContext(ctx).Error(err, "Watching the HTTP trigger certificate failed")
			}
		}()
		cfg.GetCertificate = watcher.GetCertificate
		return cfg, nil
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{{127, 0, 0, 1}}, nil)
	if err != nil {
		return nil, fmt.Errorf("generating the HTTP trigger's self-signed certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("loading the HTTP trigger's self-signed certificate: %w", err)
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// serve answers on ln until ctx ends.
func (h HTTPTriggerServer) serve(ctx context.Context, ln net.Listener, p *Producer) error {
	log := logf.FromContext(ctx).WithValues("source", string(p.Source()))
	srv := &http.Server{
		Handler:           h.Handler(p),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		// net/http writes what goes wrong with a connection (a failed TLS handshake, ...)
		// to the standard logger: send it through the manager's, so the logs stay JSON.
		ErrorLog: stdlog.New(serverErrors{log}, "", 0),
	}
	stopped := make(chan error, 1)
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		stopped <- srv.Shutdown(shutdownCtx)
	}()
	log.Info("Serving HTTP trigger", "address", ln.Addr().String(), "secure", h.Secure)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("HTTP trigger: %w", err)
	}
	return <-stopped
}

// serverErrors writes each line net/http logs as a debug line of the manager's logger: they
// are about callers (a client that gave up during the TLS handshake), not the manager.
type serverErrors struct{ log logr.Logger }

func (w serverErrors) Write(p []byte) (int, error) {
	w.log.V(1).Info("HTTP trigger connection error", "error", strings.TrimSpace(string(p)))
	return len(p), nil
}

// Handler returns the trigger's HTTP handler, which sends through p.
func (h HTTPTriggerServer) Handler(p *Producer) http.Handler {
	want := sha256.Sum256(h.Token)
	mux := http.NewServeMux()
	mux.HandleFunc("/trigger/{controller}", func(w http.ResponseWriter, r *http.Request) {
		controller := r.PathValue("controller")
		// User input never becomes a metric label: an unknown name is counted as "".
		label := ""
		if slices.Contains(p.Consumers(), controller) {
			label = controller
		}
		status, body := h.trigger(w, r, p, want, controller, label)
		if status != http.StatusAccepted && status != http.StatusTooManyRequests {
			p.Reject(label)
		}
		writeJSON(w, status, body)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		p.Reject("")
		writeJSON(w, http.StatusNotFound, errorBody{Error: "not found: POST /trigger/{controller}"})
	})
	return mux
}

// trigger checks the request and queues its events; it returns the status and body to answer.
func (h HTTPTriggerServer) trigger(w http.ResponseWriter, r *http.Request, p *Producer, token [sha256.Size]byte, controller, label string) (int, any) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return http.StatusMethodNotAllowed, errorBody{Error: "method not allowed: use POST"}
	}
	if !authorized(r, token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard-trigger"`)
		return http.StatusUnauthorized, errorBody{Error: "missing or wrong bearer token"}
	}
	if label == "" {
		return http.StatusNotFound, errorBody{Error: fmt.Sprintf("unknown controller; known: %s", strings.Join(p.Consumers(), ", "))}
	}
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		return http.StatusUnsupportedMediaType, errorBody{Error: "Content-Type must be application/json"}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, HTTPTriggerMaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return http.StatusRequestEntityTooLarge, errorBody{Error: fmt.Sprintf("body larger than %d bytes", HTTPTriggerMaxBodyBytes)}
		}
		return http.StatusBadRequest, errorBody{Error: "reading body: " + err.Error()}
	}
	targets, err := DecodeTargets(data)
	if err != nil {
		return http.StatusBadRequest, errorBody{Error: err.Error()}
	}
	for i, target := range targets {
		key := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: target.Namespace, Name: target.Name}}
		if err := p.Send(controller, key); err != nil {
			if errors.Is(err, ErrBufferFull) {
				w.Header().Set("Retry-After", strconv.Itoa(httpTriggerRetryAfter))
				return http.StatusTooManyRequests, errorBody{Error: "controller's buffer is full; retry later", Queued: new(i)}
			}
			// The controller stopped consuming between the check and the send.
			return http.StatusNotFound, errorBody{Error: "unknown controller", Queued: new(i)}
		}
	}
	logf.FromContext(r.Context()).V(1).Info("Queued triggers", "controller", controller, "count", len(targets))
	return http.StatusAccepted, queuedBody{Queued: len(targets)}
}

// authorized compares the bearer token with the expected one in constant time; comparing
// digests keeps the token's length secret too.
func authorized(r *http.Request, want [sha256.Size]byte) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

type errorBody struct {
	Error  string `json:"error"`
	Queued *int   `json:"queued,omitempty"`
}

type queuedBody struct {
	Queued int `json:"queued"`
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// Target names one object to reconcile.
type Target struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// DecodeTargets decodes a trigger body: one Target object or a non-empty list of them. It is
// strict (unknown, duplicate and wrongly-cased fields are errors) and checks that every
// namespace is a DNS-1123 label and every name a DNS-1123 subdomain. Error messages are short:
// they quote at most maxErrorLen bytes of the request.
func DecodeTargets(data []byte) ([]Target, error) {
	var targets []Target
	var strictErrs []error
	var err error
	list := false
	switch firstByte(data) {
	case '{':
		var t Target
		strictErrs, err = kjson.UnmarshalStrict(data, &t)
		targets = []Target{t}
	case '[':
		list = true
		strictErrs, err = kjson.UnmarshalStrict(data, &targets)
	default:
		return nil, errors.New(`body must be a JSON object {"namespace": "...", "name": "..."} or a list of them`)
	}
	if err != nil {
		return nil, fmt.Errorf("malformed JSON: %s", truncate(jsonError(err).Error()))
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("malformed request: %s", truncate(strictErrs[0].Error()))
	}
	if len(targets) == 0 {
		return nil, errors.New("empty list: name at least one object")
	}
	for i, t := range targets {
		prefix := ""
		if list {
			prefix = fmt.Sprintf("[%d].", i)
		}
		if err := checkName(t.Namespace, validation.IsDNS1123Label); err != nil {
			return nil, fmt.Errorf("%snamespace: %w", prefix, err)
		}
		if err := checkName(t.Name, validation.IsDNS1123Subdomain); err != nil {
			return nil, fmt.Errorf("%sname: %w", prefix, err)
		}
	}
	return targets, nil
}

// checkName checks a required name with one of the validation functions, whose messages
// describe the rule without repeating the value.
func checkName(value string, valid func(string) []string) error {
	if value == "" {
		return errors.New("required")
	}
	if msgs := valid(value); len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// maxErrorLen bounds the part of an error message that may quote the request.
const maxErrorLen = 200

func truncate(s string) string {
	if len(s) <= maxErrorLen {
		return s
	}
	return s[:maxErrorLen] + "..."
}

// jsonError keeps the decoder's message but drops the Go type names some errors carry.
func jsonError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Errorf("%s: wrong type %s", typeErr.Field, typeErr.Value)
	}
	return err
}

// firstByte returns the first byte of data that is not JSON white space, or 0.
func firstByte(data []byte) byte {
	for _, b := range data {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b
	}
	return 0
}
