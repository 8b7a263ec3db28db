package sources

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

const triggerToken = "s3cret-token"

// triggerRequest builds a trigger request; an empty token sends no Authorization header.
func triggerRequest(path, token, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// drainEvents drains what the channel holds, as "namespace/name".
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

// TestHTTPTriggerStandby: with a Lease per controller the trigger runs on every replica, and a
// replica that does not lead a controller answers 503 with Retry-After and the leader's name,
// queues nothing and counts the request as standby; what it leads it queues as usual.
func TestHTTPTriggerStandby(t *testing.T) {
	valid := `{"namespace": "team-a", "name": "web"}`
	r := newTestRegistry(t, 16)
	myapp := r.Subscribe(HTTPTrigger, "myapp")
	vs := r.Subscribe(HTTPTrigger, "verticalscaler")
	standby := func(controller string) (string, bool) {
		if controller == "myapp" {
			return "replica-b_1234", true
		}
		return "", false
	}
	h := HTTPTriggerServer{Token: []byte(triggerToken), Standby: standby}.Handler(r.Producer(HTTPTrigger))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, triggerRequest("/trigger/myapp", triggerToken, valid))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("status = %d, want 503; body %s", rec.Code, rec.Body)
	}
	if got := rec.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	var body struct{ Error, Leader string }
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, rec.Body)
	}
	if body.Leader != "replica-b_1234" || !strings.Contains(body.Error, "does not lead controller myapp") {
		t.Errorf("body = %s, want the leader and why", rec.Body)
	}
	if got := drainEvents(myapp); len(got) != 0 {
		t.Errorf("a standby queued %v", got)
	}
	if got := testutil.ToFloat64(r.events.WithLabelValues("http", "myapp", ResultStandby)); got != 1 {
		t.Errorf("standby{controller=myapp} = %v, want 1", got)
	}

	// Authentication comes first: a standby tells nothing to a caller without the token.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, triggerRequest("/trigger/myapp", "", valid))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("without a token: status = %d, want 401", rec.Code)
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, triggerRequest("/trigger/verticalscaler", triggerToken, valid))
	if rec.Code != http.StatusAccepted {
		t.Errorf("led controller: status = %d, want 202; body %s", rec.Code, rec.Body)
	}
	if diff := cmp.Diff([]string{"team-a/web"}, drainEvents(vs)); diff != "" {
		t.Errorf("events of the led controller (-want +got):\n%s", diff)
	}
}
