package sources

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

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
		switch status {
		case http.StatusAccepted, http.StatusTooManyRequests:
		case http.StatusServiceUnavailable:
			p.count(label, ResultStandby)
		default:
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
	if h.Standby != nil {
		if leader, standby := h.Standby(controller); standby {
			w.Header().Set("Retry-After", strconv.Itoa(httpTriggerRetryAfter))
			msg := fmt.Sprintf("this replica does not lead controller %s; retry against another replica", controller)
			if leader != "" {
				msg = fmt.Sprintf("this replica does not lead controller %s; %s does: retry against it or another replica", controller, leader)
			}
			return http.StatusServiceUnavailable, errorBody{Error: msg, Leader: leader}
		}
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
	// Leader is the replica that leads the controller, on a standby's 503.
	Leader string `json:"leader,omitempty"`
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
